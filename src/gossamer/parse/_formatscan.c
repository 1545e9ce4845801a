/* The formatting scan in C: gossamer.parse.formatting._rebuilt_bytes_regex's reading.

   It reads what the regex `_OPEN_BYTES` finds and `_TAG_BYTES` measures on the document's
   ASCII lower-case copy (`bytes.lower()`), without the copy: names are compared
   case-insensitively, the other bytes the regexes name are not letters. Every `<` is tried,
   as `finditer` tries it. Each part of the regex is a function here that returns where its
   match ends, or NONE: the regex's quantifiers are possessive and its alternatives start
   with different bytes, so each part matches in one way or not at all and no function
   backtracks. The nesting is the regex's own (an element holds text, void tags, spans and
   closed formatting elements of text; a span holds text and spans of text), a fixed depth:
   no recursion on the input's. Every index is checked against the length before it is read.
   A try reads on from its `<` as far as the regex does: its tag, then the text, void tags,
   spans and closed elements that follow, up to the first other tag. A byte is read by the
   tries of the start tag whose element holds it, of a closed element inside that and of the
   tags whose quoted values reach it, so the scan is linear in practice, as the regex is (the
   tests time the shapes that make tries read far), in a few indexes of memory.

   scan(data) -> (listed, anchor, nobr, tags): the sum of the costs of the formatting start tags
   not closed at once but `<a>`, the largest cost of an `<a>` not closed at once, the `<nobr>`
   among the first, and the document's `<` (each found once, as the scan looks for the next),
   for a document of at most 2**28 bytes (the regex reads larger ones). The
   Python wrapper (`rebuilt_bytes`) makes the bound of them. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define NONE SIZE_MAX

enum { ELEMENT_BYTES = 390, ATTRIBUTE_BYTES = 195 };

/* The formatting names `_NAMES` and `a`, at most 6 letters each (`name_index` finds them). */
static const char *const NAMES[] = {"a",    "b",     "big",    "code",   "em", "font", "i",
                                    "nobr", "s",     "small",  "strike", "strong", "tt", "u"};
enum { NAME_A = 0, NAME_NOBR = 7, LONGEST = 6 };

typedef struct {
    const unsigned char *d;
    size_t n;
} text_t;

static inline unsigned char
lower(unsigned char c)
{
    return c >= 'A' && c <= 'Z' ? (unsigned char)(c + 32) : c;
}

/* `_S`: tab, line feed, form feed, carriage return, space (no vertical tab). */
static inline int
is_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r';
}

static inline int
is_separator(unsigned char c)
{
    return is_space(c) || c == '/';
}

/* `[^{_S}/>\"'<=]`: an attribute name's byte. */
static inline int
is_name_byte(unsigned char c)
{
    return !is_separator(c) && c != '>' && c != '"' && c != '\'' && c != '<' && c != '=';
}

/* `[^{_S}>\"'<=`]`: an unquoted value's byte. */
static inline int
is_unquoted_byte(unsigned char c)
{
    return !is_space(c) && c != '>' && c != '"' && c != '\'' && c != '<' && c != '=' && c != '`';
}

static inline size_t
skip_spaces(text_t t, size_t i)
{
    while (i < t.n && is_space(t.d[i]))
        i++;
    return i;
}

/* Where `text` (lower case, NUL-terminated) ends if it starts at `i`, case-insensitively. */
static size_t
literal(text_t t, size_t i, const char *text)
{
    for (; *text; text++, i++)
        if (i >= t.n || lower(t.d[i]) != (unsigned char)*text)
            return NONE;
    return i;
}

/* `_ATTRIBUTES` from `i`: where it ends (it always matches, maybe empty). */
static size_t
attributes(text_t t, size_t i)
{
    while (i < t.n && is_separator(t.d[i])) {
        while (i < t.n && is_separator(t.d[i]))
            i++;
        if (i >= t.n || !is_name_byte(t.d[i]))
            continue; /* separators alone: the next try needs a separator */
        while (i < t.n && is_name_byte(t.d[i]))
            i++;
        size_t j = skip_spaces(t, i);
        if (j >= t.n || t.d[j] != '=')
            continue; /* no value */
        j = skip_spaces(t, j + 1);
        if (j >= t.n)
            continue;
        unsigned char c = t.d[j];
        if (c == '"' || c == '\'') {
            const unsigned char *close = memchr(t.d + j + 1, c, t.n - j - 1);
            if (close != NULL) /* else no value: the name ends the attribute */
                i = (size_t)(close - t.d) + 1;
        } else if (is_unquoted_byte(c)) {
            while (j < t.n && is_unquoted_byte(t.d[j]))
                j++;
            i = j;
        }
    }
    return i;
}

/* `{_ATTRIBUTES}>` from `i` (`_TAG_BYTES.match`): where the tag ends, or NONE. */
static size_t
tag_end(text_t t, size_t i)
{
    i = attributes(t, i);
    return i < t.n && t.d[i] == '>' ? i + 1 : NONE;
}

static inline int
same(const char *name, size_t length, const char *text, size_t text_length)
{
    return length == text_length && memcmp(name, text, length) == 0;
}

/* The index in NAMES of `name` (`length` lower-case letters), or -1. */
static int
name_index(const char *name, size_t length)
{
    switch (name[0]) {
    case 'a':
        return length == 1 ? NAME_A : -1;
    case 'b':
        return length == 1 ? 1 : same(name, length, "big", 3) ? 2 : -1;
    case 'c':
        return same(name, length, "code", 4) ? 3 : -1;
    case 'e':
        return same(name, length, "em", 2) ? 4 : -1;
    case 'f':
        return same(name, length, "font", 4) ? 5 : -1;
    case 'i':
        return length == 1 ? 6 : -1;
    case 'n':
        return same(name, length, "nobr", 4) ? NAME_NOBR : -1;
    case 's':
        if (length == 1)
            return 8;
        if (same(name, length, "small", 5))
            return 9;
        return same(name, length, "strike", 6) ? 10 : same(name, length, "strong", 6) ? 11 : -1;
    case 't':
        return same(name, length, "tt", 2) ? 12 : -1;
    case 'u':
        return length == 1 ? 13 : -1;
    default:
        return -1;
    }
}

/* The formatting name (index in NAMES) at `i` followed by one of `{_S}/>`, or -1; `*end`
   where the name ends. */
static int
formatting_name(text_t t, size_t i, size_t *end)
{
    char name[LONGEST];
    size_t k = 0;
    for (; i + k < t.n; k++) {
        unsigned char c = lower(t.d[i + k]);
        if (c < 'a' || c > 'z')
            break;
        if (k == LONGEST)
            return -1;
        name[k] = (char)c;
    }
    if (k == 0 || i + k >= t.n)
        return -1;
    unsigned char next = t.d[i + k];
    if (!is_separator(next) && next != '>')
        return -1;
    int found = name_index(name, k);
    if (found >= 0)
        *end = i + k;
    return found;
}

/* `</{name}[{_S}]*+>` at `i`: where it ends, or NONE. */
static size_t
end_tag(text_t t, size_t i, const char *name)
{
    if (i + 1 >= t.n || t.d[i] != '<' || t.d[i + 1] != '/')
        return NONE;
    i = literal(t, i + 2, name);
    if (i == NONE)
        return NONE;
    i = skip_spaces(t, i);
    return i < t.n && t.d[i] == '>' ? i + 1 : NONE;
}

/* `<{name}{_ATTRIBUTES}>` at `i`: where it ends, or NONE. */
static size_t
start_tag(text_t t, size_t i, const char *name)
{
    if (i >= t.n || t.d[i] != '<')
        return NONE;
    i = literal(t, i + 1, name);
    return i == NONE ? NONE : tag_end(t, i);
}

/* `[^<]++`: where the text from `i` ends, or NONE if there is none. */
static size_t
plain_text(text_t t, size_t i)
{
    if (i >= t.n || t.d[i] == '<')
        return NONE;
    const unsigned char *next = memchr(t.d + i, '<', t.n - i);
    return next == NULL ? t.n : (size_t)(next - t.d);
}

/* `_SPAN`: `<span{_ATTRIBUTES}>[^<]*+</span[{_S}]*+>` at `i`, or NONE. */
static size_t
inner_span(text_t t, size_t i)
{
    i = start_tag(t, i, "span");
    if (i == NONE)
        return NONE;
    size_t text = plain_text(t, i);
    return end_tag(t, text == NONE ? i : text, "span");
}

/* `_TEXT` at `i`: text, a void tag, or a span of text and spans; where it ends, or NONE. */
static size_t
text_item(text_t t, size_t i)
{
    size_t end = plain_text(t, i);
    if (end != NONE || i >= t.n)
        return end;
    static const char *const voids[] = {"br", "img", "wbr"};
    for (size_t v = 0; v < 3; v++)
        if ((end = start_tag(t, i, voids[v])) != NONE)
            return end;
    i = start_tag(t, i, "span");
    if (i == NONE)
        return NONE;
    for (;;) {
        if ((end = plain_text(t, i)) == NONE && (end = inner_span(t, i)) == NONE)
            break;
        i = end;
    }
    return end_tag(t, i, "span");
}

/* `(?:{_TEXT})*+` from `i`: where it ends. */
static size_t
text_items(text_t t, size_t i)
{
    size_t end;
    while ((end = text_item(t, i)) != NONE)
        i = end;
    return i;
}

/* `_NESTED` at `i`: a formatting element of text closed at once; where it ends, or NONE. */
static size_t
nested(text_t t, size_t i)
{
    size_t name_end;
    if (i >= t.n || t.d[i] != '<')
        return NONE;
    int name = formatting_name(t, i + 1, &name_end);
    if (name < 0)
        return NONE;
    size_t end = tag_end(t, name_end);
    return end == NONE ? NONE : end_tag(t, text_items(t, end), NAMES[name]);
}

/* `_OPEN`'s negative lookahead from `name_end`: whether the element is closed at once. */
static int
closed_at_once(text_t t, size_t name_end, int name)
{
    size_t i = tag_end(t, name_end);
    if (i == NONE)
        return 0;
    for (;;) {
        size_t end = text_item(t, i);
        if (end == NONE && (end = nested(t, i)) == NONE)
            break;
        i = end;
    }
    return end_tag(t, i, NAMES[name]) != NONE;
}

/* Past this many bytes a sum of costs could pass 64 bits (a cost is at most 196 bytes a byte
   of the document, plus 390, and there are at most half as many tags as bytes). */
#define MOST_BYTES ((size_t)1 << 28)

typedef struct {
    uint64_t listed, anchor, nobr, tags;
} found_t;

static void
read_document(text_t t, found_t *found)
{
    const unsigned char *next;
    for (size_t at = 0; at < t.n && (next = memchr(t.d + at, '<', t.n - at)) != NULL;
         at = (size_t)(next - t.d) + 1) {
        size_t start = (size_t)(next - t.d), name_end;
        found->tags++;
        int name = formatting_name(t, start + 1, &name_end);
        if (name < 0 || closed_at_once(t, name_end, name))
            continue;
        size_t end = tag_end(t, name_end);
        uint64_t attribute_count, length;
        if (end == NONE) { /* not written plainly: its tag could hold the rest */
            attribute_count = length = t.n - start;
        } else {
            length = end - start;
            attribute_count = 0;
            for (size_t k = name_end; k < end; k++)
                attribute_count += is_separator(t.d[k]);
        }
        uint64_t cost = ELEMENT_BYTES + ATTRIBUTE_BYTES * attribute_count + length;
        if (name == NAME_A) {
            if (cost > found->anchor)
                found->anchor = cost;
        } else {
            found->listed += cost;
            found->nobr += name == NAME_NOBR;
        }
    }
}

static PyObject *
scan(PyObject *self, PyObject *args)
{
    Py_buffer buffer;
    if (!PyArg_ParseTuple(args, "y*", &buffer))
        return NULL;
    text_t t = {(const unsigned char *)buffer.buf, (size_t)buffer.len};
    if (t.n > MOST_BYTES) {
        PyBuffer_Release(&buffer);
        PyErr_Format(PyExc_OverflowError, "more than %zu bytes", MOST_BYTES);
        return NULL;
    }
    found_t found = {0, 0, 0, 0};
    read_document(t, &found); /* the GIL held: a page takes microseconds, a handover more */
    PyBuffer_Release(&buffer);
    return Py_BuildValue("(KKKK)", (unsigned long long)found.listed,
                         (unsigned long long)found.anchor, (unsigned long long)found.nobr,
                         (unsigned long long)found.tags);
}

/* count(data, most) -> the `<` of `data`, counted a block of `COUNT_STEP` bytes at a time up
   to the end of the block in which the count passed `most` (the whole of `data` when it
   holds at most `most`): `gossamer.page.sandboxed._count`'s reading. Eight bytes a step: a
   byte of `x` is zero where `data` holds `<`; its top bit, set in `zero` exactly there (no
   carry crosses a byte: the low seven bits are added apart), is summed byte-wise in `sums`,
   each byte at most 255 steps, then added up. */
enum { COUNT_STEP = 16 * 1024 };

static size_t
count_lt(const unsigned char *d, size_t n)
{
    const uint64_t ones = 0x0101010101010101ULL, low7 = 0x7f7f7f7f7f7f7f7fULL;
    const uint64_t marks = ones * '<';
    size_t count = 0, i = 0;
    while (n - i >= 8) {
        uint64_t sums = 0;
        for (int step = 0; step < 255 && n - i >= 8; step++, i += 8) {
            uint64_t word;
            memcpy(&word, d + i, 8);
            uint64_t x = word ^ marks;
            uint64_t zero = ~(((x & low7) + low7) | x) & ~low7;
            sums += zero >> 7;
        }
        uint64_t pairs = (sums & 0x00ff00ff00ff00ffULL) + ((sums >> 8) & 0x00ff00ff00ff00ffULL);
        count += (size_t)((pairs * 0x0001000100010001ULL) >> 48);
    }
    for (; i < n; i++)
        count += d[i] == '<';
    return count;
}

static PyObject *
count(PyObject *self, PyObject *args)
{
    Py_buffer buffer;
    Py_ssize_t most;
    if (!PyArg_ParseTuple(args, "y*n", &buffer, &most))
        return NULL;
    const unsigned char *d = (const unsigned char *)buffer.buf;
    size_t n = (size_t)buffer.len, found = 0;
    for (size_t start = 0; start < n && (Py_ssize_t)found <= most; start += COUNT_STEP)
        found += count_lt(d + start, n - start < COUNT_STEP ? n - start : COUNT_STEP);
    PyBuffer_Release(&buffer);
    return PyLong_FromSize_t(found);
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS,
     "scan(data) -> (listed, anchor, nobr, tags): the formatting start tags of `data` (bytes, "
     "at most 2**28) not closed at once, as gossamer.parse.formatting's regex reads them: the "
     "sum of their costs but <a>'s, the largest <a>'s, the <nobr> among them; its '<'."},
    {"count", count, METH_VARARGS,
     "count(data, most) -> the '<' of `data` (bytes), counted 16 KiB at a time until the count "
     "passes `most`: exact when it is at most `most`, else some number past it."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_formatscan", "The formatting scan, in C.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__formatscan(void)
{
    return PyModule_Create(&module);
}
