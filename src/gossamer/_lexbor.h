/* lexbor through selectolax, for gossamer's C parts that read its tree (parse/_linkwalk.c,
   extract/_whole.c, extract/_walk.c): each includes this header and has its own copy of what
   it holds.

   lexbor is reached through the functions selectolax's own loaded module exports (dlopen with
   RTLD_NOLOAD on its path, then dlsym), never through a struct's layout, so that a lexbor
   built otherwise breaks `lexbor_bind` (an ImportError: the Python code runs), not a read.
   selectolax's LexborNode is made by its own type (`tp_new`) with its two fields written, a
   layout `lexbor_bind` checks on a node selectolax made against the one its lexbor.pxd
   declares. */

#ifndef GOSSAMER_LEXBOR_H
#define GOSSAMER_LEXBOR_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <stdint.h>

typedef void node_t;
typedef void attr_t;

static node_t *(*first_child)(node_t *);
static node_t *(*next_sibling)(node_t *);
static node_t *(*parent_of)(node_t *);
static uintptr_t (*tag_id_of)(node_t *);
static int (*type_of)(node_t *);
static attr_t *(*first_attribute)(node_t *);
static attr_t *(*next_attribute)(attr_t *);
static const unsigned char *(*qualified_name)(attr_t *, size_t *);
static const unsigned char *(*local_name)(attr_t *, size_t *);
static const unsigned char *(*value_of)(attr_t *, size_t *);

enum { LEXBOR_ELEMENT = 1, LEXBOR_TEXT = 3 }; /* LXB_DOM_NODE_TYPE_ELEMENT, _TEXT */

typedef struct {
    PyObject_HEAD
    void *vtab;
    node_t *node;
    PyObject *parser;
    int is_fragment_root;
    int is_template_content;
} NodeObject; /* selectolax.lexbor.LexborNode, as its lexbor.pxd declares it */

static PyTypeObject *node_type = NULL;

/* Find lexbor's functions in selectolax's loaded module at `path` and take `type`, its
   LexborNode, once the layout is read off `sample`, a node selectolax made (of `tree`, its
   mem_id `address`): its type, size, node, tree and flags. 0, or -1 with an ImportError. */
static int
lexbor_bind(const char *path, PyObject *type, PyObject *sample, PyObject *tree,
            unsigned long long address)
{
    NodeObject *made = (NodeObject *)sample;
    if (!PyType_Check(type) || ((PyTypeObject *)type)->tp_basicsize != sizeof(NodeObject) ||
        Py_TYPE(sample) != (PyTypeObject *)type || made->node != (node_t *)(uintptr_t)address ||
        made->parser != tree || made->is_fragment_root != 0 || made->is_template_content != 0) {
        PyErr_SetString(PyExc_ImportError, "selectolax's LexborNode has another layout");
        return -1;
    }
    void *lib = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (lib == NULL) {
        PyErr_Format(PyExc_ImportError, "selectolax's module is not loaded: %s", dlerror());
        return -1;
    }
#define FIND(var, name)                                                                 \
    do {                                                                                \
        *(void **)(&var) = dlsym(lib, name);                                            \
        if (var == NULL) {                                                              \
            PyErr_Format(PyExc_ImportError, "lexbor's %s is not exported", name);       \
            return -1;                                                                  \
        }                                                                               \
    } while (0)
    FIND(first_child, "lxb_dom_node_first_child_noi");
    FIND(next_sibling, "lxb_dom_node_next_noi");
    FIND(parent_of, "lxb_dom_node_parent_noi");
    FIND(tag_id_of, "lxb_dom_node_tag_id_noi");
    FIND(type_of, "lxb_dom_node_type_noi");
    FIND(first_attribute, "lxb_dom_element_first_attribute_noi");
    FIND(next_attribute, "lxb_dom_element_next_attribute_noi");
    FIND(qualified_name, "lxb_dom_attr_qualified_name");
    FIND(local_name, "lxb_dom_attr_local_name_noi");
    FIND(value_of, "lxb_dom_attr_value_noi");
#undef FIND
    Py_INCREF(type);
    Py_XSETREF(node_type, (PyTypeObject *)type);
    return 0;
}

/* `start` as the element of a parsed document a function `what` of a module bound to lexbor
   (`bound`) reads: a LexborNode whose node and tree are read from it, never an address or an
   object of another type taken for one. NULL, with the error set, for anything else. */
static NodeObject *
document_element(PyObject *start, int bound, const char *what)
{
    if (!bound) {
        PyErr_SetString(PyExc_RuntimeError, "bind() first");
        return NULL;
    }
    if (Py_TYPE(start) != node_type) {
        PyErr_Format(PyExc_TypeError, "%s takes a LexborNode", what);
        return NULL;
    }
    NodeObject *from = (NodeObject *)start;
    if (from->node == NULL || from->parser == NULL || from->parser == Py_None ||
        from->is_fragment_root || from->is_template_content) {
        PyErr_Format(PyExc_ValueError, "%s takes an element of a parsed document", what);
        return NULL;
    }
    return from;
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

/* The node after `node` in document order below `root`: its first child, else the next
   sibling of it or of its nearest ancestor that has one, never above `root`; NULL at the
   end. */
static node_t *
next_below(node_t *node, node_t *root)
{
    node_t *next = first_child(node);
    if (next != NULL)
        return next;
    while (node != root && (next = next_sibling(node)) == NULL)
        node = parent_of(node);
    return node == root ? NULL : next;
}

#endif
