/* The walk of the tree model in C: gossamer.extract.walk._Walker over lexbor's tree.

   One depth-first pass over the children of a node, as `_Walker.visit` goes: every block-level
   element opens a box (its names read by Python, `named`), text is cut into blocks at the
   boxes (each block squashed by `squash` and built as a `Block`), boxes of text and inline
   elements alone are read whole (their text joined as lexbor joins it), boilerplate is
   skimmed (its text measured by `squashed_length`) and each box is totalled as it closes.
   Python objects are made only for what the result holds: the blocks, their text pieces and
   images, the boxes (built once, at the end, from their totals kept here), the skims. A text
   node becomes a str as selectolax makes one (its UTF-8 decoded with "replace": lone
   surrogates and stray bytes become U+FFFD), one by one, so a block's text is what the Python
   walk joins.

   Bounds, as the Python walk's: at most `max_nodes` elements read (a level stops at the
   first element past it, its text still read), children read at most `max_depth` levels
   down. The levels are frames of an array (grown as needed, at most `max_depth` + 2 deep):
   no C recursion, whatever the nesting. Time is linear in the nodes read and their text.

   It calls lexbor through the functions selectolax's module exports (`_lexbor.h`); a text
   node's characters are read at the offset lexbor.pxd declares for them, an offset `bind`
   checks on text nodes selectolax made (else an ImportError: the Python walk runs). The
   Python `_Walker` is the reference and stays: it runs where this module is not built, does
   not bind or GOSSAMER_NATIVE=0, and tests compare the two. */

#include "../_lexbor.h"
#include <stddef.h>
#include <string.h>

enum { INLINE = 0, LINK = 1, IMG = 2, BR = 3, SKIP = 4, BOX = 5 }; /* gossamer.extract.kinds */
enum { TEXT_ID = 2 };                                             /* lexbor's "-text" */
#define KINDS 65536 /* tag ids below this (lexbor's standard tags) have a kind */

/* What a box tag is to the walk (one byte per tag id, `flags`). */
enum {
    F_BOILERPLATE = 1, /* boxes.BOILERPLATE_TAGS */
    F_HEADER = 2,      /* boilerplate outside an article */
    F_NAMED = 4,       /* boxes.NAMED_TAGS: its names read */
    F_ARTICLE = 8,     /* boxes.ARTICLE_TAGS */
    F_WHOLE = 16,      /* boxes.WHOLE_TAGS: read whole when it can be */
    F_PARAGRAPH = 32,  /* p */
    F_ITEM = 64,       /* li */
};

static unsigned char kinds[KINDS], whole_kinds[KINDS], flags[KINDS];
static PyObject *tag_names = NULL; /* a tuple: the name of each box tag by id, else None */
static PyObject *make_box, *make_block, *named, *squash, *squashed_length;
static PyObject *DIV, *BODY, *EMPTY, *SPACE;
static Py_ssize_t max_nodes, max_depth;
/* lexbor.pxd's lxb_dom_node_t and lxb_dom_character_data_t: where a text node's characters
   are (`text_of`), an offset `bind` checks */
typedef struct {
    void *events;
    uintptr_t local_name, prefix, ns;
    void *owner_document, *next, *prev, *parent, *first_child, *last_child, *user;
    int type;
} pxd_node_t;
typedef struct {
    pxd_node_t node;
    struct {
        unsigned char *data;
        size_t length;
    } data;
} pxd_character_data_t;
static unsigned char *(*str_data)(void *);
static size_t (*str_length)(void *);
static int bound = 0;

/* A text node's UTF-8 characters (NULL: none), as selectolax reads them. */
static const unsigned char *
text_of(node_t *node, size_t *length)
{
    void *str = (char *)node + offsetof(pxd_character_data_t, data);
    *length = str_length(str);
    return str_data(str);
}

static int
is_space(Py_UCS4 c)
{
    return Py_UNICODE_ISSPACE(c);
}

/* len(text.strip()) */
static Py_ssize_t
stripped_length(PyObject *text)
{
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t start = 0, end = PyUnicode_GET_LENGTH(text);
    while (start < end && is_space(PyUnicode_READ(kind, data, start)))
        start++;
    while (end > start && is_space(PyUnicode_READ(kind, data, end - 1)))
        end--;
    return end - start;
}

/* len(text.strip()) of UTF-8 `bytes` decoded with "replace": ASCII without a str; -1 on an
   error. */
static Py_ssize_t
stripped_bytes(const unsigned char *bytes, size_t length)
{
    for (size_t i = 0; i < length; i++) {
        if (bytes[i] >= 0x80) {
            PyObject *text = PyUnicode_DecodeUTF8((const char *)bytes, (Py_ssize_t)length,
                                                  "replace");
            if (text == NULL)
                return -1;
            Py_ssize_t size = stripped_length(text);
            Py_DECREF(text);
            return size;
        }
    }
    size_t start = 0, end = length;
    while (start < end && is_space(bytes[start]))
        start++;
    while (end > start && is_space(bytes[end - 1]))
        end--;
    return (Py_ssize_t)(end - start);
}

/* lexbor's test of an empty text node (selectolax's is_empty_text_node): HTML's ASCII
   whitespace alone, or nothing. */
static int
is_empty_text(node_t *node)
{
    if (type_of(node) != LEXBOR_TEXT)
        return 0;
    size_t length;
    const unsigned char *bytes = text_of(node, &length);
    if (bytes == NULL)
        return 1;
    for (size_t i = 0; i < length; i++) {
        unsigned char c = bytes[i];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\f' && c != '\r')
            return 0;
    }
    return 1;
}

typedef struct {
    PyObject *tag;   /* borrowed: held by `tag_names` or the caller */
    PyObject *names; /* owned */
    double weight;
    Py_ssize_t parent, chars, link_chars, commas, blocks, paragraphs, items, images;
    char boilerplate, skimmed, ends_sentence;
} box_t;

typedef struct {
    node_t *next;  /* the next child to read; NULL: the level is done */
    Py_ssize_t depth;
    Py_ssize_t box;    /* whose text the level reads */
    Py_ssize_t parent; /* of the box the level opened; -1: it opened none */
    char in_link, in_article, quiet;
} frame_t;

typedef struct {
    PyObject *parser;
    int skim, quiet;
    box_t *boxes;
    Py_ssize_t nboxes, boxes_size;
    frame_t *frames;
    Py_ssize_t nframes, frames_size;
    PyObject *blocks, *parts, *images, *skims, *flagged;
    PyObject *tag; /* the block's, borrowed */
    Py_ssize_t box, link_chars, nodes;
    char *buffer; /* a box's text, joined */
    size_t buffer_size;
} walk_t;

static int
grow(void **array, Py_ssize_t *size, Py_ssize_t used, size_t item)
{
    if (used < *size)
        return 0;
    Py_ssize_t wanted = *size ? *size * 2 : 64;
    void *larger = PyMem_Realloc(*array, (size_t)wanted * item);
    if (larger == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    *array = larger;
    *size = wanted;
    return 0;
}

/* A text node's str as text_content makes it; NULL with no error where that is None. */
static PyObject *
text_str(node_t *node)
{
    if (type_of(node) != LEXBOR_TEXT)
        return NULL;
    size_t length;
    const unsigned char *bytes = text_of(node, &length);
    if (bytes == NULL)
        return NULL;
    return PyUnicode_DecodeUTF8((const char *)bytes, (Py_ssize_t)length, "replace");
}

/* Append `text` (a reference taken) to the block's parts, its stripped length to the link
   characters with `in_link`. */
static int
add_part(walk_t *w, PyObject *text, int in_link)
{
    int failed = PyList_Append(w->parts, text);
    if (!failed && in_link)
        w->link_chars += stripped_length(text);
    Py_DECREF(text);
    return failed ? -1 : 0;
}

/* node.text(): the text of every text node below `node`, joined, decoded once. */
static PyObject *
joined_text(walk_t *w, node_t *root)
{
    size_t used = 0;
    for (node_t *node = first_child(root); node != NULL; node = next_below(node, root)) {
        if (tag_id_of(node) != TEXT_ID)
            continue;
        size_t length;
        const unsigned char *bytes = text_of(node, &length);
        if (bytes == NULL || length == 0)
            continue;
        if (used + length > w->buffer_size) {
            size_t wanted = w->buffer_size ? w->buffer_size : 4096;
            while (wanted < used + length)
                wanted *= 2;
            char *larger = PyMem_Realloc(w->buffer, wanted);
            if (larger == NULL) {
                PyErr_NoMemory();
                return NULL;
            }
            w->buffer = larger;
            w->buffer_size = wanted;
        }
        memcpy(w->buffer + used, bytes, length);
        used += length;
    }
    return PyUnicode_DecodeUTF8(w->buffer, (Py_ssize_t)used, "replace");
}

/* len(node.text(True, "", True)): each text node below `root` stripped. -1 on an error. */
static Py_ssize_t
stripped_text(node_t *root)
{
    Py_ssize_t total = 0;
    for (node_t *node = first_child(root); node != NULL; node = next_below(node, root)) {
        if (tag_id_of(node) != TEXT_ID)
            continue;
        size_t length;
        const unsigned char *bytes = text_of(node, &length);
        if (bytes == NULL)
            continue;
        Py_ssize_t size = stripped_bytes(bytes, length);
        if (size < 0)
            return -1;
        total += size;
    }
    return total;
}

/* Commas of a block, Arabic, full-width and ideographic ones too (`_commas`). */
static Py_ssize_t
commas_of(PyObject *text)
{
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t count = 0;
    for (Py_ssize_t i = 0, n = PyUnicode_GET_LENGTH(text); i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        count += c == ',' || c == 0x060c || c == 0xff0c || c == 0x3001;
    }
    return count;
}

static int
ends_sentence(PyObject *text)
{
    Py_UCS4 c = PyUnicode_READ_CHAR(text, PyUnicode_GET_LENGTH(text) - 1);
    return c == '.' || c == '!' || c == '?' || c == 0x3002 || c == 0xff01 || c == 0xff1f;
}

static PyObject *
new_block(PyObject *tag, Py_ssize_t box, PyObject *text, Py_ssize_t links, PyObject *images,
          Py_ssize_t size, Py_ssize_t commas)
{
    PyObject *args[7] = {tag, PyLong_FromSsize_t(box), text, PyLong_FromSsize_t(links),
                         images, PyFloat_FromDouble((double)links / (double)size),
                         PyLong_FromSsize_t(commas)};
    PyObject *block = NULL;
    if (args[1] != NULL && args[3] != NULL && args[5] != NULL && args[6] != NULL)
        block = PyObject_Vectorcall(make_block, args, 7, NULL);
    Py_XDECREF(args[1]);
    Py_XDECREF(args[3]);
    Py_XDECREF(args[5]);
    Py_XDECREF(args[6]);
    return block;
}

/* `_Walker._close`: the text read so far made a block of the box it is in; then the walk
   reads the text of `box` (`next_tag` the tag of its blocks). */
static int
close_text(walk_t *w, PyObject *next_tag, Py_ssize_t box)
{
    Py_ssize_t images = PyList_GET_SIZE(w->images);
    if (PyList_GET_SIZE(w->parts) > 0) {
        PyObject *text = PyObject_CallOneArg(squash, w->parts);
        if (text == NULL || !PyUnicode_Check(text) ||
            PyList_SetSlice(w->parts, 0, PyList_GET_SIZE(w->parts), NULL) < 0) {
            if (text != NULL && !PyUnicode_Check(text))
                PyErr_SetString(PyExc_TypeError, "squash gave no str");
            Py_XDECREF(text);
            return -1;
        }
        Py_ssize_t size = PyUnicode_GET_LENGTH(text);
        if (size > 0) {
            Py_ssize_t links = w->link_chars < size ? w->link_chars : size;
            Py_ssize_t commas = commas_of(text);
            PyObject *block = new_block(w->tag, w->box, text, links, w->images, size, commas);
            PyObject *fresh = block != NULL ? PyList_New(0) : NULL;
            if (fresh == NULL || PyList_Append(w->blocks, block) < 0) {
                Py_XDECREF(fresh);
                Py_XDECREF(block);
                Py_DECREF(text);
                return -1;
            }
            Py_DECREF(block);
            box_t *owner = &w->boxes[w->box];
            owner->chars += size;
            owner->blocks += 1;
            owner->link_chars += links;
            owner->commas += commas;
            owner->images += images;
            owner->ends_sentence = (char)ends_sentence(text);
            Py_SETREF(w->images, fresh);
        } else if (images && w->quiet && PyList_SetSlice(w->images, 0, images, NULL) < 0) {
            Py_DECREF(text);
            return -1;
        }
        Py_DECREF(text);
    } else if (images && w->quiet && PyList_SetSlice(w->images, 0, images, NULL) < 0) {
        return -1; /* a logo or an icon */
    }
    w->tag = next_tag;
    w->box = box;
    w->link_chars = 0;
    return 0;
}

/* `_Walker._read_whole`: 1 if box `node` was read in one piece, 0 if it must be walked. */
static int
read_whole(walk_t *w, node_t *node, int in_link)
{
    node_t *first = first_child(node);
    if (first == NULL)
        return 1;
    uintptr_t first_id = tag_id_of(first);
    if (first_id == TEXT_ID) {
        if (next_sibling(first) == NULL) {
            PyObject *text = text_str(first);
            if (text == NULL)
                return PyErr_Occurred() ? -1 : 1;
            if (PyUnicode_GET_LENGTH(text) == 0) {
                Py_DECREF(text);
                return 1;
            }
            return add_part(w, text, in_link) < 0 ? -1 : 1;
        }
    } else if ((first_id < KINDS ? whole_kinds[first_id] : INLINE) > LINK) {
        return 0;
    }
    /* the scan of `kinds.scan_whole`: links counted where it would make them */
    Py_ssize_t budget = max_nodes - w->nodes, elements = 0, links = 0;
    for (node_t *at = first; at != NULL; at = next_below(at, node)) {
        if (type_of(at) == LEXBOR_TEXT)
            continue;
        uintptr_t tag = tag_id_of(at);
        int kind = tag < KINDS ? whole_kinds[tag] : INLINE;
        if (kind != INLINE && kind != LINK)
            return 0;
        links += kind == LINK;
        if (++elements > budget)
            return 0;
    }
    if (elements > budget)
        return 0;
    w->nodes += elements;
    PyObject *text = joined_text(w, node);
    if (text == NULL)
        return -1;
    if (PyUnicode_GET_LENGTH(text) == 0) {
        Py_DECREF(text);
        return 1;
    }
    if (add_part(w, text, 0) < 0)
        return -1;
    if (!in_link && !links)
        return 1;
    Py_ssize_t chars = 0;
    if (in_link) {
        chars = stripped_text(node);
    } else { /* each link's text (a link holds no link: it would need a box in between) */
        for (node_t *at = first; at != NULL && chars >= 0; at = next_below(at, node)) {
            uintptr_t tag = tag_id_of(at);
            if (type_of(at) != LEXBOR_TEXT && tag < KINDS && whole_kinds[tag] == LINK) {
                Py_ssize_t size = stripped_text(at);
                chars = size < 0 ? -1 : chars + size;
            }
        }
    }
    if (chars < 0)
        return -1;
    w->link_chars += chars;
    return 1;
}

/* `_Walker._skim`: only the length of the text of box `index` measured, where the walk
   stands kept. */
static int
skim_box(walk_t *w, Py_ssize_t index, node_t *node, Py_ssize_t depth, int in_link,
         int in_article)
{
    PyObject *text = joined_text(w, node);
    if (text == NULL)
        return -1;
    PyObject *length = PyObject_CallOneArg(squashed_length, text);
    Py_DECREF(text);
    if (length == NULL)
        return -1;
    Py_ssize_t chars = PyLong_AsSsize_t(length);
    Py_DECREF(length);
    if (chars == -1 && PyErr_Occurred())
        return -1;
    box_t *box = &w->boxes[index];
    box->skimmed = 1;
    box->chars = chars;
    box->link_chars = chars / 2; /* SKIMMED_LINK_SHARE */
    PyObject *at = make_node(node, w->parser);
    if (at == NULL)
        return -1;
    PyObject *skim = Py_BuildValue("(nNnnNNN)", index, at, PyList_GET_SIZE(w->blocks), depth,
                                   PyBool_FromLong(in_link), PyBool_FromLong(in_article),
                                   PyBool_FromLong(PyList_GET_SIZE(w->images) > 0));
    if (skim == NULL)
        return -1;
    int failed = PyList_Append(w->skims, skim);
    Py_DECREF(skim);
    return failed;
}

/* The names of a box that may be named: (names, weight, boilerplate) from `named`. */
static int
read_names(walk_t *w, node_t *node, box_t *box)
{
    PyObject *at = make_node(node, w->parser);
    if (at == NULL)
        return -1;
    PyObject *found = PyObject_CallOneArg(named, at);
    Py_DECREF(at);
    if (found == NULL)
        return -1;
    PyObject *names;
    double weight;
    int boilerplate;
    if (!PyArg_ParseTuple(found, "Udp", &names, &weight, &boilerplate)) {
        Py_DECREF(found);
        return -1;
    }
    Py_INCREF(names);
    Py_SETREF(box->names, names);
    Py_DECREF(found);
    box->weight = weight;
    box->boilerplate |= (char)boilerplate;
    return 0;
}

/* Enter a level: walk the children of `node` in box `box`; with `tag_id`, `node` is a box
   tag and opens a box inside `box` first (`_Walker._visit`'s opening half). */
static int
enter(walk_t *w, node_t *node, Py_ssize_t depth, Py_ssize_t box, int in_link, int in_article,
      uintptr_t tag_id)
{
    if (grow((void **)&w->frames, &w->frames_size, w->nframes, sizeof(frame_t)) < 0)
        return -1;
    frame_t frame = {NULL, depth, box, -1, (char)in_link, (char)in_article, (char)w->quiet};
    int walk = 1;
    if (tag_id) {
        unsigned char is = flags[tag_id];
        PyObject *tag = PyTuple_GET_ITEM(tag_names, (Py_ssize_t)tag_id);
        if (grow((void **)&w->boxes, &w->boxes_size, w->nboxes, sizeof(box_t)) < 0)
            return -1;
        box_t *opened = &w->boxes[w->nboxes];
        memset(opened, 0, sizeof(box_t));
        opened->tag = tag;
        opened->names = Py_NewRef(EMPTY);
        opened->parent = box;
        opened->boilerplate = (is & F_BOILERPLATE) || ((is & F_HEADER) && !in_article);
        opened->paragraphs = (is & F_PARAGRAPH) != 0;
        opened->items = (is & F_ITEM) != 0;
        frame.parent = box;
        box = frame.box = w->nboxes++;
        if ((is & F_NAMED) && first_attribute(node) != NULL && read_names(w, node, opened) < 0)
            return -1;
        int boilerplate = opened->boilerplate;
        if (boilerplate) {
            PyObject *index = PyLong_FromSsize_t(box);
            if (index == NULL || PyList_Append(w->flagged, index) < 0) {
                Py_XDECREF(index);
                return -1;
            }
            Py_DECREF(index);
        }
        if (PyList_GET_SIZE(w->parts) || PyList_GET_SIZE(w->images)) {
            if (close_text(w, tag, box) < 0)
                return -1;
        } else {
            w->tag = tag;
            w->box = box;
        }
        in_article = frame.in_article = in_article || (is & F_ARTICLE);
        if (boilerplate && w->skim) {
            if (skim_box(w, box, node, depth, in_link, in_article) < 0)
                return -1;
            walk = 0;
        } else {
            w->quiet = w->quiet || boilerplate;
            if (is & F_WHOLE) {
                int whole = read_whole(w, node, in_link);
                if (whole < 0)
                    return -1;
                walk = !whole;
            }
        }
    }
    if (walk && depth <= max_depth)
        frame.next = first_child(node);
    w->frames[w->nframes++] = frame;
    return 0;
}

/* Leave a level: a box it opened closes (`_Walker._visit`'s closing half). */
static int
leave(walk_t *w, const frame_t *frame)
{
    if (frame->parent < 0)
        return 0;
    if (PyList_GET_SIZE(w->parts) || PyList_GET_SIZE(w->images)) {
        if (close_text(w, DIV, frame->parent) < 0)
            return -1;
    } else {
        w->tag = DIV;
        w->box = frame->parent;
    }
    w->quiet = frame->quiet;
    box_t *opened = &w->boxes[frame->box], *into = &w->boxes[frame->parent];
    if (opened->chars) {
        into->chars += opened->chars;
        into->link_chars += opened->link_chars;
        into->commas += opened->commas;
        into->blocks += opened->blocks;
        into->images += opened->images;
    }
    into->paragraphs += opened->paragraphs;
    into->items += opened->items;
    return 0;
}

/* A text child of the level: one part of the block (spaces opening a block dropped). */
static int
read_text(walk_t *w, node_t *child, int in_link)
{
    if (PyList_GET_SIZE(w->parts) == 0 && is_empty_text(child))
        return 0;
    PyObject *text = text_str(child);
    if (text == NULL)
        return PyErr_Occurred() ? -1 : 0;
    Py_ssize_t size = PyUnicode_GET_LENGTH(text);
    int keep = size > 0;
    if (keep && PyList_GET_SIZE(w->parts) == 0) { /* not text.isspace() */
        int kind = PyUnicode_KIND(text);
        const void *data = PyUnicode_DATA(text);
        keep = 0;
        for (Py_ssize_t i = 0; i < size && !keep; i++)
            keep = !is_space(PyUnicode_READ(kind, data, i));
    }
    if (!keep) {
        Py_DECREF(text);
        return 0;
    }
    return add_part(w, text, in_link);
}

/* An element child of the level that is not a box (`kind` below BOX). */
static int
read_inline(walk_t *w, node_t *child, int kind, const frame_t *frame)
{
    if (kind <= LINK) { /* most elements: spans, links, code */
        node_t *first = first_child(child);
        if (first == NULL)
            return 0;
        if (tag_id_of(first) == TEXT_ID && next_sibling(first) == NULL) { /* <a>words</a> */
            PyObject *text = text_str(first);
            if (text == NULL)
                return PyErr_Occurred() ? -1 : 0;
            if (PyUnicode_GET_LENGTH(text) == 0) {
                Py_DECREF(text);
                return 0;
            }
            return add_part(w, text, frame->in_link || kind);
        }
        return enter(w, child, frame->depth + 1, frame->box, frame->in_link || kind == LINK,
                     frame->in_article, 0);
    }
    if (kind == IMG) {
        PyObject *image = make_node(child, w->parser);
        if (image == NULL)
            return -1;
        int failed = PyList_Append(w->images, image);
        Py_DECREF(image);
        return failed;
    }
    if (kind == BR)
        return PyList_Append(w->parts, SPACE); /* a line break spaces the block */
    return 0; /* SKIP */
}

/* The walk: every level read to its end, boxes entered as met. */
static int
run(walk_t *w)
{
    while (w->nframes > 0) {
        frame_t frame = w->frames[w->nframes - 1];
        node_t *child = frame.next;
        if (child == NULL) {
            w->nframes--;
            if (leave(w, &frame) < 0)
                return -1;
            continue;
        }
        w->frames[w->nframes - 1].next = next_sibling(child);
        uintptr_t tag = tag_id_of(child);
        if (tag == TEXT_ID) {
            if (read_text(w, child, frame.in_link) < 0)
                return -1;
            continue;
        }
        if (++w->nodes > max_nodes) {
            w->frames[w->nframes - 1].next = NULL;
            continue;
        }
        int kind = tag < KINDS ? kinds[tag] : INLINE;
        int failed = kind == BOX ? enter(w, child, frame.depth + 1, frame.box, frame.in_link,
                                         frame.in_article, tag)
                                 : read_inline(w, child, kind, &frame);
        if (failed < 0)
            return -1;
    }
    return 0;
}

static PyObject *
boxes_made(walk_t *w)
{
    PyObject *boxes = PyList_New(w->nboxes);
    if (boxes == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < w->nboxes; i++) {
        box_t *b = &w->boxes[i];
        PyObject *args[14] = {
            b->tag,
            PyLong_FromSsize_t(b->parent),
            b->names,
            PyFloat_FromDouble(b->weight),
            b->boilerplate ? Py_True : Py_False,
            b->skimmed ? Py_True : Py_False,
            PyLong_FromSsize_t(b->chars),
            PyLong_FromSsize_t(b->link_chars),
            PyLong_FromSsize_t(b->commas),
            PyLong_FromSsize_t(b->blocks),
            b->ends_sentence ? Py_True : Py_False,
            PyLong_FromSsize_t(b->paragraphs),
            PyLong_FromSsize_t(b->items),
            PyLong_FromSsize_t(b->images),
        };
        static const int made[] = {1, 3, 6, 7, 8, 9, 11, 12, 13};
        int ok = 1;
        for (size_t k = 0; k < sizeof(made) / sizeof(made[0]); k++)
            ok = ok && args[made[k]] != NULL;
        PyObject *box = ok ? PyObject_Vectorcall(make_box, args, 14, NULL) : NULL;
        for (size_t k = 0; k < sizeof(made) / sizeof(made[0]); k++)
            Py_XDECREF(args[made[k]]);
        if (box == NULL) {
            Py_DECREF(boxes);
            return NULL;
        }
        PyList_SET_ITEM(boxes, i, box);
    }
    return boxes;
}

static void
release(walk_t *w)
{
    for (Py_ssize_t i = 0; i < w->nboxes; i++)
        Py_XDECREF(w->boxes[i].names);
    PyMem_Free(w->boxes);
    PyMem_Free(w->frames);
    PyMem_Free(w->buffer);
    Py_XDECREF(w->blocks);
    Py_XDECREF(w->parts);
    Py_XDECREF(w->images);
    Py_XDECREF(w->skims);
    Py_XDECREF(w->flagged);
}

/* walk(node, skim, depth, in_link, in_article, first) -> (boxes, blocks, flagged, nodes,
   skims): see the module's comment and `gossamer.extract.walk`. */
static PyObject *
walk(PyObject *self, PyObject *args)
{
    PyObject *start, *first;
    int skim, in_link, in_article;
    Py_ssize_t depth;
    if (!PyArg_ParseTuple(args, "OpnppO", &start, &skim, &depth, &in_link, &in_article, &first))
        return NULL;
    NodeObject *from = document_element(start, bound, "walk");
    if (from == NULL)
        return NULL;
    PyObject *tag = BODY, *names = EMPTY;
    double weight = 0.0;
    if (first != Py_None && !PyArg_ParseTuple(first, "UUd", &tag, &names, &weight))
        return NULL;
    walk_t w = {0};
    w.parser = from->parser; /* held by `start`, which the caller holds */
    w.skim = skim;
    w.quiet = first != Py_None;
    w.tag = first != Py_None ? tag : DIV;
    w.blocks = PyList_New(0);
    w.parts = PyList_New(0);
    w.images = PyList_New(0);
    w.skims = PyList_New(0);
    w.flagged = PyList_New(0);
    PyObject *result = NULL;
    if (w.blocks == NULL || w.parts == NULL || w.images == NULL || w.skims == NULL ||
        w.flagged == NULL || grow((void **)&w.boxes, &w.boxes_size, 0, sizeof(box_t)) < 0)
        goto done;
    memset(&w.boxes[0], 0, sizeof(box_t));
    w.boxes[0].tag = tag;
    w.boxes[0].names = Py_NewRef(names);
    w.boxes[0].weight = weight;
    w.boxes[0].parent = -1;
    w.boxes[0].boilerplate = first != Py_None;
    w.nboxes = 1;
    if (enter(&w, from->node, depth, 0, in_link, in_article, 0) < 0 || run(&w) < 0 ||
        close_text(&w, DIV, 0) < 0)
        goto done;
    PyObject *boxes = boxes_made(&w);
    if (boxes != NULL)
        result = Py_BuildValue("(NOOnO)", boxes, w.blocks, w.flagged, w.nodes, w.skims);
done:
    release(&w);
    return result;
}

/* bind(path, LexborNode, node, tree, mem_id, text node, its text, kinds, whole kinds, flags,
   tag names, Box, Block, named, squash, squashed_length, max_nodes, max_depth) */
static PyObject *
bind_lexbor(PyObject *self, PyObject *args)
{
    const char *path;
    PyObject *type, *sample, *tree, *text, *names, *box, *block, *reader, *squasher, *measurer;
    unsigned long long address;
    Py_buffer expected, table, whole, flagged;
    Py_ssize_t nodes, depth;
    if (!PyArg_ParseTuple(args, "sOOOKOy*y*y*y*O!OOOOOnn", &path, &type, &sample, &tree,
                          &address, &text, &expected, &table, &whole, &flagged, &PyTuple_Type,
                          &names, &box, &block, &reader, &squasher, &measurer, &nodes, &depth))
        return NULL;
    PyObject *result = NULL;
    if (table.len > KINDS || whole.len > KINDS || flagged.len > KINDS ||
        PyTuple_GET_SIZE(names) > KINDS) {
        PyErr_SetString(PyExc_ValueError, "a table holds one entry per tag id below 65536");
        goto done;
    }
    for (Py_ssize_t i = 0; i < table.len; i++) {
        if (((const unsigned char *)table.buf)[i] == BOX &&
            (i >= flagged.len || i >= PyTuple_GET_SIZE(names) ||
             !PyUnicode_Check(PyTuple_GET_ITEM(names, i)))) {
            PyErr_SetString(PyExc_ValueError, "a box tag without a name");
            goto done;
        }
    }
    if (lexbor_bind(path, type, sample, tree, address) < 0)
        goto done;
    void *lib = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (lib == NULL ||
        (*(void **)(&str_data) = dlsym(lib, "lexbor_str_data_noi")) == NULL ||
        (*(void **)(&str_length) = dlsym(lib, "lexbor_str_length_noi")) == NULL) {
        PyErr_SetString(PyExc_ImportError, "lexbor's string functions are not exported");
        goto done;
    }
    /* where lexbor.pxd says a text node's characters are, checked on a text node selectolax
       made against the text it read there */
    NodeObject *made = (NodeObject *)text;
    size_t length = 0;
    const unsigned char *read;
    if (Py_TYPE(text) != node_type || made->node == NULL || type_of(made->node) != LEXBOR_TEXT ||
        (read = text_of(made->node, &length)) == NULL || length != (size_t)expected.len ||
        memcmp(read, expected.buf, length) != 0) {
        PyErr_SetString(PyExc_ImportError, "lexbor's text node has another layout");
        goto done;
    }
    memset(kinds, INLINE, sizeof(kinds));
    memcpy(kinds, table.buf, (size_t)table.len);
    memset(whole_kinds, INLINE, sizeof(whole_kinds));
    memcpy(whole_kinds, whole.buf, (size_t)whole.len);
    memset(flags, 0, sizeof(flags));
    memcpy(flags, flagged.buf, (size_t)flagged.len);
    Py_INCREF(names);
    Py_XSETREF(tag_names, names);
    Py_INCREF(box);
    Py_XSETREF(make_box, box);
    Py_INCREF(block);
    Py_XSETREF(make_block, block);
    Py_INCREF(reader);
    Py_XSETREF(named, reader);
    Py_INCREF(squasher);
    Py_XSETREF(squash, squasher);
    Py_INCREF(measurer);
    Py_XSETREF(squashed_length, measurer);
    max_nodes = nodes;
    max_depth = depth;
    bound = 1;
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&expected);
    PyBuffer_Release(&table);
    PyBuffer_Release(&whole);
    PyBuffer_Release(&flagged);
    return result;
}

static PyMethodDef methods[] = {
    {"bind", bind_lexbor, METH_VARARGS,
     "bind(selectolax_lexbor_path, LexborNode, node, its tree, its mem_id, a text node, its "
     "text as UTF-8, kinds, whole kinds, box flags, box tag names, Box, Block, named, squash, "
     "squashed_length, max_nodes, max_depth): check the layouts on nodes selectolax made; find "
     "lexbor's functions in selectolax's loaded module; the tables by tag id"},
    {"walk", walk, METH_VARARGS,
     "walk(node, skim, depth, in_link, in_article, first) -> (boxes, blocks, flagged, nodes, "
     "skims): the children of node walked in box 0, first None (a page's body box) or "
     "(tag, names, weight) of a skimmed box walked again"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_walk", "The walk of the tree model, in C.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__walk(void)
{
    DIV = PyUnicode_InternFromString("div");
    BODY = PyUnicode_InternFromString("body");
    EMPTY = PyUnicode_InternFromString("");
    SPACE = PyUnicode_InternFromString(" ");
    if (DIV == NULL || BODY == NULL || EMPTY == NULL || SPACE == NULL)
        return NULL;
    return PyModule_Create(&module);
}
