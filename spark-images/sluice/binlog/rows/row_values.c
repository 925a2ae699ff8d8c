/* The row image decoder's value readers: one column's value in its binary form, read into
 * the Python value the split reader's SELECT gives (row_image_decoder.py's column readers
 * are the reference), or passed over.
 */
#include "row_images.h"

#include <datetime.h>
#include <string.h>

static const unsigned long long POWERS_OF_TEN[10] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000,
                                                     100000000, 1000000000};

PyObject *
image_truncated(Py_ssize_t pos)
{
    PyErr_Format(PyExc_ValueError, "row image ends before its value at byte %zd", pos);
    return NULL;
}

static unsigned long long
big_endian(const unsigned char *p, Py_ssize_t n)
{
    unsigned long long v = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        v = (v << 8) | p[i];
    return v;
}

static unsigned long long
little_endian(const unsigned char *p, Py_ssize_t n)
{
    unsigned long long v = 0;
    for (Py_ssize_t i = n - 1; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static char *
put_digits(char *out, unsigned long long value, int width)
{
    for (int i = width - 1; i >= 0; i--) {
        out[i] = (char)('0' + value % 10);
        value /= 10;
    }
    return out + width;
}

static PyObject *
read_decimal(const Op *op, const unsigned char *p)
{
    unsigned char raw[32];
    char digits[80]; /* 65 digits, a sign and an exponent */
    memcpy(raw, p, (size_t)op->size);
    int negative = !(raw[0] & 0x80);
    if (negative)
        for (Py_ssize_t i = 0; i < op->size; i++)
            raw[i] = (unsigned char)~raw[i];
    raw[0] &= 0x7F;
    char *out = digits;
    int nonzero = 0;
    const unsigned char *q = raw;
    if (negative)
        *out++ = '-';
    for (int g = 0; g < op->groups; g++) {
        int n = DECIMAL_GROUP_BYTES[op->group_digits[g]];
        unsigned long long value = big_endian(q, n);
        q += n;
        nonzero |= value != 0;
        if (value >= POWERS_OF_TEN[op->group_digits[g]]) { /* MySQL never writes it: refused, as MySQL does */
            PyErr_Format(PyExc_ValueError, "a DECIMAL digit group of %llu holds at most %d digits", value,
                         op->group_digits[g]);
            return NULL;
        }
        out = put_digits(out, value, op->group_digits[g]);
    }
    if (op->b) { /* a scale of 1 to 38 (MariaDB's most) */
        *out++ = 'E';
        *out++ = '-';
        out = put_digits(out, (unsigned long long)op->b, op->b < 10 ? 1 : 2);
    }
    char *text = negative && !nonzero ? digits + 1 : digits; /* a negative zero is zero */
    PyObject *string = PyUnicode_FromStringAndSize(text, out - text);
    if (string == NULL)
        return NULL;
    PyObject *value = PyObject_CallOneArg(op->object, string);
    Py_DECREF(string);
    return value;
}

/* A datetime, or what the Python reader's maker gives for one no calendar has. */
static PyObject *
datetime_or_invalid(const Op *op, const int t[7])
{
    PyObject *value = PyDateTime_FromDateAndTime(t[0], t[1], t[2], t[3], t[4], t[5], t[6]);
    if (value != NULL || !PyErr_ExceptionMatches(PyExc_ValueError))
        return value;
    PyErr_Clear();
    return PyObject_CallFunction(op->object, "(iiiiiii)l", t[0], t[1], t[2], t[3], t[4], t[5], t[6], op->a);
}

static const long long TIME_UNITS[4] = {1000000, 10000, 100, 1}; /* microseconds per stored unit */

static PyObject *
read_timestamp2(const Op *op, const unsigned char *p, Py_ssize_t frac_size)
{
    unsigned long long seconds = big_endian(p, 4);
    long long micros = (long long)big_endian(p + 4, frac_size) * TIME_UNITS[frac_size];
    if (!seconds && !micros) {
        Py_INCREF(op->object);
        return op->object;
    }
    seconds += (unsigned long long)(micros / 1000000);
    micros %= 1000000;
    /* days since 1970-01-01 to a civil date (Howard Hinnant's days_from_civil inverse) */
    long long days = (long long)(seconds / 86400), rest = (long long)(seconds % 86400);
    long long z = days + 719468, era = z / 146097, doe = z - era * 146097;
    long long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    long long doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
    int day = (int)(doy - (153 * mp + 2) / 5 + 1), month = (int)(mp < 10 ? mp + 3 : mp - 9);
    int year = (int)(yoe + era * 400 + (month <= 2));
    return PyDateTime_FromDateAndTime(year, month, day, (int)(rest / 3600), (int)(rest / 60 % 60), (int)(rest % 60),
                                      (int)micros);
}

static PyObject *
read_int(const Op *op, const unsigned char *p, Py_ssize_t left, Py_ssize_t *pos)
{
    if (left < op->a)
        return image_truncated(*pos);
    unsigned long long raw = little_endian(p, op->a);
    *pos += op->a;
    if (!op->b)
        return PyLong_FromUnsignedLongLong(raw);
    int bits = 8 * (int)op->a;
    long long value = bits == 64 ? (long long)raw : (raw >> (bits - 1)) ? (long long)(raw - (1ULL << bits)) : (long long)raw;
    return PyLong_FromLongLong(value);
}

/* FLOAT and DOUBLE: little-endian, as x86 and arm64 hold them. */
static PyObject *
read_real(const Op *op, const unsigned char *p, Py_ssize_t left, Py_ssize_t *pos)
{
    if (op->code == OP_FLOAT) {
        float value;
        if (left < 4)
            return image_truncated(*pos);
        memcpy(&value, p, 4);
        *pos += 4;
        return PyFloat_FromDouble(value);
    }
    double value;
    if (left < 8)
        return image_truncated(*pos);
    memcpy(&value, p, 8);
    *pos += 8;
    return PyFloat_FromDouble(value);
}

static PyObject *
read_datetime2(const Op *op, const unsigned char *p, Py_ssize_t left, Py_ssize_t *pos)
{
    Py_ssize_t frac_size = (op->a + 1) / 2, size = 5 + frac_size;
    if (left < size)
        return image_truncated(*pos);
    *pos += size;
    int bits = 8 * (int)frac_size;
    unsigned long long packed = big_endian(p, size);
    unsigned long long year_month = packed >> (22 + bits) & 0x1FFFF;
    const int parts[7] = {
        (int)(year_month / 13),          (int)(year_month % 13),          (int)(packed >> (17 + bits) & 0x1F),
        (int)(packed >> (12 + bits) & 0x1F), (int)(packed >> (6 + bits) & 0x3F), (int)(packed >> bits & 0x3F),
        (int)((packed & ((1ULL << bits) - 1)) * TIME_UNITS[frac_size]),
    };
    return datetime_or_invalid(op, parts);
}

static PyObject *
read_date(const Op *op, const unsigned char *p, Py_ssize_t left, Py_ssize_t *pos)
{
    if (left < 3)
        return image_truncated(*pos);
    *pos += 3;
    unsigned long long packed = little_endian(p, 3);
    int year = (int)(packed >> 9), month = (int)(packed >> 5 & 0xF), day = (int)(packed & 0x1F);
    PyObject *value = PyDate_FromDate(year, month, day);
    if (value != NULL || !PyErr_ExceptionMatches(PyExc_ValueError))
        return value;
    PyErr_Clear();
    return PyObject_CallFunction(op->object, "iii", year, month, day);
}

/* A value after its length: text, bytes, or bytes the Python maker reads (JSON, spatial). */
static PyObject *
read_prefixed(const Op *op, const unsigned char *p, Py_ssize_t left, Py_ssize_t *pos)
{
    if (left < op->a)
        return image_truncated(*pos);
    Py_ssize_t size = (Py_ssize_t)little_endian(p, op->a);
    if (left - op->a < size)
        return image_truncated(*pos);
    const char *start = (const char *)p + op->a;
    *pos += op->a + size;
    if (op->code == OP_BYTES)
        return PyBytes_FromStringAndSize(start, size);
    if (op->code == OP_TEXT)
        return op->utf8 ? PyUnicode_DecodeUTF8(start, size, op->errors)
                        : PyUnicode_Decode(start, size, op->encoding, op->errors);
    PyObject *raw = PyBytes_FromStringAndSize(start, size);
    if (raw == NULL)
        return NULL;
    PyObject *value = PyObject_CallOneArg(op->object, raw);
    Py_DECREF(raw);
    return value;
}

/* A column the Python reader reads: it gives the value and where the next one starts. */
static PyObject *
read_by_python(const Op *op, PyObject *body, Py_ssize_t length, Py_ssize_t *pos)
{
    PyObject *result = PyObject_CallFunction(op->object, "On", body, *pos);
    if (result == NULL)
        return NULL;
    PyObject *value;
    Py_ssize_t end;
    if (!PyArg_ParseTuple(result, "On", &value, &end)) {
        Py_DECREF(result);
        return NULL;
    }
    if (end < *pos || end > length) {
        Py_DECREF(result);
        return image_truncated(*pos);
    }
    *pos = end;
    Py_INCREF(value);
    Py_DECREF(result);
    return value;
}

PyObject *
row_value(const Op *op, PyObject *body, const unsigned char *data, Py_ssize_t length, Py_ssize_t *pos)
{
    const unsigned char *p = data + *pos;
    Py_ssize_t left = length - *pos;
    switch (op->code) {
    case OP_INT:
        return read_int(op, p, left, pos);
    case OP_FLOAT:
    case OP_DOUBLE:
        return read_real(op, p, left, pos);
    case OP_DECIMAL:
        if (left < op->size)
            return image_truncated(*pos);
        *pos += op->size;
        return read_decimal(op, p);
    case OP_DATETIME2:
        return read_datetime2(op, p, left, pos);
    case OP_TIMESTAMP2: {
        Py_ssize_t frac_size = (op->a + 1) / 2;
        if (left < 4 + frac_size)
            return image_truncated(*pos);
        *pos += 4 + frac_size;
        return read_timestamp2(op, p, frac_size);
    }
    case OP_DATE:
        return read_date(op, p, left, pos);
    case OP_TEXT:
    case OP_BYTES:
    case OP_PREFIXED:
        return read_prefixed(op, p, left, pos);
    case OP_CALL:
        return read_by_python(op, body, length, pos);
    }
    PyErr_SetString(PyExc_SystemError, "unknown instruction");
    return NULL;
}

/* Moves past a value nobody takes (slot -1): 0 once past, -1 on a truncated image, 1 for an
 * instruction whose size only its reader knows (read_value reads it then). */
int
skip_row_value(const Op *op, Py_ssize_t length, Py_ssize_t *pos, const unsigned char *data)
{
    Py_ssize_t left = length - *pos, size;
    switch (op->code) {
    case OP_INT:
        size = op->a;
        break;
    case OP_FLOAT:
        size = 4;
        break;
    case OP_DOUBLE:
        size = 8;
        break;
    case OP_DECIMAL:
        size = op->size;
        break;
    case OP_DATETIME2:
        size = 5 + (op->a + 1) / 2;
        break;
    case OP_TIMESTAMP2:
        size = 4 + (op->a + 1) / 2;
        break;
    case OP_DATE:
        size = 3;
        break;
    case OP_TEXT:
    case OP_BYTES:
    case OP_PREFIXED:
        if (left < op->a) {
            image_truncated(*pos);
            return -1;
        }
        size = op->a + (Py_ssize_t)little_endian(data + *pos, op->a);
        if (size < op->a) {
            image_truncated(*pos);
            return -1;
        }
        break;
    default:
        return 1;
    }
    if (left < size) {
        image_truncated(*pos);
        return -1;
    }
    *pos += size;
    return 0;
}

/* Rows and their changelog tuples are made by the hundred thousand a second and hold what
 * makes no cycle: values (numbers, strings, dates) and the long-lived schema and kind. The
 * cyclic garbage collector would walk each of them once to find that out, a tenth of the
 * committing side's time; they are untracked here instead, as the collector itself leaves a
 * tuple of untracked items on its first walk. `from` skips the first items (ones known to
 * make no cycle, though tracked: a schema, a kind). */

int
row_values_ready(void)
{
    PyDateTime_IMPORT;
    return PyDateTimeAPI == NULL ? -1 : 0;
}
