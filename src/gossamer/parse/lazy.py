"""Regular expressions compiled on their first use, not when their module is imported.

The guard's regexes (its tokenizer, the nesting check, the scans' and the formatting scan's
reference regexes) read only the pages the guard, or a scan past the C one, reads: a crawl of
ordinary pages never uses them, yet every process that imports :mod:`gossamer.parse` (a
crawler and each of its parse workers) compiled them all, 43 M instructions, a sixth of what a
parse worker's imports cost (295 M). Compiled on use, a links-only crawl of python3-doc's 529
pages went from 6.79 G instructions to 6.72 G, the crawler's start-up (one page) from 684 M to
642 M (``valgrind --tool=callgrind --trace-children=yes python -m gossamer crawl ... --no-text``,
the parse worker traced too; ``benchmarks/callgrind_crawl.py --real --only links --sites
python3-doc`` runs the same crawl). A `LazyPattern` holds the source and compiles it the first
time it is searched; a loop that searches many times binds `LazyPattern.compiled`'s method
once, as it did the pattern's.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from typing import Any, AnyStr, Generic

__all__ = ["LazyPattern"]


class LazyPattern(Generic[AnyStr]):
    """``re.compile(pattern, flags)``, done when first needed (`compiled`); ``search``,
    ``match``, ``finditer``, ``findall`` and ``sub`` are the compiled pattern's."""

    __slots__ = ("_compiled", "flags", "pattern")

    def __init__(self, pattern: AnyStr, flags: int = 0) -> None:
        self.pattern: AnyStr = pattern
        self.flags = flags
        self._compiled: re.Pattern[AnyStr] | None = None

    @property
    def compiled(self) -> re.Pattern[AnyStr]:
        """The compiled pattern (compiled now if it was not yet)."""
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = re.compile(self.pattern, self.flags)
        return compiled

    def search(
        self, string: AnyStr, pos: int = 0, endpos: int = sys.maxsize
    ) -> re.Match[AnyStr] | None:
        return self.compiled.search(string, pos, endpos)

    def match(
        self, string: AnyStr, pos: int = 0, endpos: int = sys.maxsize
    ) -> re.Match[AnyStr] | None:
        return self.compiled.match(string, pos, endpos)

    def finditer(
        self, string: AnyStr, pos: int = 0, endpos: int = sys.maxsize
    ) -> Iterator[re.Match[AnyStr]]:
        return self.compiled.finditer(string, pos, endpos)

    def findall(self, string: AnyStr, pos: int = 0, endpos: int = sys.maxsize) -> list[Any]:
        return self.compiled.findall(string, pos, endpos)

    def sub(self, replacement: AnyStr, string: AnyStr) -> AnyStr:
        return self.compiled.sub(replacement, string)
