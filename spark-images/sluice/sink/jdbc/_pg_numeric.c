/* A Decimal in PostgreSQL's binary numeric form (sink/jdbc/pg_numeric.py says why).
 *
 * numeric_binary(decimal) reads the Decimal's text (str() is libmpdec's, and fast) and
 * gives the bytes psycopg's dump_decimal_to_numeric_binary gives: the same algorithm, on the
 * same digits and exponent. It gives None for what it leaves to psycopg: NaN, infinities,
 * and values past the binary form's limits (psycopg names the limit in its error).
 *
 * Numeric's binary form: int16 ndigits, int16 weight, uint16 sign, int16 dscale, then
 * ndigits base-10000 digits, most significant first, each a big-endian uint16.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define DEC_DIGITS 4
#define MAX_WEIGHT 0x7FFF
#define MAX_DSCALE 0x3FFF
#define MAX_DIGITS 4096 /* decimal digits read here; longer ones go to psycopg */

static long
floor_div(long a, long b)
{
    long q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static long
floor_mod(long a, long b)
{
    return a - floor_div(a, b) * b;
}

static void
put_uint16(unsigned char *at, unsigned int value)
{
    at[0] = (unsigned char)(value >> 8 & 0xFF);
    at[1] = (unsigned char)(value & 0xFF);
}

static PyObject *
numeric_head(long ndigits, long weight, unsigned int sign, long dscale, Py_ssize_t digits_bytes)
{
    PyObject *out = PyBytes_FromStringAndSize(NULL, 8 + digits_bytes);
    if (out == NULL)
        return NULL;
    unsigned char *at = (unsigned char *)PyBytes_AS_STRING(out);
    put_uint16(at, (unsigned int)ndigits);
    put_uint16(at + 2, (unsigned int)(weight & 0xFFFF));
    put_uint16(at + 4, sign);
    put_uint16(at + 6, (unsigned int)dscale);
    return out;
}

static PyObject *
numeric_binary(PyObject *module, PyObject *decimal)
{
    PyObject *text = PyObject_Str(decimal);
    if (text == NULL)
        return NULL;
    Py_ssize_t length;
    const char *s = PyUnicode_AsUTF8AndSize(text, &length);
    if (s == NULL) {
        Py_DECREF(text);
        return NULL;
    }
    /* The coefficient's digits (leading zeros dropped, one kept) and the exponent. */
    unsigned char digits[MAX_DIGITS];
    Py_ssize_t i = 0, count = 0, fraction = 0;
    int sign = 0, seen_point = 0, seen_digit = 0;
    if (i < length && (s[i] == '-' || s[i] == '+'))
        sign = s[i++] == '-';
    for (; i < length; i++) {
        char c = s[i];
        if (c >= '0' && c <= '9') {
            seen_digit = 1;
            if (seen_point)
                fraction++;
            if (count == 0 && c == '0')
                continue; /* a leading zero */
            if (count == MAX_DIGITS)
                goto elsewhere;
            digits[count++] = (unsigned char)(c - '0');
        } else if (c == '.' && !seen_point) {
            seen_point = 1;
        } else {
            break;
        }
    }
    if (!seen_digit)
        goto elsewhere; /* NaN, sNaN, Infinity */
    long exponent = 0;
    if (i < length) {
        if (s[i] != 'E' && s[i] != 'e')
            goto elsewhere;
        i++;
        int negative = 0;
        if (i < length && (s[i] == '-' || s[i] == '+'))
            negative = s[i++] == '-';
        if (i == length)
            goto elsewhere;
        for (; i < length; i++) {
            if (s[i] < '0' || s[i] > '9' || exponent > 1000000)
                goto elsewhere;
            exponent = exponent * 10 + (s[i] - '0');
        }
        if (negative)
            exponent = -exponent;
    }
    Py_DECREF(text);
    text = NULL;
    if (count == 0)
        digits[count++] = 0; /* zero: one digit, as Decimal.as_tuple() has it */
    long exp = exponent - (long)fraction;

    /* psycopg's dump_decimal_to_numeric_binary from here, step for step. */
    long ndigits = (long)count, nzdigits = (long)count, dscale, wi = 0;
    while (nzdigits > 0 && digits[nzdigits - 1] == 0)
        nzdigits--;
    if (exp <= 0) {
        dscale = -exp;
    } else {
        dscale = 0;
        ndigits += floor_mod(exp, DEC_DIGITS);
    }
    if (dscale > MAX_DSCALE)
        Py_RETURN_NONE;
    if (nzdigits == 0)
        return numeric_head(0, 0, 0x0000, dscale, 0);
    long mod = floor_mod(ndigits - dscale, DEC_DIGITS);
    if (mod) {
        wi = DEC_DIGITS - mod;
        ndigits += wi;
    }
    long weight = floor_div(ndigits + exp, DEC_DIGITS) - 1;
    if (weight > MAX_WEIGHT || weight < -MAX_WEIGHT - 1)
        Py_RETURN_NONE;
    long tmp = nzdigits + wi, groups = tmp / DEC_DIGITS + (tmp % DEC_DIGITS ? 1 : 0);
    PyObject *out = numeric_head(groups, weight, sign ? 0x4000 : 0x0000, dscale, 2 * groups);
    if (out == NULL)
        return NULL;
    unsigned char *at = (unsigned char *)PyBytes_AS_STRING(out) + 8;
    static const unsigned int weights[DEC_DIGITS] = {1000, 100, 10, 1};
    unsigned int pgdigit = 0;
    for (long d = 0; d < nzdigits; d++) {
        pgdigit += weights[wi] * digits[d];
        if (++wi >= DEC_DIGITS) {
            put_uint16(at, pgdigit);
            at += 2;
            pgdigit = 0;
            wi = 0;
        }
    }
    if (pgdigit)
        put_uint16(at, pgdigit);
    return out;
elsewhere:
    Py_DECREF(text);
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"numeric_binary", numeric_binary, METH_O, "A Decimal in PostgreSQL's binary numeric form, or None."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_pg_numeric", "Decimals in PostgreSQL's binary numeric form, compiled.", -1,
    module_methods,
};

PyMODINIT_FUNC
PyInit__pg_numeric(void)
{
    return PyModule_Create(&module);
}
