/* The change fold's and the kind count's compiled loops (event/change_fold.py says why).
 *
 * Both take a batch's changelog rows as the tuples they are (ChangeRow: schema, kind, row,
 * timestamp, offset) and compare schemas and kinds by identity, as the Python loops do.
 * event/change_fold.py's loops are the reference: the tests compare the two.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* The change at `i`, checked to be a tuple of at least three items. */
static PyObject *
change_at(PyObject *rows, Py_ssize_t i)
{
    PyObject *change = PyList_GET_ITEM(rows, i);
    if (!PyTuple_Check(change) || PyTuple_GET_SIZE(change) < 3) {
        PyErr_Format(PyExc_TypeError, "change %zd is not a changelog row", i);
        return NULL;
    }
    return change;
}

/* 1 if `text` holds a code point in [lo, hi], else 0. */
static int
holds_between(PyObject *text, Py_UCS4 lo, Py_UCS4 hi)
{
    Py_ssize_t length = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    for (Py_ssize_t i = 0; i < length; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c >= lo && c <= hi)
            return 1;
    }
    return 0;
}

/* change_fold.screened: 1 if the fit may change `row`, 0 if not, -1 on error. */
static int
screened(PyObject *row, PyObject *slots, int surrogates, PyObject *odd)
{
    Py_ssize_t width = PyTuple_GET_SIZE(row);
    for (Py_ssize_t s = 0; s < PyTuple_GET_SIZE(slots); s++) {
        Py_ssize_t i = PyLong_AsSsize_t(PyTuple_GET_ITEM(slots, s));
        if (i == -1 && PyErr_Occurred())
            return -1;
        if (i < 0 || i >= width) {
            PyErr_Format(PyExc_IndexError, "screen slot %zd is outside a row of %zd values", i, width);
            return -1;
        }
        PyObject *value = PyTuple_GET_ITEM(row, i);
        if ((PyObject *)Py_TYPE(value) == odd)
            return 1;
        if (!PyUnicode_CheckExact(value))
            continue;
        if (PyUnicode_IS_ASCII(value)) {
            if (memchr(PyUnicode_DATA(value), 0, PyUnicode_GET_LENGTH(value)) != NULL)
                return 1;
            continue;
        }
        if (holds_between(value, 0, 0))
            return 1;
        /* Latin-1 strings hold no surrogate: only the two- and four-byte kinds can. */
        if (surrogates && PyUnicode_KIND(value) != PyUnicode_1BYTE_KIND && holds_between(value, 0xD800, 0xDFFF))
            return 1;
    }
    return 0;
}

/* The row's key: its value at the one position, else a tuple of its values there. */
static PyObject *
row_key(PyObject *row, PyObject *positions)
{
    Py_ssize_t count = PyTuple_GET_SIZE(positions), width = PyTuple_GET_SIZE(row);
    PyObject *key = count == 1 ? NULL : PyTuple_New(count);
    if (count != 1 && key == NULL)
        return NULL;
    for (Py_ssize_t k = 0; k < count; k++) {
        Py_ssize_t i = PyLong_AsSsize_t(PyTuple_GET_ITEM(positions, k));
        if (i == -1 && PyErr_Occurred()) {
            Py_XDECREF(key);
            return NULL;
        }
        if (i < 0 || i >= width) {
            Py_XDECREF(key);
            PyErr_Format(PyExc_IndexError, "key position %zd is outside a row of %zd values", i, width);
            return NULL;
        }
        PyObject *value = PyTuple_GET_ITEM(row, i);
        Py_INCREF(value);
        if (count == 1)
            return value;
        PyTuple_SET_ITEM(key, k, value);
    }
    return key;
}

/* fold_run(rows, start, key_positions, fit, images, new, (INSERT, UPDATE_BEFORE, DELETE)):
 * change_fold.fold_run's loop. */
static PyObject *
fold_run(PyObject *module, PyObject *args)
{
    PyObject *rows, *positions, *fit, *images, *new, *kinds;
    Py_ssize_t start;
    if (!PyArg_ParseTuple(args, "O!nO!OO!O!O!", &PyList_Type, &rows, &start, &PyTuple_Type, &positions, &fit,
                          &PyDict_Type, &images, &PySet_Type, &new, &PyTuple_Type, &kinds))
        return NULL;
    Py_ssize_t count = PyList_GET_SIZE(rows);
    if (PyTuple_GET_SIZE(kinds) != 3 || PyTuple_GET_SIZE(positions) == 0 || start < 0 || start >= count) {
        PyErr_SetString(PyExc_ValueError, "fold_run takes a start in the rows, key positions and three kinds");
        return NULL;
    }
    PyObject *insert = PyTuple_GET_ITEM(kinds, 0), *before = PyTuple_GET_ITEM(kinds, 1);
    PyObject *delete = PyTuple_GET_ITEM(kinds, 2);
    PyObject *screen = NULL, *slots = NULL, *odd = NULL;
    int surrogates = 0;
    if (fit != Py_None) {
        screen = PyObject_GetAttrString(fit, "screen");
        if (screen == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_AttributeError))
                return NULL;
            PyErr_Clear();
        } else if (!PyTuple_Check(screen) || PyTuple_GET_SIZE(screen) != 3 ||
                   !PyTuple_Check(PyTuple_GET_ITEM(screen, 0))) {
            Py_DECREF(screen);
            PyErr_SetString(PyExc_TypeError, "a fit's screen is (slots, surrogates, odd)");
            return NULL;
        } else {
            slots = PyTuple_GET_ITEM(screen, 0);
            surrogates = PyObject_IsTrue(PyTuple_GET_ITEM(screen, 1));
            odd = PyTuple_GET_ITEM(screen, 2);
            if (surrogates < 0) {
                Py_DECREF(screen);
                return NULL;
            }
        }
    }
    PyObject *first = change_at(rows, start);
    if (first == NULL) {
        Py_XDECREF(screen);
        return NULL;
    }
    PyObject *schema = PyTuple_GET_ITEM(first, 0);
    Py_ssize_t i = start;
    for (; i < count; i++) {
        PyObject *change = change_at(rows, i);
        if (change == NULL)
            goto failed;
        if (PyTuple_GET_ITEM(change, 0) != schema)
            break;
        PyObject *kind = PyTuple_GET_ITEM(change, 1), *row = PyTuple_GET_ITEM(change, 2);
        if (!PyTuple_Check(row)) {
            PyErr_Format(PyExc_TypeError, "the row of change %zd is not a tuple", i);
            goto failed;
        }
        int fits = fit != Py_None;
        if (fits && slots != NULL && (fits = screened(row, slots, surrogates, odd)) < 0)
            goto failed;
        if (fits) {
            row = PyObject_CallOneArg(fit, row);
            if (row == NULL)
                goto failed;
            if (!PyTuple_Check(row)) {
                Py_DECREF(row);
                PyErr_SetString(PyExc_TypeError, "a fit gives rows as tuples");
                goto failed;
            }
        } else {
            Py_INCREF(row);
        }
        PyObject *key = row_key(row, positions);
        if (key == NULL) {
            Py_DECREF(row);
            goto failed;
        }
        int failed = 0;
        if (kind == insert) {
            int known = PyDict_Contains(images, key);
            failed = known < 0 || (known == 0 && PySet_Add(new, key) < 0);
        }
        if (!failed)
            failed = PyDict_SetItem(images, key, kind == delete || kind == before ? Py_None : row) < 0;
        Py_DECREF(key);
        Py_DECREF(row);
        if (failed)
            goto failed;
    }
    Py_XDECREF(screen);
    return PyLong_FromSsize_t(i);
failed:
    Py_XDECREF(screen);
    return NULL;
}

/* run_counts(rows, kinds): per run of rows sharing a schema, (schema, n0, n1, ...) with
 * the rows of each of the kinds, compared by identity. */
static PyObject *
run_counts(PyObject *module, PyObject *args)
{
    PyObject *rows, *kinds;
    if (!PyArg_ParseTuple(args, "O!O!", &PyList_Type, &rows, &PyTuple_Type, &kinds))
        return NULL;
    Py_ssize_t count = PyList_GET_SIZE(rows), n_kinds = PyTuple_GET_SIZE(kinds);
    if (n_kinds > 8) {
        PyErr_SetString(PyExc_ValueError, "run_counts counts eight kinds at most");
        return NULL;
    }
    PyObject *runs = PyList_New(0);
    if (runs == NULL)
        return NULL;
    Py_ssize_t i = 0;
    while (i < count) {
        PyObject *change = change_at(rows, i);
        if (change == NULL)
            goto failed;
        PyObject *schema = PyTuple_GET_ITEM(change, 0);
        Py_ssize_t numbers[8] = {0};
        for (; i < count; i++) {
            change = change_at(rows, i);
            if (change == NULL)
                goto failed;
            if (PyTuple_GET_ITEM(change, 0) != schema)
                break;
            PyObject *kind = PyTuple_GET_ITEM(change, 1);
            Py_ssize_t k = 0;
            while (k < n_kinds && PyTuple_GET_ITEM(kinds, k) != kind)
                k++;
            if (k == n_kinds) {
                PyErr_Format(PyExc_ValueError, "change %zd has a kind run_counts was not given", i);
                goto failed;
            }
            numbers[k]++;
        }
        PyObject *run = PyTuple_New(1 + n_kinds);
        if (run == NULL)
            goto failed;
        Py_INCREF(schema);
        PyTuple_SET_ITEM(run, 0, schema);
        for (Py_ssize_t k = 0; k < n_kinds; k++) {
            PyObject *n = PyLong_FromSsize_t(numbers[k]);
            if (n == NULL) {
                Py_DECREF(run);
                goto failed;
            }
            PyTuple_SET_ITEM(run, 1 + k, n);
        }
        int appended = PyList_Append(runs, run);
        Py_DECREF(run);
        if (appended < 0)
            goto failed;
    }
    return runs;
failed:
    Py_DECREF(runs);
    return NULL;
}

static PyMethodDef module_methods[] = {
    {"fold_run", fold_run, METH_VARARGS, "Folds a run of one table's changes to each key's last image."},
    {"run_counts", run_counts, METH_VARARGS, "Rows by kind, per run of one table's changes."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_change_fold", "The change fold and the kind count, compiled.", -1, module_methods,
};

PyMODINIT_FUNC
PyInit__change_fold(void)
{
    return PyModule_Create(&module);
}
