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

/* What the squash of the parts would be: its length and its widest character. */
typedef struct {
    Py_ssize_t length;
    Py_UCS4 widest;
    int words; /* a word was met: a space goes before the next one */
    int gap;   /* whitespace since the last word */
} measure_t;

static void
measure(PyObject *part, measure_t *m)
{
    int kind = PyUnicode_KIND(part);
    const void *data = PyUnicode_DATA(part);
    Py_ssize_t size = PyUnicode_GET_LENGTH(part);
    for (Py_ssize_t i = 0; i < size; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (Py_UNICODE_ISSPACE(c)) {
            m->gap = 1;
            continue;
        }
        if (m->words && m->gap)
            m->length++;
        m->words = 1;
        m->gap = 0;
        m->length++;
        if (c > m->widest)
            m->widest = c;
    }
}

typedef struct {
    int kind;
    void *data;
    Py_ssize_t at;
    int words;
    int gap;
} writer_t;

static void
write_part(PyObject *part, writer_t *w)
{
    int kind = PyUnicode_KIND(part);
    const void *data = PyUnicode_DATA(part);
    Py_ssize_t size = PyUnicode_GET_LENGTH(part);
    for (Py_ssize_t i = 0; i < size; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (Py_UNICODE_ISSPACE(c)) {
            w->gap = 1;
            continue;
        }
        if (w->words && w->gap)
            PyUnicode_WRITE(w->kind, w->data, w->at++, ' ');
        w->words = 1;
        w->gap = 0;
        PyUnicode_WRITE(w->kind, w->data, w->at++, c);
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

static void
measure_all(PyObject *parts, measure_t *m)
{
    if (PyUnicode_Check(parts)) {
        measure(parts, m);
        return;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(parts); i++)
        measure(PyList_GET_ITEM(parts, i), m);
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
    measure_t m = {0, 0, 0, 0};
    measure_all(parts, &m);
    /* the list cannot change between the passes: nothing here runs Python code */
    PyObject *out = PyUnicode_New(m.length, m.widest);
    if (out == NULL)
        return NULL;
    writer_t w = {PyUnicode_KIND(out), PyUnicode_DATA(out), 0, 0, 0};
    if (PyUnicode_Check(parts)) {
        write_part(parts, &w);
    } else {
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(parts); i++)
            write_part(PyList_GET_ITEM(parts, i), &w);
    }
    if (w.at != m.length) {
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
    measure_t m = {0, 0, 0, 0};
    measure_all(parts, &m);
    return PyLong_FromSsize_t(m.length);
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
