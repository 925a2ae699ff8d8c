/* What the row image decoder's two C files share: a Program's instructions (Op, one per
 * column of an image) and the value readers (row_values.c) its loop (_row_images.c) calls.
 */
#ifndef SLUICE_ROW_IMAGES_H
#define SLUICE_ROW_IMAGES_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

enum op_code { OP_INT, OP_FLOAT, OP_DOUBLE, OP_DECIMAL, OP_DATETIME2, OP_TIMESTAMP2, OP_DATE,
               OP_TEXT, OP_BYTES, OP_PREFIXED, OP_CALL };

static const int DECIMAL_GROUP_BYTES[10] = {0, 1, 1, 2, 2, 3, 3, 4, 4, 4};

typedef struct {
    enum op_code code;
    Py_ssize_t slot;     /* where in the row the value goes; -1 for none */
    long a, b;           /* size and signedness, precision and scale, fsp, length prefix */
    int groups;          /* DECIMAL: digit groups, most significant first */
    int group_digits[10];
    Py_ssize_t size;     /* DECIMAL: bytes of the whole value */
    PyObject *object;    /* Decimal, the invalid-date maker, the zero timestamp, the Python reader */
    const char *encoding, *errors;
    PyObject *encoding_object, *errors_object; /* keep the two strings above alive */
    PyObject *column;    /* its name, for errors */
    int utf8;
    int holds;           /* parsed whole: the three objects above are references it holds */
} Op;

typedef struct {
    Py_ssize_t count;    /* columns in the image */
    Py_ssize_t null_bytes;
    Op *ops;
} Image;

/* The ValueError of a value that runs past the image's end (NULL, to return). */
PyObject *image_truncated(Py_ssize_t pos);
/* The value an Op reads at *pos (moved past it); NULL with an exception set. */
PyObject *row_value(const Op *op, PyObject *body, const unsigned char *data, Py_ssize_t length, Py_ssize_t *pos);
/* Moves *pos past the value an Op would read; -1 with an exception set. */
int skip_row_value(const Op *op, Py_ssize_t length, Py_ssize_t *pos, const unsigned char *data);
/* Imports the datetime C API the value readers use; -1 if it cannot be. */
int row_values_ready(void);

#endif
