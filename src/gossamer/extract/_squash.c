/* A text's words, one space between them, in C: `" ".join("".join(parts).split())`.

   The walk of the tree model (gossamer.extract.walk) closes each block of a page this way,
   and measures each box it skims by the length of the same of its text: in Python a list of
   every word of the block is made and joined again. Here two passes over the parts' code
   points (Python's own whitespace test, `Py_UNICODE_ISSPACE`, as `str.split()` uses) find the
   result's length and widest character, then write it once. Time and memory are linear in
   the parts' length; nothing is read outside a part. ASCII parts (most blocks) take one
   pass, written into a string of their length and cut to what was written. The Python expression stays the
   reference (gossamer.extract.squash): it runs where this module is not built or
   GOSSAMER_NATIVE=0, and tests compare the two. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* One pass of the squash over the parts: its length and widest character so far, and the
   string it writes into (`data` NULL: measured only). */
typedef struct {
    Py_ssize_t length;
    Py_UCS4 widest;
    int words; /* a word was met: a space goes before the next one */
    int gap;   /* whitespace since the last word */
    int kind;
    void *data;
} squash_t;

static void
squash_part(PyObject *part, squash_t *s)
{
    int kind = PyUnicode_KIND(part);
    const void *data = PyUnicode_DATA(part);
    Py_ssize_t size = PyUnicode_GET_LENGTH(part);
    for (Py_ssize_t i = 0; i < size; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (Py_UNICODE_ISSPACE(c)) {
            s->gap = 1;
            continue;
        }
        if (s->words && s->gap) {
            if (s->data != NULL)
                PyUnicode_WRITE(s->kind, s->data, s->length, ' ');
            s->length++;
        }
        s->words = 1;
        s->gap = 0;
        if (s->data != NULL)
            PyUnicode_WRITE(s->kind, s->data, s->length, c);
        s->length++;
        if (c > s->widest)
            s->widest = c;
    }
}

/* Whether the parts are a str alone or a list of them (else TypeError). */
static int
check_parts(PyObject *parts)
{
    if (PyUnicode_Check(parts))
        return PyUnicode_READY(parts) == 0;
    if (!PyList_Check(parts)) {
        PyErr_SetString(PyExc_TypeError, "squash takes a str or a list of str");
        return 0;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(parts); i++) {
        PyObject *part = PyList_GET_ITEM(parts, i);
        if (!PyUnicode_Check(part)) {
            PyErr_SetString(PyExc_TypeError, "squash takes a str or a list of str");
            return 0;
        }
        if (PyUnicode_READY(part) != 0)
            return 0;
    }
    return 1;
}

/* One pass over every part (the list cannot change meanwhile: nothing here runs Python). */
static void
squash_all(PyObject *parts, squash_t *s)
{
    if (PyUnicode_Check(parts)) {
        squash_part(parts, s);
        return;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(parts); i++)
        squash_part(PyList_GET_ITEM(parts, i), s);
}

/* Whether every part is ASCII, and their total length. */
static int
all_ascii(PyObject *parts, Py_ssize_t *total)
{
    if (PyUnicode_Check(parts)) {
        *total = PyUnicode_GET_LENGTH(parts);
        return PyUnicode_IS_ASCII(parts);
    }
    *total = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(parts); i++) {
        PyObject *part = PyList_GET_ITEM(parts, i);
        if (!PyUnicode_IS_ASCII(part))
            return 0;
        *total += PyUnicode_GET_LENGTH(part);
    }
    return 1;
}

/* The squash of ASCII parts in one pass: written into a string of their total length, cut
   to what was written (most pages' blocks are ASCII). */
static PyObject *
squash_ascii(PyObject *parts, Py_ssize_t total)
{
    PyObject *out = PyUnicode_New(total, 127);
    if (out == NULL)
        return NULL;
    Py_UCS1 *to = PyUnicode_1BYTE_DATA(out);
    Py_ssize_t at = 0;
    int words = 0, gap = 0;
    Py_ssize_t count = PyUnicode_Check(parts) ? 1 : PyList_GET_SIZE(parts);
    for (Py_ssize_t n = 0; n < count; n++) {
        PyObject *part = PyUnicode_Check(parts) ? parts : PyList_GET_ITEM(parts, n);
        const Py_UCS1 *from = PyUnicode_1BYTE_DATA(part);
        Py_ssize_t size = PyUnicode_GET_LENGTH(part);
        for (Py_ssize_t i = 0; i < size; i++) {
            Py_UCS1 c = from[i];
            if (Py_UNICODE_ISSPACE(c)) {
                gap = 1;
                continue;
            }
            if (words && gap)
                to[at++] = ' ';
            words = 1;
            gap = 0;
            to[at++] = c;
        }
    }
    if (at < total && PyUnicode_Resize(&out, at) < 0) {
        Py_DECREF(out); /* (left as it was) */
        return NULL;
    }
    return out;
}

static PyObject *
squash(PyObject *self, PyObject *parts)
{
    if (!check_parts(parts))
        return NULL;
    Py_ssize_t total;
    if (all_ascii(parts, &total))
        return squash_ascii(parts, total);
    squash_t measured = {0, 0, 0, 0, 0, NULL};
    squash_all(parts, &measured);
    PyObject *out = PyUnicode_New(measured.length, measured.widest);
    if (out == NULL)
        return NULL;
    squash_t written = {0, 0, 0, 0, PyUnicode_KIND(out), PyUnicode_DATA(out)};
    squash_all(parts, &written);
    if (written.length != measured.length) {
        Py_DECREF(out);
        PyErr_SetString(PyExc_RuntimeError, "squash measured another length than it wrote");
        return NULL;
    }
    return out;
}

static PyObject *
squashed_length(PyObject *self, PyObject *parts)
{
    if (!check_parts(parts))
        return NULL;
    squash_t measured = {0, 0, 0, 0, 0, NULL};
    squash_all(parts, &measured);
    return PyLong_FromSsize_t(measured.length);
}

static PyMethodDef methods[] = {
    {"squash", squash, METH_O,
     "squash(parts: str | list[str]) -> str: \" \".join(\"\".join(parts).split())"},
    {"squashed_length", squashed_length, METH_O,
     "squashed_length(parts: str | list[str]) -> int: the length of squash(parts)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_squash", "A text's words, one space between them, in C.", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__squash(void)
{
    return PyModule_Create(&module);
}
