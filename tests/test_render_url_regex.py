"""``--render-url`` patterns are matched against every URL a crawl meets, which pages choose:
compiled by RE2, they run in time linear in the URL (Python's ``re`` took exponential time on
``(a+)+$`` and a link to ``/aaaa...!``, and froze the crawl's loop)."""

from __future__ import annotations

import time

import pytest

from gossamer.settings.regex import compile_url_regex


@pytest.mark.timeout(30)
def test_a_catastrophic_pattern_runs_in_linear_time() -> None:
    pattern = compile_url_regex("/(a+)+$")
    url = "http://site.test/" + "a" * 5000 + "!"
    started = time.process_time()
    assert pattern.search(url) is None
    assert pattern.search("http://site.test/aaa") is not None
    assert time.process_time() - started < 0.5


def test_patterns_re2_cannot_run_in_linear_time_are_refused_with_the_reason() -> None:
    for text in (r"(a)\1", "/a(?=b)", "/a(?<!b)", "(a"):
        with pytest.raises(ValueError, match="not a regular expression"):
            compile_url_regex(text)
