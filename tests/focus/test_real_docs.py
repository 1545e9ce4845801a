"""Relevance on a real documentation site (Debian's python3-doc HTML, read from disk): topics
the method was not tuned on land their own pages above the threshold and few others."""

from __future__ import annotations

from pathlib import Path

import pytest

from gossamer.extract import extract
from gossamer.focus.topic import Topic

DOCS = Path("/usr/share/doc/python3-doc/html")
pytestmark = pytest.mark.skipif(not DOCS.is_dir(), reason="needs python3-doc")


def texts() -> dict[str, str]:
    files = sorted((DOCS / "library").glob("*.html"))[::2]
    files += [DOCS / "howto" / "regex.html", DOCS / "library" / "re.html"]
    files += sorted((DOCS / "library").glob("asyncio-*.html"))
    out = {}
    for path in dict.fromkeys(files):
        html = path.read_text(encoding="utf-8", errors="replace")
        out[str(path.relative_to(DOCS))] = extract(html, f"http://docs.test/{path.name}").text
    return out


@pytest.fixture(scope="module")
def docs() -> dict[str, str]:
    return texts()


@pytest.mark.parametrize(
    ("phrase", "must", "most"),
    [
        ("regular expressions", {"library/re.html", "howto/regex.html"}, 8),
        (
            "asyncio event loop",
            {"library/asyncio-eventloop.html", "library/asyncio-runner.html"},
            25,
        ),
    ],
)
def test_a_phrase_finds_its_pages(
    docs: dict[str, str], phrase: str, must: set[str], most: int
) -> None:
    topic = Topic(phrase)
    scores = {name: topic.judge(text).relevance for name, text in docs.items()}
    above = {name for name, score in scores.items() if score >= 0.5}
    assert must <= above, {m: scores[m] for m in must}
    assert len(above) <= most, sorted(above)
