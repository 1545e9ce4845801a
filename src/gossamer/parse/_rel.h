/* The rel tokens a link's search reads (parse/_linkwalk.c over lexbor's tree,
   parse/_tokens.c over its tokens): as `rel.lower().split()` finds them in Python. */

#ifndef GOSSAMER_REL_H
#define GOSSAMER_REL_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

/* Python's str.split() on ASCII text: these are the ASCII characters it splits at. */
static int
is_space(unsigned char c)
{
    return c == ' ' || (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x1f);
}

enum { REL_CANONICAL = 1, REL_STYLESHEET = 2, REL_FOLLOWED = 4, REL_NOFOLLOW = 8 };

/* The rel tokens that matter, as `rel.lower().split()` finds them; -1 on an error. */
static int
rel_tokens(const unsigned char *rel, size_t length)
{
    for (size_t i = 0; i < length; i++) {
        if (rel[i] >= 0x80) { /* beyond ASCII: Python's own lower() and split() */
            PyObject *text = PyUnicode_DecodeUTF8((const char *)rel, length, "replace");
            if (text == NULL)
                return -1;
            PyObject *lower = PyObject_CallMethod(text, "lower", NULL);
            Py_DECREF(text);
            if (lower == NULL)
                return -1;
            PyObject *words = PyUnicode_Split(lower, NULL, -1);
            Py_DECREF(lower);
            if (words == NULL)
                return -1;
            int found = 0;
            for (Py_ssize_t w = 0; w < PyList_GET_SIZE(words); w++) {
                PyObject *word = PyList_GET_ITEM(words, w);
                if (PyUnicode_CompareWithASCIIString(word, "canonical") == 0)
                    found |= REL_CANONICAL;
                else if (PyUnicode_CompareWithASCIIString(word, "stylesheet") == 0)
                    found |= REL_STYLESHEET;
                else if (PyUnicode_CompareWithASCIIString(word, "next") == 0 ||
                         PyUnicode_CompareWithASCIIString(word, "alternate") == 0)
                    found |= REL_FOLLOWED;
                else if (PyUnicode_CompareWithASCIIString(word, "nofollow") == 0)
                    found |= REL_NOFOLLOW;
            }
            Py_DECREF(words);
            return found;
        }
    }
    int found = 0;
    size_t i = 0;
    while (i < length) {
        while (i < length && is_space(rel[i]))
            i++;
        size_t start = i;
        char word[16];
        size_t n = 0;
        while (i < length && !is_space(rel[i])) {
            if (n < sizeof(word) - 1) {
                unsigned char c = rel[i];
                word[n] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
            }
            n++;
            i++;
        }
        if (i == start || n >= sizeof(word))
            continue;
        word[n] = '\0';
        if (strcmp(word, "canonical") == 0)
            found |= REL_CANONICAL;
        else if (strcmp(word, "stylesheet") == 0)
            found |= REL_STYLESHEET;
        else if (strcmp(word, "next") == 0 || strcmp(word, "alternate") == 0)
            found |= REL_FOLLOWED;
        else if (strcmp(word, "nofollow") == 0)
            found |= REL_NOFOLLOW;
    }
    return found;
}

#endif
