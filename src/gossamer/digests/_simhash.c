/* The SimHash of a text's letters in C: gossamer.digests.simhash._simhash, one pass.

   The numpy reference makes a dozen arrays a page (windows, products, the sample, the
   finaliser's steps, the votes by byte); its fixed cost per step is most of a short text's
   time. Here each shingle is hashed where it lies and its eight bytes counted in a table of
   8 x 256 counts, the bits' votes read off the table at the end: time linear in the letters
   (each read 8 bytes wide, never past the last), memory fixed. Same shingles, same sample,
   same hash, same votes: the numpy code stays the reference (it runs where this module is
   not built or GOSSAMER_NATIVE=0) and tests compare the two.

   text_simhash picks the letters of a UTF-8 text (those bytes.translate kept) in the same
   call, into a buffer of its own: on the 525 texts of a whole-job crawl of python3-doc the
   pick and hash cost 289 M instructions where translate and simhash cost 326 M. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define SHINGLE 16
#define SAMPLE 4
#define FEW 256
#define MAX_NEAR_BYTES 200000 /* gossamer.digests.simhash.MAX_NEAR_BYTES */

static const uint64_t K1 = 0x9E3779B97F4A7C15ULL;
static const uint64_t K2 = 0xBF58476D1CE4E5B9ULL;
static const uint64_t K3 = 0x94D049BB133111EBULL;
static const uint64_t SAMPLED = UINT64_MAX / SAMPLE + 1; /* (1 << 64) // SAMPLE */

/* The little-endian 8 bytes at `p` (one load). */
static inline uint64_t
window(const unsigned char *p)
{
    uint64_t value;
    memcpy(&value, p, sizeof(value));
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    value = __builtin_bswap64(value);
#endif
    return value;
}

/* splitmix64's finaliser: every bit a fair vote. */
static inline uint64_t
finalised(uint64_t h)
{
    h ^= h >> 31;
    h *= K2;
    h ^= h >> 29;
    h *= K3;
    return h ^ (h >> 32);
}

#define BATCH 256

static uint64_t
hash_letters(const unsigned char *letters, Py_ssize_t size)
{
    /* `size` >= SHINGLE: a shingle at every offset up to size - SHINGLE; of a long text's,
       those whose first half hashes below SAMPLED, found a batch at a time without a branch
       (which one is kept is a coin toss: a branch on it mispredicts one time in four) */
    uint32_t counts[8][256]; /* at most MAX_NEAR_BYTES shingles: far below 2**32 */
    memset(counts, 0, sizeof(counts));
    /* a shingle votes when its head is at most `limit`: below SAMPLED in a long text, any
       head in a short one (one comparison an offset, no test of which text it is) */
    uint64_t limit = size > SAMPLE * FEW ? SAMPLED - 1 : UINT64_MAX;
    Py_ssize_t last = size - SHINGLE; /* the last offset */
    uint64_t count = 0;
    uint64_t heads[BATCH];
    uint32_t kept[BATCH];
    for (Py_ssize_t start = 0; start <= last; start += BATCH) {
        Py_ssize_t end = start + BATCH - 1 < last ? start + BATCH - 1 : last;
        int n = 0;
        for (Py_ssize_t i = start; i <= end; i++) {
            uint64_t head = window(letters + i) * K1;
            heads[n] = head;
            kept[n] = (uint32_t)(i - start);
            n += head <= limit;
        }
        for (int k = 0; k < n; k++) {
            uint64_t h = finalised(heads[k] ^ window(letters + start + kept[k] + 8));
            counts[0][h & 0xff]++; /* each byte's value counted (unrolled: a third the time) */
            counts[1][(h >> 8) & 0xff]++;
            counts[2][(h >> 16) & 0xff]++;
            counts[3][(h >> 24) & 0xff]++;
            counts[4][(h >> 32) & 0xff]++;
            counts[5][(h >> 40) & 0xff]++;
            counts[6][(h >> 48) & 0xff]++;
            counts[7][h >> 56]++;
        }
        count += (uint64_t)n;
    }
    uint64_t result = 0;
    for (int b = 0; b < 8; b++) {
        /* a bit's votes: the counts of the byte values that have it. The top bit's are the
           upper half's; the halves then folded into one (each value's lower bits kept), the
           next bit's are the upper half of that, and so on down: 255 additions for the votes
           and 255 for the folds, in whole runs, where each value's eight bits were tested
           one by one (most of a short text's fixed cost) */
        uint64_t folded[256];
        for (int v = 0; v < 256; v++)
            folded[v] = counts[b][v];
        for (int bit = 7; bit >= 0; bit--) {
            int half = 1 << bit;
            uint64_t votes = 0;
            for (int v = 0; v < half; v++) {
                votes += folded[half + v];
                folded[v] += folded[half + v];
            }
            if (votes * 2 > count)
                result |= (uint64_t)1 << (8 * b + bit);
        }
    }
    return result;
}

static PyObject *
simhash(PyObject *self, PyObject *arg)
{
    if (!PyBytes_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "simhash takes bytes");
        return NULL;
    }
    const unsigned char *letters = (const unsigned char *)PyBytes_AS_STRING(arg);
    Py_ssize_t size = PyBytes_GET_SIZE(arg);
    unsigned char padded[SHINGLE];
    if (size < SHINGLE) { /* padded with zeros to one shingle */
        memset(padded, 0, sizeof(padded));
        memcpy(padded, letters, (size_t)size);
        letters = padded;
        size = SHINGLE;
    }
    return PyLong_FromUnsignedLongLong(hash_letters(letters, size));
}

/* Each byte of a UTF-8 text as a letter (ASCII upper case in lower case, the rest as is) in
   the low byte, and in the next 1 where the byte is kept: ASCII letters and digits and every
   byte of a non-ASCII character (>= 0x80); other ASCII bytes (spaces, punctuation, controls)
   are dropped. One table, one load a byte. */
static uint16_t letter_of[256];

static void
fill_tables(void)
{
    for (int c = 0; c < 256; c++) {
        int upper = c >= 'A' && c <= 'Z';
        int kept = upper || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c >= 0x80;
        letter_of[c] = (uint16_t)((upper ? c + 32 : c) | kept << 8);
    }
}

static PyObject *
text_simhash(PyObject *self, PyObject *arg)
{
    /* simhash() of the letters of the first MAX_NEAR_BYTES bytes of a UTF-8 text, picked
       here in one pass without a branch (each byte written, the end moved on when it is
       kept): what Python's bytes.translate(table, dropped) made as a second bytes object,
       a branch a byte, before. */
    if (!PyBytes_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "text_simhash takes bytes");
        return NULL;
    }
    const unsigned char *text = (const unsigned char *)PyBytes_AS_STRING(arg);
    Py_ssize_t size = PyBytes_GET_SIZE(arg);
    if (size > MAX_NEAR_BYTES)
        size = MAX_NEAR_BYTES;
    unsigned char small[4096];
    /* at least one shingle: a short text's letters are padded with zeros */
    Py_ssize_t room = size < SHINGLE ? SHINGLE : size;
    unsigned char *letters = room <= (Py_ssize_t)sizeof(small) ? small : PyMem_Malloc((size_t)room);
    if (letters == NULL)
        return PyErr_NoMemory();
    Py_ssize_t n = 0, i = 0;
#define PICK(at)                                                                         \
    do {                                                                                 \
        uint16_t letter = letter_of[text[at]];                                           \
        letters[n] = (unsigned char)letter;                                              \
        n += letter >> 8;                                                                \
    } while (0)
    for (; i + 4 <= size; i += 4) { /* four a turn: a third fewer instructions a byte */
        PICK(i);
        PICK(i + 1);
        PICK(i + 2);
        PICK(i + 3);
    }
    for (; i < size; i++)
        PICK(i);
#undef PICK
    if (n < SHINGLE) {
        memset(letters + n, 0, (size_t)(SHINGLE - n));
        n = SHINGLE;
    }
    uint64_t result = hash_letters(letters, n);
    if (letters != small)
        PyMem_Free(letters);
    return PyLong_FromUnsignedLongLong(result);
}

static PyObject *
utf8(PyObject *self, PyObject *arg)
{
    /* The UTF-8 bytes of a text, through the UTF-8 copy CPython keeps with the text once made
       (PyUnicode_AsUTF8AndSize): SQLite's binding of the text and msgspec's encoding of it
       into the record's JSON line read that copy, so the text is encoded once where
       str.encode made a copy of its own besides. A lone surrogate raises
       UnicodeEncodeError (strict), as encode would. */
    if (!PyUnicode_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "utf8 takes str");
        return NULL;
    }
    Py_ssize_t size;
    const char *data = PyUnicode_AsUTF8AndSize(arg, &size);
    if (data == NULL)
        return NULL;
    return PyBytes_FromStringAndSize(data, size);
}

static PyMethodDef methods[] = {
    {"utf8", utf8, METH_O,
     "utf8(text: str) -> bytes: the text's UTF-8 (strict), made once and kept with the text"},
    {"simhash", simhash, METH_O,
     "simhash(letters: bytes) -> int: the 64-bit SimHash of the letters' shingles"},
    {"text_simhash", text_simhash, METH_O,
     "text_simhash(text: bytes) -> int: simhash() of a UTF-8 text's letters and digits (ASCII "
     "in lower case) in its first MAX_NEAR_BYTES bytes"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_simhash", "The SimHash of a text's letters, in C.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__simhash(void)
{
    fill_tables();
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddIntConstant(m, "MAX_NEAR_BYTES", MAX_NEAR_BYTES) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
