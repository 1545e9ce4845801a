"""Path evidence: links into a section holding on-topic pages, and siblings of on-topic
pages, score by the section's relevant share; links elsewhere on the site score nothing."""

from __future__ import annotations

import pytest
from tests.focus.test_policy import ON, PHRASE, html, judge

from gossamer.focus import paths
from gossamer.focus.paths import MAX_SEGMENTS, PathEvidence, prefixes
from gossamer.focus.policy import FocusPolicy
from gossamer.focus.topic import Topic

DOCS = "http://docs.test"


def score(evidence: PathEvidence, url: str) -> float:
    host, _, path = url.removeprefix("http://").partition("/")
    return evidence.score(host, "/" + path)


def test_prefixes_are_bounded_and_ignore_empty_segments() -> None:
    assert prefixes("h", "/a//b/") == ["h", "h/a", "h/a/b"]
    assert prefixes("h", "/") == ["h"]
    deep = "/".join(str(n) for n in range(50))
    assert len(prefixes("h", f"/{deep}/")) == MAX_SEGMENTS + 1


def test_links_into_and_beside_on_topic_pages_score_their_share() -> None:
    evidence = PathEvidence()
    assert score(evidence, f"{DOCS}/ref/storage/") == 0.0  # nothing judged yet
    for n in (0, 1):
        evidence.add(f"{DOCS}/ref/storage/locks/{n}/", True)
    evidence.add(f"{DOCS}/ref/storage/locks/2/", False)
    into = score(evidence, f"{DOCS}/ref/storage/")  # leads to the two on-topic pages
    beside = score(evidence, f"{DOCS}/ref/storage/locks/7/")  # their sibling
    assert into == beside == 2 / 5
    assert score(evidence, f"{DOCS}/ref/other/") == 0.0  # elsewhere on the site
    assert score(evidence, f"{DOCS}/ref/storage/notes/") == 0.0  # no pages judged beside it
    assert score(evidence, "http://other.test/ref/storage/locks/7/") == 0.0
    for n in range(3, 9):  # the directory turns out mostly off-topic: its share falls
        evidence.add(f"{DOCS}/ref/storage/locks/{n}/", False)
    assert score(evidence, f"{DOCS}/ref/storage/locks/9/") < beside / 2


def test_one_relevant_page_does_not_make_its_siblings_likely() -> None:
    evidence = PathEvidence()
    evidence.add(f"{DOCS}/m/transactions/", True)
    assert score(evidence, f"{DOCS}/m/gardening/") == 0.0
    assert score(evidence, f"{DOCS}/m/transactions/") > 0  # but leads below it


def test_examples_raise_their_sections_links_in_a_crawl() -> None:
    example = f"{DOCS}/reference/storage/engine/concurrency/0/"
    links = [("/reference/storage/", "Storage"), ("/reference/tools/", "Tools")]
    plain = FocusPolicy(Topic(PHRASE))
    _, before = judge(plain, f"{DOCS}/reference/", html("gardening", 1, links))
    known = FocusPolicy(Topic(PHRASE), known=[example, example.replace("/0/", "/1/")])
    _, after = judge(known, f"{DOCS}/reference/", html("gardening", 1, links))
    storage, tools = f"{DOCS}/reference/storage/", f"{DOCS}/reference/tools/"
    assert after[storage] > before[storage] + 0.2
    assert after[tools] == before[tools]


def test_judged_pages_count_as_evidence() -> None:
    policy = FocusPolicy(Topic(PHRASE))
    sibling = ("/guide/locks/9/", "next")
    for n in range(2):
        judge(policy, f"{DOCS}/guide/locks/{n}/", html(ON, n, [sibling]))
    _, off = judge(policy, f"{DOCS}/garden/", html("gardening", 5, [sibling, ("/x/", "next")]))
    assert off[f"{DOCS}/guide/locks/9/"] >= 2 / 4
    assert off[f"{DOCS}/x/"] < 0.2


def test_the_counts_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(paths, "MAX_PREFIXES", 10)
    evidence = PathEvidence()
    long = "x" * 5000
    for n in range(20):
        evidence.add(f"{DOCS}/{long}{n}/a/", True)
    assert len(evidence) == 10
    evidence.add(f"{DOCS}/{long}0/a/", True)  # known prefixes still count
    assert score(evidence, f"{DOCS}/{long}0/") == 2 / 4
