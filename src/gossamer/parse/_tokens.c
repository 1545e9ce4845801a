/* A page's links, title and head read from lexbor's tokenizer alone, without its tree: the C
   part of gossamer.parse.links.parse_tokens (whose doc says where it differs from the tree).

   lexbor's HTML tokenizer runs as its tree builder runs it, minus the tree: a callback gets
   each token, switches the tokenizer's state after the start tags whose text the tree builder
   reads raw (<script>, <style>, <title>, <textarea>, <plaintext> ...) outside SVG and MathML,
   and keeps what `_linkwalk` reads of the tree: the href of each <a>, <area> and <link> to
   follow (once each, in document order), the counts of followed and rel=nofollow links, the
   <meta> elements' attributes, the first <base href>, the first <link rel=canonical> (and
   whether it is in the head), and the first <title>'s text. Building no tree halves lexbor's
   cost on real pages.

   Its functions are found in selectolax's loaded module (dlsym); a token is read through its
   struct as lexbor 2 lays it out (`token_t` below), which gossamer.parse.native checks by
   reading a sample once bound: a lexbor laid out otherwise is not used (the tree is read). The
   tokenizer keeps duplicate attributes (lexbor's check of each against the tag's others is
   quadratic in a tag's attributes; the tree builder does its own): the callback reads the first
   of a name, as the tree keeps it. A document it cannot read as the tree would (a <frameset>,
   a CDATA section in SVG, an end tag in SVG it cannot place, a template in an island or of
   table parts, a title past TITLE_BYTES, SVG inside an HTML island of SVG ...) makes `read`
   answer None, the tokenizer stopped there: the caller parses the tree. */

#define _GNU_SOURCE /* memrchr */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "_rel.h"

typedef struct token_attr token_attr_t;
struct token_attr { /* lxb_html_token_attr_t */
    const unsigned char *name_begin, *name_end, *value_begin, *value_end;
    const void *name;
    unsigned char *value;
    size_t value_size;
    token_attr_t *next, *prev;
    int type;
};
typedef struct { /* lxb_html_token_t */
    const unsigned char *begin, *end, *text_start, *text_end;
    token_attr_t *attr_first, *attr_last;
    void *base_element;
    size_t null_count;
    uintptr_t tag_id;
    int type;
} token_t;

enum { CLOSE = 0x0001, CLOSE_SELF = 0x0002 };  /* LXB_HTML_TOKEN_TYPE_ */
enum { VALUE_NULL = 0x0002 };                   /* LXB_HTML_TOKEN_ATTR_TYPE_VALUE_NULL */
enum { TAG_TEXT = 0x0002 };                     /* LXB_TAG__TEXT */
#define TITLE_BYTES (64 * 1024)
#define FOREIGN_DEPTH 256
#define ISLAND_DEPTH 32
#define TEMPLATE_DEPTH 64

typedef void tokenizer_t;
typedef token_t *(*callback_f)(tokenizer_t *, token_t *, void *);

static tokenizer_t *(*tk_create)(void);
static int (*tk_init)(tokenizer_t *);
static int (*tk_begin)(tokenizer_t *);
static int (*tk_chunk)(tokenizer_t *, const unsigned char *, size_t);
static int (*tk_end)(tokenizer_t *);
static tokenizer_t *(*tk_destroy)(tokenizer_t *);
static void (*tk_state_by_tag)(tokenizer_t *, int, uintptr_t, uintptr_t);
static void (*tk_callback)(tokenizer_t *, callback_f, void *);
static void (*tk_keep_duplicate)(tokenizer_t *, int);
static const unsigned char *(*attr_name)(token_attr_t *, size_t *);

/* What each tag id is to the callback (ids of the standard tags, told by `bind`). */
enum {
    K_A = 1 << 0, K_AREA = 1 << 1, K_LINK = 1 << 2, K_META = 1 << 3, K_BASE = 1 << 4,
    K_TITLE = 1 << 5, K_TEMPLATE = 1 << 6, K_FOREIGN = 1 << 7, K_RAW = 1 << 8,
    K_HEAD_OK = 1 << 9, K_BREAKOUT = 1 << 10, K_ISLAND = 1 << 11, K_NOSCRIPT = 1 << 12,
    K_HEAD_NOSCRIPT_OK = 1 << 13, K_FRAMESET = 1 << 14, K_HEAD_END = 1 << 15,
    K_BODY_END = 1 << 16, K_FONT = 1 << 17, K_HTML = 1 << 18, K_MATH = 1 << 19,
    K_MATH_ISLAND = 1 << 20, K_BR = 1 << 21, K_VOID = 1 << 22, K_TABLE_PART = 1 << 23,
    K_COPIED = 1 << 24, K_MATH_TEXT = 1 << 25,
};
#define KINDS 1024
static uint32_t kinds[KINDS];
static uintptr_t NS_HTML;
static int bound = 0;

static uint32_t
kind(uintptr_t tag)
{
    return tag < KINDS ? kinds[tag] : 0;
}

typedef struct {
    PyObject *hrefs, *metas, *base, *canonical;
    long eligible, rel_nofollow;
    int honour_nofollow;
    int failed;   /* a Python error is set */
    int unread;   /* the tree would read the document otherwise: answer None */
    int spent;    /* the budget ran out before the end: answer None */
    int body;     /* past the head (the tree's "in body" or later) */
    int head_noscript, after_head;
    int templates;
    int template_foreign[TEMPLATE_DEPTH], template_island[TEMPLATE_DEPTH];
    uintptr_t html_open[ISLAND_DEPTH]; /* the HTML elements open in an island */
    int html_depth;
    int foreign, island; /* SVG/MathML elements open; the depth of an HTML island in them */
    uint32_t islands;    /* the kind of the islands of the open SVG or MathML */
    uintptr_t open[FOREIGN_DEPTH]; /* their tag ids */
    int titled, in_title;
    int raw; /* in the text of a raw text element (its text is not the body's) */
    unsigned char *title;
    size_t title_size, title_room;
} ctx_t;

static PyObject *
text_of(const unsigned char *data, size_t length)
{
    if (data == NULL)
        return Py_NewRef(Py_None);
    return PyUnicode_DecodeUTF8((const char *)data, (Py_ssize_t)length, "replace");
}

static int
named(token_attr_t *attr, const char *text)
{
    size_t length = 0, size = strlen(text);
    const unsigned char *name = attr_name(attr, &length);
    return name != NULL && length == size && memcmp(name, text, size) == 0;
}

/* A start tag's attributes as a dict (what the tree's `.attributes` gives), or NULL. */
static PyObject *
attributes_of(ctx_t *ctx, token_t *token)
{
    PyObject *found = PyDict_New();
    if (found == NULL)
        return NULL;
    for (token_attr_t *attr = token->attr_first; attr != NULL; attr = attr->next) {
        if (attr->type & VALUE_NULL) {
            ctx->unread = 1;
            break;
        }
        size_t length = 0;
        const unsigned char *name = attr_name(attr, &length);
        PyObject *key = text_of(name, length);
        PyObject *value = key ? text_of(attr->value, attr->value_size) : NULL;
        int failed = value == NULL || PyDict_SetDefault(found, key, value) == NULL;
        Py_XDECREF(key);
        Py_XDECREF(value);
        if (failed) {
            Py_DECREF(found);
            return NULL;
        }
    }
    return found;
}

static void
link_of(ctx_t *ctx, token_t *token, uint32_t is)
{
    int has_href = 0, has_rel = 0;
    token_attr_t *href = NULL, *rel = NULL;
    for (token_attr_t *attr = token->attr_first; attr != NULL; attr = attr->next) {
        if (named(attr, "href")) { /* the first of a name, as the tree keeps it */
            if (href == NULL)
                href = attr;
            has_href = 1;
        } else if (named(attr, "rel")) {
            if (rel == NULL)
                rel = attr;
            has_rel = 1;
        } else if (ctx->foreign && !ctx->island && named(attr, "xlink:href")) {
            has_href = 1; /* the tree's local name: an href it reads as "" */
        }
    }
    if (!has_href)
        return;
    if ((href != NULL && (href->type & VALUE_NULL)) || (rel != NULL && (rel->type & VALUE_NULL))) {
        ctx->unread = 1;
        return;
    }
    if (is & K_BASE) {
        if (ctx->base == NULL) {
            ctx->base = PyDict_New();
            PyObject *value = ctx->base ? text_of(href ? href->value : NULL,
                                                  href ? href->value_size : 0) : NULL;
            if (value == NULL || PyDict_SetItemString(ctx->base, "href", value) < 0)
                ctx->failed = 1;
            Py_XDECREF(value);
        }
        return;
    }
    const unsigned char *value = href && href->value ? href->value : (const unsigned char *)"";
    size_t size = href && href->value ? href->value_size : 0;
    int follow = 1;
    int rel_given = has_rel && rel->value != NULL && rel->value_size > 0;
    if (!rel_given && !(is & K_LINK)) {
        ctx->eligible++;
    } else {
        int tokens = rel_given ? rel_tokens(rel->value, rel->value_size) : 0;
        if (tokens < 0) {
            ctx->failed = 1;
            return;
        }
        if (is & K_LINK) {
            if ((tokens & REL_CANONICAL) && ctx->canonical == NULL) {
                ctx->canonical = Py_BuildValue(
                    "(NNO)", href ? text_of(value, size) : Py_NewRef(Py_None),
                    text_of(rel_given ? rel->value : (const unsigned char *)"",
                            rel_given ? rel->value_size : 0),
                    ctx->body || ctx->foreign ? Py_False : Py_True);
                if (ctx->canonical == NULL) {
                    ctx->failed = 1;
                    return;
                }
            }
            if ((tokens & REL_STYLESHEET) || !(tokens & REL_FOLLOWED))
                follow = 0;
        }
        if (follow) {
            ctx->eligible++;
            if (ctx->honour_nofollow && (tokens & REL_NOFOLLOW)) {
                ctx->rel_nofollow++;
                follow = 0;
            }
        }
    }
    if (!follow)
        return;
    PyObject *text = text_of(value, size);
    if (text == NULL || PyDict_SetDefault(ctx->hrefs, text, Py_None) == NULL)
        ctx->failed = 1;
    Py_XDECREF(text);
}

static void
title_text(ctx_t *ctx, token_t *token)
{
    if (token->null_count > 0) {
        ctx->unread = 1;
        return;
    }
    size_t size = (size_t)(token->text_end - token->text_start);
    if (ctx->title_size + size > TITLE_BYTES) {
        ctx->unread = 1;
        return;
    }
    if (ctx->title_size + size > ctx->title_room) {
        size_t room = ctx->title_room ? ctx->title_room : 256;
        while (room < ctx->title_size + size)
            room *= 2;
        unsigned char *grown = PyMem_Realloc(ctx->title, room);
        if (grown == NULL) {
            PyErr_NoMemory();
            ctx->failed = 1;
            return;
        }
        ctx->title = grown;
        ctx->title_room = room;
    }
    if (size)
        memcpy(ctx->title + ctx->title_size, token->text_start, size);
    ctx->title_size += size;
}

static int
blank(const unsigned char *from, const unsigned char *to)
{
    for (; from < to; from++)
        if (!(*from == ' ' || *from == '\t' || *from == '\n' || *from == '\f' || *from == '\r'))
            return 0;
    return 1;
}

/* Where the tree builder would leave its head for its body (a simplified "in head", "in head
   noscript" and "after head"), on a token outside a template. */
static void
head_step(ctx_t *ctx, token_t *token, uint32_t is)
{
    if (token->tag_id == TAG_TEXT) {
        if (!blank(token->text_start, token->text_end))
            ctx->body = 1;
        return;
    }
    if (token->tag_id < TAG_TEXT || token->tag_id == 4 || token->tag_id == 5)
        return; /* end of file, comments, doctypes */
    if (token->type & CLOSE) {
        if (ctx->head_noscript) { /* ignored there but its own and </br> */
            if (is & K_NOSCRIPT)
                ctx->head_noscript = 0;
            else if (is & K_BR)
                ctx->body = 1;
        } else if (is & K_BODY_END) {
            ctx->body = 1;
        } else if (is & K_HEAD_END) {
            ctx->after_head = 1;
        }
        return;
    }
    if (ctx->head_noscript) { /* its own head tags stay, another noscript is ignored */
        if (is & (K_HEAD_NOSCRIPT_OK | K_NOSCRIPT | K_HTML))
            return;
        ctx->head_noscript = 0; /* the noscript closes; the tag is read in the head */
        if (!(is & K_HEAD_OK))
            ctx->body = 1;
        return;
    }
    if (is & K_NOSCRIPT) { /* after the head, it opens the body */
        if (ctx->after_head)
            ctx->body = 1;
        else
            ctx->head_noscript = 1;
        return;
    }
    if (!(is & (K_HEAD_OK | K_HTML)))
        ctx->body = 1;
}

static void read_token(tokenizer_t *tkz, token_t *token, ctx_t *ctx);

/* Each token: read, and the tokenizer stopped (NULL) once the answer is known to be None or
   an error, so that no more of the document is read (as text the tree would not tokenize). */
static token_t *
on_token(tokenizer_t *tkz, token_t *token, void *data)
{
    ctx_t *ctx = data;
    read_token(tkz, token, ctx);
    return ctx->failed || ctx->unread ? NULL : token;
}

/* An end tag in an HTML island of SVG or MathML: the island's HTML elements close, then the
   island, and from the island with none open the SVG or MathML element it names; what could
   close more than this model holds is left to the tree. */
static void
island_end(ctx_t *ctx, uintptr_t tag)
{
    if (ctx->html_depth > 0) {
        if (ctx->html_open[ctx->html_depth - 1] == tag)
            ctx->html_depth--;
        else
            ctx->unread = 1;
        return;
    }
    int at = ctx->foreign;
    while (at > 0 && ctx->open[at - 1] != tag)
        at--;
    if (at == 0) {
        ctx->unread = 1;
        return;
    }
    ctx->foreign = at - 1;
    ctx->island = 0;
}

static void
read_token(tokenizer_t *tkz, token_t *token, ctx_t *ctx)
{
    uintptr_t tag = token->tag_id;
    if (ctx->in_title) {
        if (tag == TAG_TEXT) {
            title_text(ctx, token);
            return;
        }
        ctx->in_title = 0; /* RCDATA ends at its end tag (or the end of the file) */
    }
    if (ctx->raw) {
        if (tag == TAG_TEXT)
            return;
        ctx->raw = 0; /* raw text ends at its end tag (or the end of the file) */
    }
    uint32_t is = kind(tag);
    int closing = (token->type & CLOSE) != 0;
    int html = !ctx->foreign || ctx->island;
    if (!closing && tag > TAG_TEXT && ctx->foreign && !ctx->island) {
        int breakout = (is & K_BREAKOUT) != 0;
        if (!breakout && (is & K_FONT)) {
            for (token_attr_t *a = token->attr_first; a != NULL; a = a->next)
                if (named(a, "color") || named(a, "face") || named(a, "size"))
                    breakout = 1;
        }
        if (breakout) {
            ctx->foreign = ctx->island = 0;
            html = 1;
        }
    }
    if (tag == 4 && ctx->foreign && token->text_end - token->text_start >= 7 &&
        memcmp(token->text_start, "[CDATA[", 7) == 0) {
        ctx->unread = 1; /* a CDATA section, text in SVG and MathML: the tree's to read */
        return;
    }
    if (!ctx->templates && !ctx->body && html)
        head_step(ctx, token, is);
    if (tag <= TAG_TEXT || tag == 4 || tag == 5)
        return;
    if (closing) {
        int at = ctx->foreign;
        if (ctx->foreign && !ctx->island)
            while (at > 0 && ctx->open[at - 1] != tag)
                at--;
        if ((is & K_TEMPLATE) && ctx->templates > 0 && (!ctx->foreign || ctx->island || !at)) {
            /* the template closes, and what was opened in it */
            ctx->templates--;
            ctx->foreign = ctx->template_foreign[ctx->templates];
            ctx->island = ctx->template_island[ctx->templates];
            ctx->html_depth = 0;
        } else if (ctx->island) {
            island_end(ctx, tag);
        } else if (ctx->foreign) {
            /* an end tag in SVG or MathML closes the nearest open element of its name and
               those it holds; one of no open element's name may close an HTML element below
               them: past this model */
            if (at > 0)
                ctx->foreign = at - 1;
            else
                ctx->unread = 1;
        }
        return;
    }
    int self_closing = (token->type & CLOSE_SELF) != 0;
    if (is & (K_FRAMESET | K_COPIED)) {
        ctx->unread = 1; /* a frameset may replace the body read; selectedcontent copies */
        return;
    }
    if (ctx->templates && (is & K_TABLE_PART)) {
        ctx->unread = 1; /* a template of table parts reads raw text start tags otherwise */
        return;
    }
    if (html) {
        if ((is & K_FOREIGN) && !self_closing) {
            if (ctx->island) {
                ctx->unread = 1; /* SVG in an HTML island of SVG: past this simple model */
                return;
            }
            ctx->foreign = 1;
            ctx->open[0] = tag;
            ctx->islands = (is & K_MATH) ? K_MATH_ISLAND : K_ISLAND;
        } else {
            if (is & K_TEMPLATE) {
                if (ctx->island || ctx->templates == TEMPLATE_DEPTH) {
                    ctx->unread = 1; /* a template in an island: past this model */
                    return;
                }
                ctx->template_foreign[ctx->templates] = ctx->foreign;
                ctx->template_island[ctx->templates] = ctx->island;
                ctx->templates++;
            }
            if (ctx->island && !self_closing && !(is & K_VOID)) {
                if (ctx->html_depth == ISLAND_DEPTH) {
                    ctx->unread = 1;
                    return;
                }
                ctx->html_open[ctx->html_depth++] = tag;
            }
            if (is & K_RAW) {
                tk_state_by_tag(tkz, 0, tag, NS_HTML);
                ctx->raw = 1;
            }
        }
    } else if ((ctx->islands == K_MATH_ISLAND && (is & K_MATH_TEXT)) ||
               (is & K_TEMPLATE)) {
        /* annotation-xml may be an island, a MathML title is the page's title to the tree's
           search, an SVG or MathML template is one the tree holds: past this model */
        ctx->unread = 1;
        return;
    } else if (!self_closing) {
        if (ctx->foreign == FOREIGN_DEPTH) {
            ctx->unread = 1;
            return;
        }
        ctx->open[ctx->foreign++] = tag;
        if (is & ctx->islands)
            ctx->island = ctx->foreign;
    }
    if (ctx->templates)
        return;
    if (is & (K_A | K_AREA | K_LINK | K_BASE))
        link_of(ctx, token, is);
    else if (is & K_META) {
        PyObject *meta = attributes_of(ctx, token);
        if (meta == NULL || PyList_Append(ctx->metas, meta) < 0)
            ctx->failed = 1;
        Py_XDECREF(meta);
    } else if ((is & K_TITLE) && !ctx->titled) {
        if (!ctx->foreign)
            ctx->titled = ctx->in_title = 1;
        else if (ctx->islands == K_MATH_ISLAND)
            ctx->unread = 1; /* a title in MathML is the page's to the tree's search */
    }
    return;
}

/* The CPU seconds this thread has run. */
static double
thread_cpu(void)
{
    struct timespec now;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now) != 0)
        return 0.0;
    return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

/* Tokenize `data` (UTF-8) with `ctx` told each token; 0, or -1 when lexbor failed. With a
   `budget` (CPU seconds, > 0) the data goes to the tokenizer in pieces of `piece` bytes and
   the tokenizing stops once a piece ends past the budget (`ctx->spent`): lexbor's cost per tag
   grows with the distinct tag and attribute names before it (its hash tables never grow), so
   a page can cost it far more than its length says. lexbor reads input in pieces as one
   (a stream's), the tokens that span two included, but for a "<![CDATA[" cut inside: a piece
   ends before its last "<", so that a markup declaration comes whole (the next piece starts
   there and is a whole piece long, or the rest). */
static int
tokenize(const unsigned char *data, size_t size, ctx_t *ctx, double budget, size_t piece)
{
    tokenizer_t *tkz = tk_create();
    if (tkz == NULL)
        return -1;
    int status = tk_init(tkz);
    if (status == 0) {
        tk_keep_duplicate(tkz, 1); /* linear: the callback keeps the first of a name */
        tk_callback(tkz, on_token, ctx);
        status = tk_begin(tkz);
        if (budget <= 0.0) {
            if (status == 0)
                status = tk_chunk(tkz, data, size);
        } else {
            double until = thread_cpu() + budget;
            for (size_t at = 0, end; status == 0 && at < size; at = end) {
                end = size - at <= piece ? size : at + piece;
                if (end < size) { /* cut before the piece's last "<": lexbor reads "<![CDATA["
                                     cut in two as other markup (a fuzzer's find) */
                    const unsigned char *lt = memrchr(data + at + 1, '<', end - at - 1);
                    if (lt != NULL)
                        end = (size_t)(lt - data);
                }
                status = tk_chunk(tkz, data + at, end - at);
                if (status == 0 && end < size && thread_cpu() > until) {
                    ctx->spent = 1;
                    break;
                }
            }
        }
        if (status == 0 && !ctx->spent)
            status = tk_end(tkz);
    }
    tk_destroy(tkz);
    return status == 0 ? 0 : -1;
}

static void
ctx_clear(ctx_t *ctx)
{
    Py_CLEAR(ctx->hrefs);
    Py_CLEAR(ctx->metas);
    Py_CLEAR(ctx->base);
    Py_CLEAR(ctx->canonical);
    PyMem_Free(ctx->title);
    ctx->title = NULL;
}

/* read(document, honour_nofollow, budget=0.0, piece=65536) -> (hrefs, eligible, rel_nofollow,
   metas, base, canonical, title) or None (see the top of this file; also None when a `budget`
   of CPU seconds ran out, see `tokenize`). */
static PyObject *
read_tokens(PyObject *self, PyObject *args)
{
    Py_buffer view;
    int honour_nofollow;
    double budget = 0.0;
    Py_ssize_t piece = 65536;
    if (!bound) {
        PyErr_SetString(PyExc_RuntimeError, "read: not bound to lexbor");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "y*p|dn", &view, &honour_nofollow, &budget, &piece))
        return NULL;
    if (piece < 1) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "read: piece must be at least 1 byte");
        return NULL;
    }
    ctx_t ctx;
    memset(&ctx, 0, sizeof(ctx));
    ctx.honour_nofollow = honour_nofollow;
    ctx.hrefs = PyDict_New();
    ctx.metas = PyList_New(0);
    int status = -1;
    if (ctx.hrefs != NULL && ctx.metas != NULL)
        status = tokenize(view.buf, (size_t)view.len, &ctx, budget, (size_t)piece);
    PyBuffer_Release(&view);
    if (ctx.failed || ctx.hrefs == NULL || ctx.metas == NULL) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        ctx_clear(&ctx);
        return NULL;
    }
    if (status < 0 || ctx.unread || ctx.spent) {
        ctx_clear(&ctx);
        Py_RETURN_NONE;
    }
    PyObject *title = Py_None;
    if (ctx.titled) {
        title = PyUnicode_DecodeUTF8((const char *)(ctx.title ? ctx.title : (unsigned char *)""),
                                     (Py_ssize_t)ctx.title_size, "replace");
        if (title == NULL) {
            ctx_clear(&ctx);
            return NULL;
        }
    } else {
        Py_INCREF(title);
    }
    PyObject *links = PyDict_Keys(ctx.hrefs);
    if (links == NULL) {
        Py_DECREF(title);
        ctx_clear(&ctx);
        return NULL;
    }
    PyObject *result = Py_BuildValue(
        "(NllOOON)", links, ctx.eligible, ctx.rel_nofollow, ctx.metas,
        ctx.base ? ctx.base : Py_None, ctx.canonical ? ctx.canonical : Py_None, title);
    ctx_clear(&ctx);
    return result;
}

static const char *KIND_NAMES[] = {
    "a", "area", "link", "meta", "base", "title", "template", "foreign", "raw", "head_ok",
    "breakout", "island", "noscript", "head_noscript_ok", "frameset", "head_end", "body_end",
    "font", "html", "math", "math_island", "br", "void", "table_part", "copied", "math_text",
};

/* bind(selectolax_lexbor_path, html_namespace, kinds): find lexbor's tokenizer in selectolax's
   loaded module; `kinds` maps each name of KIND_NAMES to the tag ids of that kind. */
static PyObject *
bind_lexbor(PyObject *self, PyObject *args)
{
    const char *path;
    unsigned long long ns;
    PyObject *given;
    bound = 0;
    if (!PyArg_ParseTuple(args, "sKO!", &path, &ns, &PyDict_Type, &given))
        return NULL;
    void *module = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (module == NULL) {
        PyErr_Format(PyExc_ImportError, "selectolax's lexbor is not loaded: %s", path);
        return NULL;
    }
#define FIND(into, name)                                                                      \
    *(void **)(&into) = dlsym(module, name);                                                  \
    if (into == NULL) {                                                                       \
        dlclose(module);                                                                      \
        PyErr_SetString(PyExc_ImportError, "lexbor has no " name);                            \
        return NULL;                                                                          \
    }
    FIND(tk_create, "lxb_html_tokenizer_create")
    FIND(tk_init, "lxb_html_tokenizer_init")
    FIND(tk_begin, "lxb_html_tokenizer_begin")
    FIND(tk_chunk, "lxb_html_tokenizer_chunk")
    FIND(tk_end, "lxb_html_tokenizer_end")
    FIND(tk_destroy, "lxb_html_tokenizer_destroy")
    FIND(tk_state_by_tag, "lxb_html_tokenizer_set_state_by_tag")
    FIND(tk_callback, "lxb_html_tokenizer_callback_token_done_set_noi")
    FIND(attr_name, "lxb_html_token_attr_name")
    FIND(tk_keep_duplicate, "lxb_html_tokenizer_keep_duplicate_set_noi")
#undef FIND
    dlclose(module); /* selectolax's module holds it loaded */
    memset(kinds, 0, sizeof(kinds));
    for (size_t k = 0; k < sizeof(KIND_NAMES) / sizeof(*KIND_NAMES); k++) {
        PyObject *ids = PyDict_GetItemString(given, KIND_NAMES[k]);
        if (ids == NULL || !PyTuple_Check(ids)) {
            PyErr_Format(PyExc_ValueError, "bind: no tag ids for %s", KIND_NAMES[k]);
            return NULL;
        }
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(ids); i++) {
            unsigned long long id = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(ids, i));
            if (PyErr_Occurred())
                return NULL;
            if (id <= TAG_TEXT || id >= KINDS) {
                PyErr_Format(PyExc_ImportError, "bind: tag id %llu of %s", id, KIND_NAMES[k]);
                return NULL;
            }
            kinds[id] |= 1u << k;
        }
    }
    NS_HTML = (uintptr_t)ns;
    bound = 1;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"bind", bind_lexbor, METH_VARARGS,
     "bind(selectolax_lexbor_path, html_namespace_id, kinds): find lexbor's tokenizer in "
     "selectolax's loaded module; kinds: each kind's tag ids."},
    {"read", read_tokens, METH_VARARGS,
     "read(document, honour_nofollow, budget=0.0, piece=65536) -> (hrefs, eligible, "
     "rel_nofollow, metas, base, canonical, title) or None: the document read from its "
     "tokens."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_tokens", "A page's links read from lexbor's tokens, in C.", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__tokens(void)
{
    return PyModule_Create(&module);
}
