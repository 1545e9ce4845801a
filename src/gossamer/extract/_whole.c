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

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

typedef void node_t;

static node_t *(*first_child)(node_t *);
static node_t *(*next_sibling)(node_t *);
static node_t *(*parent_of)(node_t *);
static uintptr_t (*tag_id_of)(node_t *);
static int (*type_of)(node_t *);

typedef struct {
    PyObject_HEAD
    void *vtab;
    node_t *node;
    PyObject *parser;
    int is_fragment_root;
    int is_template_content;
} NodeObject; /* selectolax.lexbor.LexborNode, as its lexbor.pxd declares it */

static PyTypeObject *node_type = NULL;
static const int TEXT = 3; /* LXB_DOM_NODE_TYPE_TEXT */

enum { INLINE = 0, LINK = 1 }; /* kinds, as gossamer.extract.walk numbers them */
#define KINDS 65536            /* tag ids below this (lexbor's standard tags) have a kind */
static unsigned char kinds[KINDS];
static int bound = 0;

static PyObject *
bind_lexbor(PyObject *self, PyObject *args)
{
    const char *path;
    PyObject *type;
    Py_buffer table;
    if (!PyArg_ParseTuple(args, "sOy*", &path, &type, &table))
        return NULL;
    if (table.len > KINDS) {
        PyBuffer_Release(&table);
        PyErr_SetString(PyExc_ValueError, "kinds: one byte per tag id below 65536");
        return NULL;
    }
    memset(kinds, INLINE, sizeof(kinds));
    memcpy(kinds, table.buf, (size_t)table.len);
    PyBuffer_Release(&table);
    if (!PyType_Check(type) || ((PyTypeObject *)type)->tp_basicsize != sizeof(NodeObject)) {
        PyErr_SetString(PyExc_ImportError, "selectolax's LexborNode has another layout");
        return NULL;
    }
    void *lib = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (lib == NULL) {
        PyErr_Format(PyExc_ImportError, "selectolax's module is not loaded: %s", dlerror());
        return NULL;
    }
#define FIND(var, name)                                                                 \
    do {                                                                                \
        *(void **)(&var) = dlsym(lib, name);                                            \
        if (var == NULL) {                                                              \
            PyErr_Format(PyExc_ImportError, "lexbor's %s is not exported", name);       \
            return NULL;                                                                \
        }                                                                               \
    } while (0)
    FIND(first_child, "lxb_dom_node_first_child_noi");
    FIND(next_sibling, "lxb_dom_node_next_noi");
    FIND(parent_of, "lxb_dom_node_parent_noi");
    FIND(tag_id_of, "lxb_dom_node_tag_id_noi");
    FIND(type_of, "lxb_dom_node_type_noi");
#undef FIND
    Py_INCREF(type);
    Py_XSETREF(node_type, (PyTypeObject *)type);
    bound = 1;
    Py_RETURN_NONE;
}

/* A LexborNode for `node` of the tree `parser`, as selectolax's LexborNode.new makes it. */
static PyObject *
make_node(node_t *node, PyObject *parser)
{
    PyObject *empty = PyTuple_New(0);
    if (empty == NULL)
        return NULL;
    PyObject *made = node_type->tp_new(node_type, empty, NULL);
    Py_DECREF(empty);
    if (made == NULL)
        return NULL;
    NodeObject *obj = (NodeObject *)made;
    obj->node = node;
    Py_INCREF(parser);
    Py_XSETREF(obj->parser, parser);
    obj->is_fragment_root = 0;
    obj->is_template_content = 0;
    return made;
}

/* scan(box, budget) -> (elements, links) or None: see the module's comment. */
static PyObject *
scan(PyObject *self, PyObject *args)
{
    PyObject *box;
    Py_ssize_t budget;
    if (!PyArg_ParseTuple(args, "On", &box, &budget))
        return NULL;
    if (!bound) {
        PyErr_SetString(PyExc_RuntimeError, "bind() first");
        return NULL;
    }
    if (Py_TYPE(box) != node_type) {
        PyErr_SetString(PyExc_TypeError, "scan takes a LexborNode");
        return NULL;
    }
    NodeObject *start = (NodeObject *)box;
    if (start->node == NULL || start->is_fragment_root || start->is_template_content) {
        PyErr_SetString(PyExc_ValueError, "scan takes an element of a parsed document");
        return NULL;
    }
    node_t *root = start->node;
    PyObject *links = PyList_New(0);
    if (links == NULL)
        return NULL;
    Py_ssize_t elements = 0;
    node_t *node = first_child(root);
    while (node != NULL) {
        if (type_of(node) != TEXT) {
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
        /* the next node in document order: the first child, else the next sibling of the
           node or of its nearest ancestor that has one, never above the box */
        node_t *next = first_child(node);
        if (next == NULL) {
            while (node != root && (next = next_sibling(node)) == NULL)
                node = parent_of(node);
            if (node == root)
                next = NULL;
        }
        node = next;
    }
    if (elements > budget) { /* a budget below zero */
        Py_DECREF(links);
        Py_RETURN_NONE;
    }
    return Py_BuildValue("(nN)", elements, links);
}

static PyMethodDef methods[] = {
    {"bind", bind_lexbor, METH_VARARGS,
     "bind(selectolax_lexbor_path, LexborNode, kinds): find lexbor's functions in "
     "selectolax's loaded module; kinds: a byte per tag id, its kind to the walk"},
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
