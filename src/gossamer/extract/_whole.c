/* The scan of a box read whole, in C: gossamer.extract.kinds.scan_whole_reference.

   The walk of the tree model reads a paragraph, cell or heading in one piece when it holds
   only text and inline elements; to know that, it scans the box's elements (every one below
   it, in document order, text nodes left out, as LexborNode.traverse goes). In Python the
   scan makes a LexborNode for every element; here it reads each element's tag id and makes
   one for the links alone. It stops at the first element that is not inline (a box, an image,
   a line break, a skipped element: the box is not read whole) and once it has counted more
   elements than the walk may still read (its budget): time bounded by the box's size and the
   budget, memory by its links.

   It calls lexbor through the functions selectolax's own module exports (dlsym on the loaded
   module, `bind`), never through a struct's layout, and reads and builds selectolax's
   LexborNode by its type, as parse/_linkwalk.c does. The Python scan is the reference and
   stays: it runs when this module is not built or does not bind, and tests compare them. */

#include "../_lexbor.h"
#include <string.h>

enum { INLINE = 0, LINK = 1 }; /* kinds, as gossamer.extract.walk numbers them */
#define KINDS 65536            /* tag ids below this (lexbor's standard tags) have a kind */
static unsigned char kinds[KINDS];
static int bound = 0;

static PyObject *
bind_lexbor(PyObject *self, PyObject *args)
{
    const char *path;
    PyObject *type, *sample, *tree;
    unsigned long long address;
    Py_buffer table;
    if (!PyArg_ParseTuple(args, "sOOOKy*", &path, &type, &sample, &tree, &address, &table))
        return NULL;
    if (table.len > KINDS) {
        PyBuffer_Release(&table);
        PyErr_SetString(PyExc_ValueError, "kinds: one byte per tag id below 65536");
        return NULL;
    }
    memset(kinds, INLINE, sizeof(kinds));
    memcpy(kinds, table.buf, (size_t)table.len);
    PyBuffer_Release(&table);
    if (lexbor_bind(path, type, sample, tree, address) < 0)
        return NULL;
    bound = 1;
    Py_RETURN_NONE;
}

/* scan(box, budget) -> (elements, links) or None: see the module's comment. */
static PyObject *
scan(PyObject *self, PyObject *args)
{
    PyObject *box;
    Py_ssize_t budget;
    if (!PyArg_ParseTuple(args, "On", &box, &budget))
        return NULL;
    NodeObject *start = document_element(box, bound, "scan");
    if (start == NULL)
        return NULL;
    node_t *root = start->node;
    PyObject *links = PyList_New(0);
    if (links == NULL)
        return NULL;
    Py_ssize_t elements = 0;
    node_t *node = first_child(root);
    while (node != NULL) {
        if (type_of(node) != LEXBOR_TEXT) {
            uintptr_t tag = tag_id_of(node);
            int kind = tag < KINDS ? kinds[tag] : INLINE;
            if (kind == LINK) {
                PyObject *link = make_node(node, start->parser);
                if (link == NULL || PyList_Append(links, link) < 0) {
                    Py_XDECREF(link);
                    Py_DECREF(links);
                    return NULL;
                }
                Py_DECREF(link);
            } else if (kind != INLINE) {
                Py_DECREF(links);
                Py_RETURN_NONE; /* not read whole */
            }
            if (++elements > budget) {
                Py_DECREF(links);
                Py_RETURN_NONE; /* the walk would stop inside */
            }
        }
        node = next_below(node, root);
    }
    if (elements > budget) { /* a budget below zero */
        Py_DECREF(links);
        Py_RETURN_NONE;
    }
    return Py_BuildValue("(nN)", elements, links);
}

static PyMethodDef methods[] = {
    {"bind", bind_lexbor, METH_VARARGS,
     "bind(selectolax_lexbor_path, LexborNode, node, its tree, its mem_id, kinds): check the "
     "layout on a node selectolax made; find lexbor's functions in selectolax's loaded "
     "module; kinds: a byte per tag id, its kind to the walk"},
    {"scan", scan, METH_VARARGS,
     "scan(box, budget) -> (elements, links) or None: the elements below box if all are "
     "inline and at most budget, the links among them"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_whole", "The scan of a box read whole, in C.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__whole(void)
{
    return PyModule_Create(&module);
}
