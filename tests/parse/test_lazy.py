"""The guard's regexes are compiled when a page needs them, not when the parse package loads."""

from __future__ import annotations

import re
import subprocess
import sys

from gossamer.parse import tokens
from gossamer.parse.guard import parse
from gossamer.parse.lazy import LazyPattern

# Run in a fresh interpreter (the guard has run in this one): what a parse worker loads, the
# parse package whole; then, of the guard's regexes, those compiled already.
_PROBE = """
import re
import gossamer.page.sandboxed
from gossamer.parse import formatting, guard, nesting, scan, tokens
patterns = {
    "tokens.TOKEN": tokens.TOKEN,
    "tokens.TOKEN_BYTES": tokens.TOKEN_BYTES,
    "tokens.ATTRIBUTE": tokens.ATTRIBUTE,
    "tokens.ATTRIBUTE_BYTES": tokens.ATTRIBUTE_BYTES,
    "tokens.TAG_ATTRIBUTES_BYTES": tokens.TAG_ATTRIBUTES_BYTES,
    "tokens._SCRIPT_MARK": tokens._SCRIPT_MARK,
    "nesting._TOKEN": nesting._TOKEN,
    "nesting._ATTRIBUTES_READ": nesting._ATTRIBUTES_READ,
    "scan.ODD_TAG": scan.ODD_TAG,
    "scan._ODD_TAG_BYTES": scan._ODD_TAG_BYTES,
    "formatting._OPEN_BYTES": formatting._OPEN_BYTES,
    "formatting._TAG_BYTES": formatting._TAG_BYTES,
    **{f"guard._RAW_TEXT_END[{name}]": p for name, p in guard._RAW_TEXT_END.items()},
}
for name, pattern in patterns.items():
    if isinstance(pattern, re.Pattern) or pattern._compiled is not None:
        print(name)
"""


def test_importing_the_parse_package_compiles_none_of_the_guards_regexes() -> None:
    run = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == []


def test_a_lazy_pattern_is_the_pattern_compiled_once() -> None:
    lazy = LazyPattern(r"<(\w+)", re.IGNORECASE)
    assert lazy.search("a <B> c") is not None
    compiled = lazy.compiled
    assert compiled is lazy.compiled
    assert compiled.pattern == lazy.pattern and compiled.flags & re.IGNORECASE
    assert lazy.findall("<a><b>") == ["a", "b"]
    assert [m.start() for m in lazy.finditer("<a> <b>", 1)] == [4]
    assert lazy.match("x<a>") is None and lazy.match("x<a>", 1) is not None


def test_the_guard_still_reads_with_its_patterns_compiled_on_use() -> None:
    # a tag of too many attributes: the guard's tokenizer and attribute patterns at work
    attributes = " ".join(f"a{i}=1" for i in range(300))
    document = f"<html><body><p {attributes}>x</p><a href=/next>n</a>" + "<b>y</b>" * 4100
    parsed = parse(document)
    assert parsed.tree is not None and "html-cut-attributes" in parsed.flags
    assert isinstance(tokens.TOKEN.compiled, re.Pattern)
