/* The row image decoder's compiled loop (binlog/rows/row_image_decoder.py says why).
 *
 * A Program is one table map's column readers for a set of images (one per row, or an
 * update's before and after), as instructions: ("int", size, signed), ("decimal", precision,
 * scale, Decimal), ("text", prefix, encoding, errors), ... each with the slot of the row it
 * fills (-1: read past). Program.decode(body) gives every image in the body as a tuple, the
 * same values as the Python loop row_image_decoder compiles, which is the reference: the
 * tests compare the two on every column type a server writes. Instructions it has no C for
 * ("call", "prefixed") call the Python reader.
 */
#include "row_images.h"

#include <string.h>

static const struct { const char *name; enum op_code code; } OP_NAMES[] = {
    {"int", OP_INT}, {"float", OP_FLOAT}, {"double", OP_DOUBLE}, {"decimal", OP_DECIMAL},
    {"datetime2", OP_DATETIME2}, {"timestamp2", OP_TIMESTAMP2}, {"date", OP_DATE},
    {"text", OP_TEXT}, {"bytes", OP_BYTES}, {"prefixed", OP_PREFIXED}, {"call", OP_CALL},
};

typedef struct {
    PyObject_HEAD
    Py_ssize_t images_count;
    Image *images;
    Py_ssize_t slots;
} Program;

static int
parse_decimal(PyObject *instruction, Op *op)
{
    PyObject *ignored;
    if (!PyArg_ParseTuple(instruction, "OllO", &ignored, &op->a, &op->b, &op->object))
        return -1;
    long whole = op->a - op->b, scale = op->b;
    if (whole < 0 || scale < 0 || op->a < 1 || op->a > 65 || scale > 38) {
        PyErr_Format(PyExc_ValueError, "DECIMAL(%ld,%ld)", op->a, op->b);
        return -1;
    }
    int digits[10], n = 0;
    digits[n++] = (int)(whole % 9);
    for (long g = 0; g < whole / 9 + scale / 9; g++)
        digits[n++] = 9;
    digits[n++] = (int)(scale % 9);
    op->groups = 0;
    op->size = 0;
    for (int g = 0; g < n; g++)
        if (digits[g]) {
            op->group_digits[op->groups++] = digits[g];
            op->size += DECIMAL_GROUP_BYTES[digits[g]];
        }
    return 0;
}

/* The instruction's arguments, checked: what a corrupt table map could make them. */
static int
parse_arguments(PyObject *instruction, Op *op)
{
    PyObject *ignored;
    switch (op->code) {
    case OP_INT:
        if (!PyArg_ParseTuple(instruction, "Oll", &ignored, &op->a, &op->b))
            return -1;
        if (op->a < 1 || op->a > 8) {
            PyErr_Format(PyExc_ValueError, "an integer of %ld bytes", op->a);
            return -1;
        }
        return 0;
    case OP_DECIMAL:
        return parse_decimal(instruction, op);
    case OP_DATETIME2:
    case OP_TIMESTAMP2:
        if (!PyArg_ParseTuple(instruction, "OlO", &ignored, &op->a, &op->object))
            return -1;
        if (op->a < 0 || op->a > 6) {
            PyErr_Format(PyExc_ValueError, "fractional seconds precision %ld; MySQL writes at most 6", op->a);
            return -1;
        }
        return 0;
    case OP_DATE:
    case OP_CALL:
        return PyArg_ParseTuple(instruction, "OO", &ignored, &op->object) ? 0 : -1;
    case OP_TEXT:
        if (!PyArg_ParseTuple(instruction, "OlUU", &ignored, &op->a, &op->encoding_object, &op->errors_object))
            return -1;
        op->encoding = PyUnicode_AsUTF8(op->encoding_object);
        op->errors = PyUnicode_AsUTF8(op->errors_object);
        if (op->encoding == NULL || op->errors == NULL)
            return -1;
        op->utf8 = strcmp(op->encoding, "utf-8") == 0;
        return 0;
    case OP_BYTES:
        return PyArg_ParseTuple(instruction, "Ol", &ignored, &op->a) ? 0 : -1;
    case OP_PREFIXED:
        return PyArg_ParseTuple(instruction, "OlO", &ignored, &op->a, &op->object) ? 0 : -1;
    case OP_FLOAT:
    case OP_DOUBLE:
        return 0; /* they take none */
    }
    return 0;
}

static int
parse_op(PyObject *spec, Op *op)
{
    PyObject *instruction, *name;
    if (!PyArg_ParseTuple(spec, "OnU", &instruction, &op->slot, &op->column))
        return -1;
    if (!PyTuple_Check(instruction) || PyTuple_GET_SIZE(instruction) < 1 ||
        !PyUnicode_Check(name = PyTuple_GET_ITEM(instruction, 0))) {
        PyErr_SetString(PyExc_TypeError, "an instruction is a tuple that starts with its name");
        return -1;
    }
    const char *text = PyUnicode_AsUTF8(name);
    if (text == NULL)
        return -1;
    size_t known = sizeof(OP_NAMES) / sizeof(OP_NAMES[0]), i;
    for (i = 0; i < known && strcmp(OP_NAMES[i].name, text) != 0; i++)
        ;
    if (i == known) {
        PyErr_Format(PyExc_ValueError, "unknown row image instruction %R", instruction);
        return -1;
    }
    op->code = OP_NAMES[i].code;
    if (parse_arguments(instruction, op) < 0)
        return -1;
    if ((op->code == OP_TEXT || op->code == OP_BYTES || op->code == OP_PREFIXED) && (op->a < 1 || op->a > 4)) {
        PyErr_Format(PyExc_ValueError, "a length prefix of %ld bytes", op->a);
        return -1;
    }
    /* Only now the op holds its references: dealloc releases what a parsed op holds. */
    Py_XINCREF(op->object);
    Py_XINCREF(op->encoding_object);
    Py_XINCREF(op->errors_object);
    Py_INCREF(op->column);
    op->holds = 1;
    return 0;
}

static void
Program_dealloc(Program *self)
{
    for (Py_ssize_t i = 0; i < self->images_count; i++) {
        Image *image = &self->images[i];
        for (Py_ssize_t j = 0; image->ops != NULL && j < image->count; j++) {
            if (!image->ops[j].holds)
                continue;
            Py_XDECREF(image->ops[j].object);
            Py_XDECREF(image->ops[j].encoding_object);
            Py_XDECREF(image->ops[j].errors_object);
            Py_XDECREF(image->ops[j].column);
        }
        PyMem_Free(image->ops);
    }
    PyMem_Free(self->images);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Program(images, slots): `images` per image (one, or an update's two) a sequence of
 * (instruction, slot, column name) for its columns in table-map order; `slots` the length
 * of every row. */
static int
Program_init(Program *self, PyObject *args, PyObject *kwds)
{
    PyObject *images;
    if (self->images != NULL) {
        PyErr_SetString(PyExc_TypeError, "a Program is made once");
        return -1;
    }
    if (!PyArg_ParseTuple(args, "On", &images, &self->slots))
        return -1;
    PyObject *sequence = PySequence_Fast(images, "images: a sequence");
    if (sequence == NULL)
        return -1;
    self->images_count = PySequence_Fast_GET_SIZE(sequence);
    if (self->images_count < 1 || self->images_count > 2) {
        Py_DECREF(sequence);
        PyErr_Format(PyExc_ValueError, "a rows event has one or two images a row, not %zd", self->images_count);
        return -1;
    }
    self->images = PyMem_Calloc(self->images_count ? self->images_count : 1, sizeof(Image));
    if (self->images == NULL) {
        Py_DECREF(sequence);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < self->images_count; i++) {
        PyObject *columns = PySequence_Fast(PySequence_Fast_GET_ITEM(sequence, i), "an image: a sequence");
        if (columns == NULL)
            goto failed;
        Image *image = &self->images[i];
        image->count = PySequence_Fast_GET_SIZE(columns);
        image->null_bytes = (image->count + 7) / 8;
        image->ops = PyMem_Calloc(image->count ? image->count : 1, sizeof(Op));
        if (image->ops == NULL) {
            Py_DECREF(columns);
            PyErr_NoMemory();
            goto failed;
        }
        for (Py_ssize_t j = 0; j < image->count; j++) {
            Op *op = &image->ops[j];
            if (parse_op(PySequence_Fast_GET_ITEM(columns, j), op) < 0 || op->slot >= self->slots) {
                if (!PyErr_Occurred())
                    PyErr_Format(PyExc_ValueError, "slot %zd of a row of %zd", op->slot, self->slots);
                image->count = j + 1; /* what dealloc releases */
                Py_DECREF(columns);
                goto failed;
            }
        }
        Py_DECREF(columns);
    }
    Py_DECREF(sequence);
    return 0;
failed:
    Py_DECREF(sequence);
    return -1;
}

/* `value` in exactly `width` digits, zero-padded, at `out`; where they end. (sprintf's
 * format parsing cost more than the rest of a DECIMAL's decoding.) */

static const char READ_NOTHING[] = "a row image reads no byte of the body (its column bitmap selects no column)";

/* The error a column's value raised, as a ValueError naming the column (chained to it). */
static void
named_column(const Op *op)
{
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyErr_NormalizeException(&type, &value, &traceback);
    if (value == NULL) {
        PyErr_Format(PyExc_ValueError, "column %U: cannot be read", op->column);
        return;
    }
    if (traceback != NULL)
        PyException_SetTraceback(value, traceback);
    PyErr_Format(PyExc_ValueError, "column %U: %S", op->column, value);
    PyObject *named_type, *named, *named_traceback;
    PyErr_Fetch(&named_type, &named, &named_traceback);
    PyErr_NormalizeException(&named_type, &named, &named_traceback);
    PyException_SetCause(named, value); /* steals value */
    PyErr_Restore(named_type, named, named_traceback);
    Py_XDECREF(type);
    Py_XDECREF(traceback);
}

static void
untrack_if_acyclic(PyObject *tuple, Py_ssize_t from)
{
    for (Py_ssize_t i = from; i < PyTuple_GET_SIZE(tuple); i++) {
        PyObject *item = PyTuple_GET_ITEM(tuple, i);
        if (PyObject_IS_GC(item) && PyObject_GC_IsTracked(item))
            return;
    }
    PyObject_GC_UnTrack(tuple);
}

/* One image of a row (before or after): its values by slot, None where NULL or not read;
   NULL with *failing the column whose value could not be read (or NULL for the image). */
static PyObject *
decode_image(const Image *image, Py_ssize_t slots, PyObject *body, Py_ssize_t *pos, const Op **failing)
{
    const unsigned char *data = (const unsigned char *)PyBytes_AS_STRING(body);
    Py_ssize_t length = PyBytes_GET_SIZE(body);
    *failing = NULL;
    if (length - *pos < image->null_bytes)
        return image_truncated(*pos);
    const unsigned char *nulls = data + *pos;
    *pos += image->null_bytes;
    PyObject *row = PyTuple_New(slots);
    if (row == NULL)
        return NULL;
    for (Py_ssize_t s = 0; s < slots; s++) {
        Py_INCREF(Py_None);
        PyTuple_SET_ITEM(row, s, Py_None);
    }
    for (Py_ssize_t j = 0; j < image->count; j++) {
        const Op *op = *failing = &image->ops[j];
        if (nulls[j >> 3] >> (j & 7) & 1)
            continue;
        if (op->slot < 0) {
            int skipped = skip_row_value(op, length, pos, data);
            if (skipped < 0)
                goto failed;
            if (skipped == 0)
                continue;
        }
        PyObject *value = row_value(op, body, data, length, pos);
        if (value == NULL)
            goto failed;
        if (op->slot < 0) {
            Py_DECREF(value);
        } else {
            Py_DECREF(PyTuple_GET_ITEM(row, op->slot));
            PyTuple_SET_ITEM(row, op->slot, value);
        }
    }
    *failing = NULL;
    untrack_if_acyclic(row, 0);
    return row;
failed:
    Py_DECREF(row);
    return NULL;
}

static PyObject *
Program_decode(Program *self, PyObject *body)
{
    if (!PyBytes_Check(body)) {
        PyErr_SetString(PyExc_TypeError, "decode() takes the rows event body as bytes");
        return NULL;
    }
    Py_ssize_t length = PyBytes_GET_SIZE(body), pos = 0;
    const Op *failing = NULL;
    PyObject *rows = PyList_New(0);
    if (rows == NULL)
        return NULL;
    while (pos < length) {
        Py_ssize_t round = pos;
        for (Py_ssize_t i = 0; i < self->images_count; i++) {
            PyObject *row = decode_image(&self->images[i], self->slots, body, &pos, &failing);
            if (row == NULL) {
                if (failing != NULL)
                    named_column(failing);
                goto failed;
            }
            int appended = PyList_Append(rows, row);
            Py_DECREF(row);
            if (appended < 0)
                goto failed;
        }
        if (pos == round) { /* read on, it would fill memory with empty rows */
            PyErr_SetString(PyExc_ValueError, READ_NOTHING);
            goto failed;
        }
    }
    return rows;
failed:
    Py_DECREF(rows);
    return NULL;
}

/* A tuple of `type` (a NamedTuple: a tuple subclass) holding the given references. */
static PyObject *
named_tuple(PyTypeObject *type, Py_ssize_t n, PyObject **items)
{
    PyObject *tuple = type->tp_alloc(type, n);
    if (tuple == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_INCREF(items[i]);
        PyTuple_SET_ITEM(tuple, i, items[i]);
    }
    return tuple;
}

/* changelog(images, first, pairs, schema, kinds, timestamp, file, pos, row_type, offset_type):
 * a rows event's images as its changelog rows, made as the named tuples they are:
 * row_type(schema, kind, image, timestamp, offset_type(file, pos, index, "", 0)). With
 * `pairs` the images alternate before and after (an update), kinds[0] and kinds[1], and
 * index counts pairs. Rows before `first` were committed already. (Python builds the same
 * rows in event_reader.RowsEvent.changelog, a fifth of the committing side's time.) */
static PyObject *
changelog(PyObject *module, PyObject *args)
{
    PyObject *images, *schema, *kinds, *timestamp, *file, *pos;
    PyTypeObject *row_type, *offset_type;
    Py_ssize_t first;
    int pairs;
    if (!PyArg_ParseTuple(args, "O!npOO!OUOO!O!", &PyList_Type, &images, &first, &pairs, &schema, &PyTuple_Type,
                          &kinds, &timestamp, &file, &pos, &PyType_Type, &row_type, &PyType_Type, &offset_type))
        return NULL;
    if (PyTuple_GET_SIZE(kinds) != 2 || !PyType_IsSubtype(row_type, &PyTuple_Type) ||
        !PyType_IsSubtype(offset_type, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "changelog() takes two kinds and two tuple types");
        return NULL;
    }
    if (first < 0) {
        PyErr_Format(PyExc_ValueError, "changelog() of first row %zd", first);
        return NULL;
    }
    Py_ssize_t count = PyList_GET_SIZE(images), start = pairs ? 2 * first : first;
    PyObject *rows = PyList_New(count > start ? count - start : 0);
    PyObject *no_gtid = PyUnicode_FromStringAndSize("", 0), *no_transaction = PyLong_FromLong(0);
    PyObject *offset = NULL; /* an update's before and after share theirs */
    if (rows == NULL || no_gtid == NULL || no_transaction == NULL)
        goto failed;
    for (Py_ssize_t i = start; i < count; i++) {
        if (!pairs || !(i & 1)) {
            PyObject *index = PyLong_FromSsize_t(pairs ? i >> 1 : i);
            if (index == NULL)
                goto failed;
            PyObject *offset_items[5] = {file, pos, index, no_gtid, no_transaction};
            Py_XDECREF(offset);
            offset = named_tuple(offset_type, 5, offset_items);
            Py_DECREF(index);
            if (offset == NULL)
                goto failed;
            untrack_if_acyclic(offset, 0);
        }
        PyObject *kind = PyTuple_GET_ITEM(kinds, pairs ? (i & 1) : 0);
        PyObject *row_items[5] = {schema, kind, PyList_GET_ITEM(images, i), timestamp, offset};
        PyObject *row = named_tuple(row_type, 5, row_items);
        if (row == NULL)
            goto failed;
        untrack_if_acyclic(row, 2);
        PyList_SET_ITEM(rows, i - start, row);
    }
    Py_XDECREF(offset);
    Py_DECREF(no_gtid);
    Py_DECREF(no_transaction);
    return rows;
failed:
    Py_XDECREF(offset);
    Py_XDECREF(rows);
    Py_XDECREF(no_gtid);
    Py_XDECREF(no_transaction);
    return NULL;
}

static PyMethodDef module_methods[] = {
    {"changelog", changelog, METH_VARARGS, "A rows event's images as changelog rows."},
    {NULL, NULL, 0, NULL},
};

static PyMethodDef Program_methods[] = {
    {"decode", (PyCFunction)Program_decode, METH_O, "Every image in a rows event body, as tuples."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ProgramType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "sluice.binlog.rows._row_images.Program",
    .tp_basicsize = sizeof(Program),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One table map's column readers for a set of row images, compiled.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Program_init,
    .tp_dealloc = (destructor)Program_dealloc,
    .tp_methods = Program_methods,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_row_images", "Row images decoded in C.", -1, module_methods,
};

PyMODINIT_FUNC
PyInit__row_images(void)
{
    if (row_values_ready() < 0 || PyType_Ready(&ProgramType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&ProgramType);
    if (PyModule_AddObject(m, "Program", (PyObject *)&ProgramType) < 0) {
        Py_DECREF(&ProgramType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
