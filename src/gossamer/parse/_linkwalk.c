/* The search for a page's links in C: gossamer.parse.links._read_nodes over lexbor's tree.

   One depth-first walk of the tree under <html> (the root included, as lexbor's CSS search
   does) reads what `tree.css("[href], meta:not([href])")` and `_read_nodes` read together:
   the href of each <a>, <area> and <link> to follow (once each, in document order), the
   counts of followed and rel=nofollow links, the <meta> elements, the first <base href> and
   the first <link rel=canonical>. It makes no Python object for an element it does not
   return, where the Python path makes one per element the search finds and a dict of every
   attribute of each.

   It calls lexbor through the functions selectolax's own module exports (dlsym on the loaded
   module, `bind`), never through a struct's layout, and builds selectolax's LexborNode for
   the few elements it returns by selectolax's own type (`tp_new`), writing its two fields: a
   layout `bind` checks against a node selectolax made. Python code that reads the same
   (gossamer.parse.links) is the reference and stays: it runs when this module is not built
   or does not bind, and tests compare the two. */

#include "../_lexbor.h"
#include "_rel.h"
#include <string.h>

static uintptr_t TAG_A, TAG_AREA, TAG_LINK, TAG_META, TAG_BASE;

static int bound = 0;

static PyObject *
bind_lexbor(PyObject *self, PyObject *args)
{
    const char *path;
    PyObject *type, *sample, *tree;
    unsigned long long address, a, area, link, meta, base;
    if (!PyArg_ParseTuple(args, "sOOOKKKKKK", &path, &type, &sample, &tree, &address, &a, &area,
                          &link, &meta, &base))
        return NULL;
    if (lexbor_bind(path, type, sample, tree, address) < 0)
        return NULL;
    TAG_A = (uintptr_t)a;
    TAG_AREA = (uintptr_t)area;
    TAG_LINK = (uintptr_t)link;
    TAG_META = (uintptr_t)meta;
    TAG_BASE = (uintptr_t)base;
    bound = 1;
    Py_RETURN_NONE;
}

static int
same(const unsigned char *name, size_t length, const char *text)
{
    size_t size = strlen(text);
    return name != NULL && length == size && memcmp(name, text, size) == 0;
}

static PyObject *
decoded(const unsigned char *data, size_t length)
{
    if (data == NULL)
        return PyUnicode_FromStringAndSize("", 0);
    return PyUnicode_DecodeUTF8((const char *)data, (Py_ssize_t)length, "replace");
}

/* read(root, honour_nofollow, anchors) -> (hrefs, eligible, rel_nofollow, metas, base,
   canonical); `root` the <html> element (a LexborNode of a parsed document: its node and its
   tree are read from it, never taken as an address or an object of another type), `anchors`
   a list that gets (node, href) for each <a href>, or None. */
static PyObject *
read_links(PyObject *self, PyObject *args)
{
    PyObject *start, *anchors;
    int honour_nofollow;
    if (!PyArg_ParseTuple(args, "OpO", &start, &honour_nofollow, &anchors))
        return NULL;
    NodeObject *from = document_element(start, bound, "read");
    if (from == NULL)
        return NULL;
    PyObject *parser = from->parser; /* held by `start`, which the caller holds */
    if (anchors != Py_None && !PyList_Check(anchors)) {
        PyErr_SetString(PyExc_TypeError, "anchors: a list or None");
        return NULL;
    }
    node_t *root = from->node;
    PyObject *hrefs = PyDict_New();
    PyObject *metas = PyList_New(0);
    PyObject *base = NULL, *canonical = NULL;
    long eligible = 0, rel_nofollow = 0;
    if (hrefs == NULL || metas == NULL)
        goto fail;
    node_t *node = root;
    while (node != NULL) {
        if (type_of(node) == LEXBOR_ELEMENT) {
            uintptr_t tag = tag_id_of(node);
            if (tag == TAG_META) {
                PyObject *meta = make_node(node, parser);
                if (meta == NULL || PyList_Append(metas, meta) < 0) {
                    Py_XDECREF(meta);
                    goto fail;
                }
                Py_DECREF(meta);
            } else if (tag == TAG_A || tag == TAG_AREA || tag == TAG_LINK ||
                       (tag == TAG_BASE && base == NULL)) {
                int has_href = 0;
                const unsigned char *href = NULL, *rel = NULL;
                size_t href_length = 0, rel_length = 0;
                int has_rel = 0;
                for (attr_t *attr = first_attribute(node); attr != NULL;
                     attr = next_attribute(attr)) {
                    size_t length = 0;
                    const unsigned char *name = local_name(attr, &length);
                    if (same(name, length, "href"))
                        has_href = 1;
                    name = qualified_name(attr, &length);
                    if (same(name, length, "href")) {
                        href = value_of(attr, &href_length);
                    } else if (same(name, length, "rel")) {
                        rel = value_of(attr, &rel_length);
                        has_rel = 1;
                    }
                }
                if (has_href && tag == TAG_BASE) {
                    base = make_node(node, parser);
                    if (base == NULL)
                        goto fail;
                } else if (has_href) {
                    PyObject *text = decoded(href, href_length);
                    if (text == NULL)
                        goto fail;
                    if (anchors != Py_None && tag == TAG_A) {
                        PyObject *anchor = make_node(node, parser);
                        PyObject *pair = anchor ? PyTuple_Pack(2, anchor, text) : NULL;
                        Py_XDECREF(anchor);
                        if (pair == NULL || PyList_Append(anchors, pair) < 0) {
                            Py_XDECREF(pair);
                            Py_DECREF(text);
                            goto fail;
                        }
                        Py_DECREF(pair);
                    }
                    int follow = 1;
                    if (!(has_rel && rel != NULL && rel_length > 0) && tag != TAG_LINK) {
                        eligible++;
                    } else {
                        int tokens = has_rel && rel != NULL ? rel_tokens(rel, rel_length) : 0;
                        if (tokens < 0) {
                            Py_DECREF(text);
                            goto fail;
                        }
                        if (tag == TAG_LINK) {
                            if ((tokens & REL_CANONICAL) && canonical == NULL) {
                                canonical = make_node(node, parser);
                                if (canonical == NULL) {
                                    Py_DECREF(text);
                                    goto fail;
                                }
                            }
                            if ((tokens & REL_STYLESHEET) || !(tokens & REL_FOLLOWED))
                                follow = 0;
                        }
                        if (follow) {
                            eligible++;
                            if (honour_nofollow && (tokens & REL_NOFOLLOW)) {
                                rel_nofollow++;
                                follow = 0;
                            }
                        }
                    }
                    if (follow && PyDict_SetDefault(hrefs, text, Py_None) == NULL) {
                        Py_DECREF(text);
                        goto fail;
                    }
                    Py_DECREF(text);
                }
            }
        }
        node = next_below(node, root);
    }
    PyObject *links = PyDict_Keys(hrefs);
    Py_DECREF(hrefs);
    if (links == NULL) {
        hrefs = NULL;
        goto fail;
    }
    PyObject *result = Py_BuildValue("(NllNNN)", links, eligible, rel_nofollow, metas,
                                     base ? base : Py_NewRef(Py_None),
                                     canonical ? canonical : Py_NewRef(Py_None));
    return result;
fail:
    Py_XDECREF(hrefs);
    Py_XDECREF(metas);
    Py_XDECREF(base);
    Py_XDECREF(canonical);
    return NULL;
}

static PyMethodDef methods[] = {
    {"bind", bind_lexbor, METH_VARARGS,
     "bind(selectolax_lexbor_path, LexborNode, node, its tree, its mem_id, a, area, link, meta, "
     "base): check the layout on a node selectolax made; find lexbor's functions in "
     "selectolax's loaded module; the tag ids of the elements read."},
    {"read", read_links, METH_VARARGS,
     "read(root, honour_nofollow, anchors) -> (hrefs, eligible, rel_nofollow, metas, base, "
     "canonical): root, the <html> LexborNode of a parsed document"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_linkwalk", "The search for a page's links, in C.", -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__linkwalk(void)
{
    return PyModule_Create(&module);
}
