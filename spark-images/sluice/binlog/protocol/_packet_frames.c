/* The replication connection's packet framing, compiled (binlog/protocol/packet_frames.py says why).
 *
 * packet_frames.py's `frames_python` is the reference: the tests compare the two.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define MAX_PAYLOAD 0xFFFFFF /* a payload this long goes on in the next packet */

static PyObject *
frames(PyObject *module, PyObject *args)
{
    Py_buffer read;
    Py_ssize_t at;
    int sequence;
    if (!PyArg_ParseTuple(args, "y*ni", &read, &at, &sequence))
        return NULL;
    const unsigned char *bytes = read.buf;
    Py_ssize_t size = read.len;
    PyObject *payloads = PyList_New(0);
    if (payloads == NULL)
        goto failed;
    if (at < 0 || at > size || sequence < 0 || sequence > 255) {
        PyErr_Format(PyExc_ValueError, "no packet at %zd of %zd bytes (sequence %d)", at, size, sequence);
        goto failed;
    }
    while (size - at >= 4) {
        Py_ssize_t length = bytes[at] | bytes[at + 1] << 8 | bytes[at + 2] << 16;
        if (bytes[at + 3] != sequence || length == MAX_PAYLOAD || size - at - 4 < length)
            break;
        PyObject *payload = PyBytes_FromStringAndSize((const char *)bytes + at + 4, length);
        if (payload == NULL || PyList_Append(payloads, payload) < 0) {
            Py_XDECREF(payload);
            goto failed;
        }
        Py_DECREF(payload);
        at += 4 + length;
        sequence = (sequence + 1) & 0xFF;
    }
    PyBuffer_Release(&read);
    return Py_BuildValue("(Nni)", payloads, at, sequence);

failed:
    Py_XDECREF(payloads);
    PyBuffer_Release(&read);
    return NULL;
}

static PyMethodDef methods[] = {
    {"frames", frames, METH_VARARGS, "The whole packets in a read from `at`: (payloads, at, sequence)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_packet_frames", NULL, -1, methods};

PyMODINIT_FUNC
PyInit__packet_frames(void)
{
    return PyModule_Create(&module);
}
