/* The binlog stream's frequent events, parsed in C (binlog/protocol/event_stream.py says why).
 *
 * parse(data, stream, table_map, fmt, wanted) gives what BinlogEventStream's Python parsers
 * give for a packet (an OK byte, then an event) of a MariaDB GTID, XID, table map or rows
 * event: the event, or the stream's `skipped` sentinel for one nobody asked for (`wanted`:
 * WANT_* bits). It gives None for a packet it leaves to them: any other event, a table map
 * the library reads (a new table id), a rows event of a table with compressed columns, and
 * a packet shorter than its fields. It sets stream.log_pos as they do. The Python parsers
 * are the reference: the tests read the same binlog with both.
 *
 * With VERIFY in `wanted`, an event whose file's events end in a CRC32 (fmt.checksum; a
 * format description's own byte says for it) is checked first: a mismatch raises
 * ChecksumMismatch before anything is read of it (binlog_format.checksum_holds is the
 * reference).
 *
 * setup(header_type, rows_type, xid_type, gtid_type, skipped, kinds) hands it the classes
 * it makes and the rows events' kinds (insert, update, delete), once.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <zlib.h>

#define BODY 20 /* an OK byte and the event's 19-byte header */
#define XID 0x10
#define TABLE_MAP 0x13
#define MARIADB_GTID 0xA2
#define WANT_XID 1
#define WANT_GTID 2
#define WANT_INSERT 4
#define WANT_UPDATE 8
#define WANT_DELETE 16
#define VERIFY 32 /* the packet as read off the wire: its checksum is verified first */
#define FORMAT_DESCRIPTION 0x0F

static PyTypeObject *header_type, *rows_type, *xid_type, *gtid_type;
static PyObject *checksum_mismatch; /* ChecksumMismatch, a ValueError */
static PyObject *skipped, *kinds; /* kinds: (INSERT, UPDATE_AFTER, DELETE) */
static PyObject *empty_tuple;

static unsigned long long
little_endian(const unsigned char *p, int n)
{
    unsigned long long value = 0;
    for (int i = n - 1; i >= 0; i--)
        value = value << 8 | p[i];
    return value;
}

static PyObject *
tuple_of(PyTypeObject *type, Py_ssize_t n, PyObject **items) /* steals the items' references */
{
    PyObject *tuple = type->tp_alloc(type, n);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (tuple == NULL || items[i] == NULL) {
            for (Py_ssize_t j = i; j < n; j++)
                Py_XDECREF(items[j]);
            Py_XDECREF(tuple);
            return NULL;
        }
        PyTuple_SET_ITEM(tuple, i, items[i]);
    }
    return tuple;
}

/* An instance of one of the library's event classes, its __init__ not run (as the Python
 * parsers make them: ParsedXid and ParsedMariadbGtid set their attributes alone). */
static PyObject *
event_of(PyTypeObject *type, const char **names, PyObject **values, int n) /* steals the values */
{
    PyObject *event = NULL;
    for (int i = 0; i < n; i++)
        if (values[i] == NULL)
            goto done;
    event = type->tp_new(type, empty_tuple, NULL);
    for (int i = 0; event != NULL && i < n; i++)
        if (PyObject_SetAttrString(event, names[i], values[i]) < 0)
            Py_CLEAR(event);
done:
    for (int i = 0; i < n; i++)
        Py_XDECREF(values[i]);
    return event;
}

/* The packet's header as an EventHeader; its size the one in the file (fmt.sizes). */
static PyObject *
header_of(const unsigned char *p, PyObject *stream, PyObject *fmt)
{
    unsigned long long log_pos = little_endian(p + 14, 4);
    PyObject *position = PyLong_FromUnsignedLongLong(log_pos);
    if (position == NULL)
        return NULL;
    if (log_pos && PyObject_SetAttrString(stream, "log_pos", position) < 0)
        goto failed;
    PyObject *size = NULL;
    PyObject *sizes = PyObject_GetAttrString(fmt, "sizes");
    if (sizes == NULL)
        goto failed;
    if (PyDict_Check(sizes) && PyDict_GET_SIZE(sizes)) {
        size = PyDict_GetItemWithError(sizes, position);
        Py_XINCREF(size);
        if (size == NULL && PyErr_Occurred()) {
            Py_DECREF(sizes);
            goto failed;
        }
    }
    Py_DECREF(sizes);
    if (size == NULL)
        size = PyLong_FromUnsignedLongLong(little_endian(p + 10, 4));
    PyObject *items[4] = {
        PyLong_FromUnsignedLongLong(little_endian(p + 1, 4)),
        PyLong_FromUnsignedLongLong(little_endian(p + 6, 4)),
        size,
        position,
    };
    return tuple_of(header_type, 4, items);
failed:
    Py_DECREF(position);
    return NULL;
}

/* 1 if the attribute is true, 0 if not, -1 on error. */
static int
flag(PyObject *object, const char *name)
{
    PyObject *value = PyObject_GetAttrString(object, name);
    if (value == NULL)
        return -1;
    int truth = PyObject_IsTrue(value);
    Py_DECREF(value);
    return truth;
}

/* A packed integer at *at (the rows event's column count), moving *at past it; -1 where
   the body ends first or the first byte is no packed length. */
static int
packed_count(const unsigned char *p, Py_ssize_t n, Py_ssize_t *at, unsigned long long *count)
{
    int first = p[*at];
    if (first < 251) {
        *count = (unsigned long long)first;
        *at += 1;
        return 0;
    }
    if (first < 252 || first > 254)
        return -1;
    int width = first == 252 ? 2 : first == 253 ? 3 : 8;
    if (*at + 1 + width > n)
        return -1;
    *count = little_endian(p + *at + 1, width);
    *at += 1 + width;
    return 0;
}

/* The present-columns bitmaps of a rows event's images, each `width` bytes. */
static PyObject *
bitmaps(const unsigned char *p, Py_ssize_t images, Py_ssize_t width)
{
    PyObject *present = PyTuple_New(images);
    for (Py_ssize_t i = 0; present != NULL && i < images; i++) {
        PyObject *bitmap = PyBytes_FromStringAndSize((const char *)p + i * width, width);
        if (bitmap == NULL)
            Py_CLEAR(present);
        else
            PyTuple_SET_ITEM(present, i, bitmap);
    }
    return present;
}

/* A rows event (its header made already); None (new reference) where the Python parser is
 * left to it. */
static PyObject *
rows_event(const unsigned char *p, Py_ssize_t n, int type, PyObject *header, PyObject *table_map, PyObject *fmt)
{
    PyObject *table_id = PyLong_FromUnsignedLongLong(little_endian(p + BODY, 6));
    if (table_id == NULL)
        return NULL;
    PyObject *table = PyDict_GetItemWithError(table_map, table_id);
    if (table == NULL) {
        Py_DECREF(table_id);
        return PyErr_Occurred() ? NULL : Py_NewRef(skipped); /* its table map was filtered out */
    }
    PyObject *compressed = PyObject_GetAttrString(fmt, "compressed");
    int marked = compressed == NULL ? -1 : PyDict_Contains(compressed, table_id);
    Py_XDECREF(compressed);
    Py_DECREF(table_id);
    if (marked != 0)
        return marked < 0 ? NULL : Py_NewRef(Py_None); /* its columns are marked in Python */
    int version2 = type >= 0x1E, update = type == 0x18 || type == 0x1F;
    PyObject *post_header = PyObject_GetAttrString(fmt, "post_header");
    if (post_header == NULL)
        return NULL;
    Py_ssize_t post_length = version2 ? 10 : 8;
    if (PyBytes_Check(post_header) && PyBytes_GET_SIZE(post_header) >= type)
        post_length = (unsigned char)PyBytes_AS_STRING(post_header)[type - 1];
    Py_DECREF(post_header);
    Py_ssize_t at = BODY + post_length;
    if (version2) { /* extra data, its length counting its own two bytes */
        if (n < BODY + 10)
            return Py_NewRef(Py_None);
        at += (Py_ssize_t)little_endian(p + BODY + 8, 2) - 2;
    }
    if (at < BODY || at >= n)
        return Py_NewRef(Py_None);
    unsigned long long columns;
    if (packed_count(p, n, &at, &columns) < 0)
        return Py_NewRef(Py_None);
    int checksum = flag(fmt, "checksum");
    if (checksum < 0)
        return NULL;
    Py_ssize_t images = update ? 2 : 1, end = n - (checksum ? 4 : 0);
    if (columns > (unsigned long long)n * 8)
        return Py_NewRef(Py_None);
    Py_ssize_t width = (Py_ssize_t)((columns + 7) / 8);
    if (at + images * width > end)
        return Py_NewRef(Py_None);
    PyObject *present = bitmaps(p + at, images, width);
    at += images * width;
    PyObject *items[5] = {
        Py_NewRef(PyTuple_GET_ITEM(kinds, version2 ? type - 0x1E : type - 0x17)),
        Py_NewRef(table),
        PyBytes_FromStringAndSize((const char *)p + at, end - at),
        present,
        Py_NewRef(header),
    };
    return tuple_of(rows_type, 5, items);
}

/* An XID or a MariaDB GTID event, its header made already; `skipped` where not wanted. */
static PyObject *
transaction_event(const unsigned char *p, Py_ssize_t n, int type, PyObject *header, long wanted)
{
    int gtid = type == MARIADB_GTID;
    if (!(wanted & (gtid ? WANT_GTID : WANT_XID)))
        return Py_NewRef(skipped);
    if (n < BODY + (gtid ? 13 : 8))
        return Py_NewRef(Py_None);
    PyObject *timestamp = Py_NewRef(PyTuple_GET_ITEM(header, 0));
    if (!gtid) {
        const char *names[3] = {"packet", "timestamp", "xid"};
        PyObject *values[3] = {Py_NewRef(header), timestamp, PyLong_FromUnsignedLongLong(little_endian(p + BODY, 8))};
        return event_of(xid_type, names, values, 3);
    }
    const char *names[4] = {"packet", "timestamp", "gtid", "flags"};
    PyObject *values[4] = {
        Py_NewRef(header),
        timestamp,
        PyUnicode_FromFormat("%lu-%lu-%llu", (unsigned long)little_endian(p + BODY + 8, 4),
                             (unsigned long)little_endian(p + 6, 4), little_endian(p + BODY, 8)),
        PyLong_FromLong(p[BODY + 12]),
    };
    return event_of(gtid_type, names, values, 4);
}

/* The WANT_ bit of a rows event's kind. */
static long
rows_kind(int type)
{
    return (type == 0x17 || type == 0x1E) ? WANT_INSERT : (type == 0x18 || type == 0x1F) ? WANT_UPDATE : WANT_DELETE;
}

/* 1 if the event packet's checksum holds or it has none, 0 if not, -1 on an error. */
static int
checksum_holds(const unsigned char *p, Py_ssize_t n, PyObject *fmt)
{
    int checksum = p[5] == FORMAT_DESCRIPTION ? n >= BODY + 5 && p[n - 5] != 0 : flag(fmt, "checksum");
    if (checksum <= 0)
        return checksum < 0 ? -1 : 1;
    if (n < BODY + 4 || n - 5 > (Py_ssize_t)UINT_MAX)
        return 0;
    uLong crc = crc32(0L, p + 1, (uInt)(n - 5));
    return crc == (uLong)little_endian(p + n - 4, 4);
}

static PyObject *
parse(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5 || header_type == NULL) {
        PyErr_SetString(PyExc_TypeError, "parse(data, stream, table_map, fmt, wanted), after setup()");
        return NULL;
    }
    PyObject *data = args[0], *stream = args[1], *table_map = args[2], *fmt = args[3];
    long wanted = PyLong_AsLong(args[4]);
    if (wanted == -1 && PyErr_Occurred())
        return NULL;
    if (!PyBytes_Check(data) || !PyDict_Check(table_map))
        Py_RETURN_NONE;
    const unsigned char *p = (const unsigned char *)PyBytes_AS_STRING(data);
    Py_ssize_t n = PyBytes_GET_SIZE(data);
    if (n < BODY || p[0] != 0)
        Py_RETURN_NONE;
    if (wanted & VERIFY) {
        int holds = checksum_holds(p, n, fmt);
        if (holds <= 0) {
            if (holds == 0)
                PyErr_SetString(checksum_mismatch, "the event's CRC32 does not hold");
            return NULL;
        }
    }
    int type = p[5];
    int rows = (type >= 0x17 && type <= 0x19) || (type >= 0x1E && type <= 0x20);
    if (!rows && type != XID && type != MARIADB_GTID && type != TABLE_MAP)
        Py_RETURN_NONE;
    if ((rows || type == TABLE_MAP) && n < BODY + 6)
        Py_RETURN_NONE;
    if (type == TABLE_MAP) { /* a new table id's map is the library's to read */
        PyObject *table_id = PyLong_FromUnsignedLongLong(little_endian(p + BODY, 6));
        if (table_id == NULL)
            return NULL;
        int known = PyDict_Contains(table_map, table_id);
        Py_DECREF(table_id);
        if (known <= 0)
            return known < 0 ? NULL : Py_NewRef(Py_None);
    }
    PyObject *header = header_of(p, stream, fmt);
    if (header == NULL)
        return NULL;
    PyObject *event;
    if (type == TABLE_MAP) /* a table id mapped already (checked above): frozen, nothing new */
        event = Py_NewRef(skipped);
    else if (type == XID || type == MARIADB_GTID)
        event = transaction_event(p, n, type, header, wanted);
    else
        event = wanted & rows_kind(type) ? rows_event(p, n, type, header, table_map, fmt) : Py_NewRef(skipped);
    Py_DECREF(header);
    return event;
}

static PyObject *
setup(PyObject *module, PyObject *args)
{
    PyObject *types[4];
    PyObject *sentinel, *kind_tuple;
    if (!PyArg_ParseTuple(args, "O!O!O!O!OO!", &PyType_Type, &types[0], &PyType_Type, &types[1], &PyType_Type,
                          &types[2], &PyType_Type, &types[3], &sentinel, &PyTuple_Type, &kind_tuple))
        return NULL;
    if (PyTuple_GET_SIZE(kind_tuple) != 3 || !PyType_IsSubtype((PyTypeObject *)types[0], &PyTuple_Type) ||
        !PyType_IsSubtype((PyTypeObject *)types[1], &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "setup() takes two tuple types, two event classes, a sentinel, three kinds");
        return NULL;
    }
    PyObject **slots[6] = {(PyObject **)&header_type, (PyObject **)&rows_type, (PyObject **)&xid_type,
                           (PyObject **)&gtid_type, &skipped, &kinds};
    PyObject *values[6] = {types[0], types[1], types[2], types[3], sentinel, kind_tuple};
    for (int i = 0; i < 6; i++) {
        Py_XSETREF(*slots[i], Py_NewRef(values[i]));
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"parse", (PyCFunction)(void (*)(void))parse, METH_FASTCALL, "A frequent event's packet parsed, or None."},
    {"setup", setup, METH_VARARGS, "The classes parse makes, the skipped sentinel and the rows kinds."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_event_parse", NULL, -1, methods};

PyMODINIT_FUNC
PyInit__event_parse(void)
{
    empty_tuple = PyTuple_New(0);
    if (empty_tuple == NULL)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    checksum_mismatch = PyErr_NewException("sluice.binlog.protocol._event_parse.ChecksumMismatch", PyExc_ValueError,
                                           NULL);
    if (checksum_mismatch == NULL || PyModule_AddObjectRef(m, "ChecksumMismatch", checksum_mismatch) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    if (PyModule_AddIntConstant(m, "WANT_XID", WANT_XID) < 0 || PyModule_AddIntConstant(m, "WANT_GTID", WANT_GTID) < 0 ||
        PyModule_AddIntConstant(m, "WANT_INSERT", WANT_INSERT) < 0 ||
        PyModule_AddIntConstant(m, "WANT_UPDATE", WANT_UPDATE) < 0 ||
        PyModule_AddIntConstant(m, "WANT_DELETE", WANT_DELETE) < 0 || PyModule_AddIntConstant(m, "VERIFY", VERIFY) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
