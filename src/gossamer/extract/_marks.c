/* The search for a page's metadata marks in C: gossamer.extract.meta's query
   `tree.css(_OTHER_MARKS)` over lexbor's tree.

   One depth-first walk of the tree under <html> (the root included, as lexbor's CSS search
   does; a <template>'s content is no child, so left out as there) finds the elements of
   script[type="application/ld+json"], [itemprop]:is([itemprop=datePublished],
   [itemprop=author]), time[datetime] and [rel~=author], in document order, each once per
   selector it matches, as lexbor's search returns them. It compares what lexbor's selectors
   compare: the tag ids (an <svg>'s <script> is a script), the attributes' local names (an
   <svg>'s xlink:type is a type), `type` and `rel` ignoring ASCII case on HTML elements only
   (exactly on SVG's and MathML's), `itemprop` exactly, and a rel's words split at HTML's
   spaces (space, tab, line feed, form feed, carriage return). lexbor's search looks the attribute name `itemprop`, unknown to it,
   up on every element, half of what the query costs; here a name is compared only to the
   names an element has. The Python query (gossamer.extract.meta) is the reference and stays:
   it runs when this module is not built or does not bind, and tests compare the two. */

#include "../_lexbor.h"
#include <string.h>

static uintptr_t TAG_SCRIPT, TAG_TIME;
static const unsigned char *(*tag_name_of)(node_t *, size_t *);
static const unsigned char *(*qualified_name_of)(node_t *, size_t *);

static int bound = 0;

static PyObject *
bind_lexbor(PyObject *self, PyObject *args)
{
    const char *path;
    PyObject *type, *sample, *tree;
    unsigned long long address, script, time;
    if (!PyArg_ParseTuple(args, "sOOOKKK", &path, &type, &sample, &tree, &address, &script,
                          &time))
        return NULL;
    if (lexbor_bind(path, type, sample, tree, address) < 0)
        return NULL;
    void *lib = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (lib != NULL) {
        *(void **)(&tag_name_of) = dlsym(lib, "lxb_dom_element_tag_name");
        *(void **)(&qualified_name_of) = dlsym(lib, "lxb_dom_element_qualified_name");
    }
    if (lib == NULL || tag_name_of == NULL || qualified_name_of == NULL) {
        PyErr_SetString(PyExc_ImportError, "lexbor's element names are not exported");
        return NULL;
    }
    TAG_SCRIPT = (uintptr_t)script;
    TAG_TIME = (uintptr_t)time;
    bound = 1;
    Py_RETURN_NONE;
}

static int
same(const unsigned char *name, size_t length, const char *text)
{
    size_t size = strlen(text);
    return name != NULL && length == size && memcmp(name, text, size) == 0;
}

static unsigned char
lower(unsigned char c)
{
    return c >= 'A' && c <= 'Z' ? (unsigned char)(c + 32) : c;
}

/* `text` and `word` (lower case ASCII) the same but for ASCII case. */
static int
same_ignoring_case(const unsigned char *text, size_t length, const char *word)
{
    size_t size = strlen(word);
    if (text == NULL || length != size)
        return 0;
    for (size_t i = 0; i < size; i++)
        if (lower(text[i]) != (unsigned char)word[i])
            return 0;
    return 1;
}

/* Whether `node` (an element) is in the HTML namespace: lexbor's tag name is then its
   qualified name in upper case, another string, and elsewhere the qualified name itself
   (lxb_dom_element_tag_name, which makes the upper case name once per element). Asked only
   of an element whose `type` or `rel` matches but for ASCII case. */
static int
is_html(node_t *node)
{
    size_t length = 0;
    return tag_name_of(node, &length) != qualified_name_of(node, &length);
}

/* Whether `value` is `word` (lower case ASCII): exactly, or on an HTML element but for ASCII
   case, as lexbor's selectors compare `type` and `rel` in an HTML document. */
static int
same_word(node_t *node, const unsigned char *value, size_t length, const char *word)
{
    if (same(value, length, word))
        return 1;
    return same_ignoring_case(value, length, word) && is_html(node);
}

static int
is_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r';
}

/* Whether the words of `rel` (split at HTML's spaces) hold `author` (`same_word`). */
static int
names_author(node_t *node, const unsigned char *rel, size_t length)
{
    size_t i = 0;
    while (i < length) {
        while (i < length && is_space(rel[i]))
            i++;
        size_t start = i;
        while (i < length && !is_space(rel[i]))
            i++;
        if (same_word(node, rel + start, i - start, "author"))
            return 1;
    }
    return 0;
}

/* How many of the four selectors `node` (an element) matches. As lexbor's selectors, it reads
   the first attribute of each local name only (an <svg>'s element may have a type and an
   xlink:type). */
static int
matches(node_t *node)
{
    uintptr_t tag = tag_id_of(node);
    int found = 0, type = 0, itemprop = 0, datetime = 0, rel = 0;
    for (attr_t *attr = first_attribute(node); attr != NULL; attr = next_attribute(attr)) {
        size_t length = 0;
        const unsigned char *name = local_name(attr, &length);
        if (name == NULL)
            continue;
        size_t size = 0;
        if (tag == TAG_SCRIPT && !type && same(name, length, "type")) {
            type = 1;
            const unsigned char *value = value_of(attr, &size);
            found += value != NULL && same_word(node, value, size, "application/ld+json");
        } else if (!itemprop && same(name, length, "itemprop")) {
            itemprop = 1;
            const unsigned char *value = value_of(attr, &size);
            found += same(value, size, "datePublished") || same(value, size, "author");
        } else if (tag == TAG_TIME && !datetime && same(name, length, "datetime")) {
            datetime = 1;
            found += 1;
        } else if (!rel && same(name, length, "rel")) {
            rel = 1;
            const unsigned char *value = value_of(attr, &size);
            found += value != NULL && names_author(node, value, size);
        }
    }
    return found;
}

/* read(root, limit) -> [LexborNode]: the elements under `root` (the <html> element of a
   parsed document, included) that the query's selectors match, each once per selector, at
   most `limit` of them. */
static PyObject *
read_marks(PyObject *self, PyObject *args)
{
    PyObject *start;
    Py_ssize_t limit;
    if (!PyArg_ParseTuple(args, "On", &start, &limit))
        return NULL;
    NodeObject *from = document_element(start, bound, "read");
    if (from == NULL)
        return NULL;
    PyObject *parser = from->parser; /* held by `start`, which the caller holds */
    node_t *root = from->node;
    PyObject *found = PyList_New(0);
    if (found == NULL)
        return NULL;
    for (node_t *node = root; node != NULL && PyList_GET_SIZE(found) < limit;
         node = next_below(node, root)) {
        if (type_of(node) != LEXBOR_ELEMENT)
            continue;
        int times = matches(node);
        if (times == 0)
            continue;
        PyObject *mark = make_node(node, parser);
        if (mark == NULL)
            goto fail;
        for (int i = 0; i < times && PyList_GET_SIZE(found) < limit; i++) {
            if (PyList_Append(found, mark) < 0) {
                Py_DECREF(mark);
                goto fail;
            }
        }
        Py_DECREF(mark);
    }
    return found;
fail:
    Py_DECREF(found);
    return NULL;
}

static PyMethodDef methods[] = {
    {"bind", bind_lexbor, METH_VARARGS,
     "bind(selectolax_lexbor_path, LexborNode, node, its tree, its mem_id, script, time): "
     "check the layout on a node selectolax made; find lexbor's functions in selectolax's "
     "loaded module; the tag ids of the elements read."},
    {"read", read_marks, METH_VARARGS,
     "read(root, limit) -> [LexborNode]: the marks under root (the <html> LexborNode of a "
     "parsed document), each once per selector it matches, at most limit"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_marks", "The search for a page's metadata marks, in C.", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__marks(void)
{
    return PyModule_Create(&module);
}
