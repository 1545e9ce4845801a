/* A page's links resolved by what the crawl remembers, in C: gossamer.parse.links'
   `_resolve_links` loop, for the references `gossamer.urls.Resolver` resolved before.

   known(hrefs, document, absolute, by_root, by_directory, seen, limit, max_chars, resolve)
   -> links

   For each reference of `hrefs` (a list), in order, the resolution `Resolver.resolve` gives:
   None past `max_chars` characters, `document` for one that starts with `#`, else the entry
   of the table it depends on (`absolute` for one that starts with `http://` or `https://`,
   `by_root` for one that starts with a slash or backslash, `by_directory` for the others),
   looked up as it is and then without its fragment when what precedes the `#` ends in a
   character past the space, as `resolve` looks them up. A reference none of them holds, or
   that is not exactly a str, is handed to `resolve` (the resolver's own method, which
   resolves it and remembers it), so every answer is `resolve`'s. A resolution that is not
   None and not in `seen` (a set, the page's own URL in it) is added to `seen` and to the
   links; at `limit` links the rest is left. The tables are only read here. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* The table `Resolver.resolve` reads for `href` (borrowed), by its first characters. */
static PyObject *
table_of(PyObject *href, Py_ssize_t n, PyObject *absolute, PyObject *by_root,
         PyObject *by_directory)
{
    Py_UCS4 first = n > 0 ? PyUnicode_READ_CHAR(href, 0) : 0;
    if (first == '/' || first == '\\')
        return by_root;
    if (first == 'h' && n >= 7) {
        int kind = PyUnicode_KIND(href);
        const void *data = PyUnicode_DATA(href);
        if (PyUnicode_READ(kind, data, 1) == 't' && PyUnicode_READ(kind, data, 2) == 't' &&
            PyUnicode_READ(kind, data, 3) == 'p') {
            Py_UCS4 c = PyUnicode_READ(kind, data, 4);
            Py_ssize_t at = 4;
            if (c == 's') {
                at = 5;
                c = n > 5 ? PyUnicode_READ(kind, data, 5) : 0;
            }
            if (c == ':' && n >= at + 3 && PyUnicode_READ(kind, data, at + 1) == '/' &&
                PyUnicode_READ(kind, data, at + 2) == '/')
                return absolute;
        }
    }
    return by_directory;
}

/* The remembered resolution of `href` (a new reference), NULL with no error when `table`
   holds neither it nor, as `resolve` tries next, it without its fragment. */
static PyObject *
remembered(PyObject *table, PyObject *href, Py_ssize_t n)
{
    PyObject *found = PyDict_GetItemWithError(table, href);
    if (found != NULL || PyErr_Occurred()) {
        Py_XINCREF(found);
        return found;
    }
    Py_ssize_t mark = PyUnicode_FindChar(href, '#', 0, n, 1);
    if (mark <= 0) /* none (-1), or an error (-2) */
        return NULL;
    if (PyUnicode_READ_CHAR(href, mark - 1) <= ' ')
        return NULL;
    PyObject *bare = PyUnicode_Substring(href, 0, mark);
    if (bare == NULL)
        return NULL;
    found = PyDict_GetItemWithError(table, bare);
    Py_DECREF(bare);
    Py_XINCREF(found);
    return found;
}

static PyObject *
known(PyObject *self, PyObject *args)
{
    PyObject *hrefs, *document, *absolute, *by_root, *by_directory, *seen, *resolve;
    Py_ssize_t limit, max_chars;
    if (!PyArg_ParseTuple(args, "O!UO!O!O!O!nnO:known", &PyList_Type, &hrefs, &document,
                          &PyDict_Type, &absolute, &PyDict_Type, &by_root, &PyDict_Type,
                          &by_directory, &PySet_Type, &seen, &limit, &max_chars, &resolve))
        return NULL;
    PyObject *links = PyList_New(0);
    if (links == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(hrefs) && PyList_GET_SIZE(links) < limit; i++) {
        PyObject *href = PyList_GET_ITEM(hrefs, i);
        Py_INCREF(href); /* the list may change under a call of `resolve` */
        PyObject *resolved = NULL;
        if (PyUnicode_CheckExact(href) && PyUnicode_READY(href) == 0) {
            Py_ssize_t n = PyUnicode_GET_LENGTH(href);
            if (n > max_chars) {
                resolved = Py_NewRef(Py_None);
            } else if (n > 0 && PyUnicode_READ_CHAR(href, 0) == '#') {
                resolved = Py_NewRef(document);
            } else {
                PyObject *table = table_of(href, n, absolute, by_root, by_directory);
                resolved = remembered(table, href, n);
            }
        }
        if (resolved == NULL && !PyErr_Occurred())
            resolved = PyObject_CallOneArg(resolve, href);
        Py_DECREF(href);
        if (resolved == NULL)
            goto fail;
        if (resolved != Py_None) {
            int there = PySet_Contains(seen, resolved);
            if (there < 0 || (!there && (PySet_Add(seen, resolved) < 0 ||
                                         PyList_Append(links, resolved) < 0))) {
                Py_DECREF(resolved);
                goto fail;
            }
        }
        Py_DECREF(resolved);
    }
    return links;
fail:
    Py_DECREF(links);
    return NULL;
}

static PyMethodDef methods[] = {
    {"known", known, METH_VARARGS,
     "known(hrefs, document, absolute, by_root, by_directory, seen, limit, max_chars, "
     "resolve) -> links: a page's references resolved, each once (see the module's source)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_resolve", "A page's links resolved by what is remembered, in C.",
    -1, methods,
};

PyMODINIT_FUNC
PyInit__resolve(void)
{
    return PyModule_Create(&module);
}
