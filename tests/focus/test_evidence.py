"""What the pages linking to a waiting URL say of it, as the crawl judges them: a URL that
on-topic pages cite rises at the next upkeep; the rest of a list whose pages turn out on-topic
rises above the rest of a list whose pages do not, on a flat site where the URLs' directory
says nothing; a list holding an example lifts its other links at once; each without waiting
for a re-scoring."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import pytest
from tests.focus.test_learning import Recorder, two_lists
from tests.focus.test_policy import ON, PHRASE, html, judge, prose
from tests.local_app import serve_pages

from gossamer.crawl import run_crawl
from gossamer.focus.calibration import Calibration
from gossamer.focus.citations import Citations
from gossamer.focus.config import FocusConfig
from gossamer.focus.paths import PathEvidence, place_keys
from gossamer.focus.policy import FocusPolicy
from gossamer.focus.topic import Topic
from gossamer.settings import CrawlSettings, load_model

NO_RESCORING = FocusConfig(rescore_every=10_000)
"""Re-scoring never comes: what reaches the frontier comes from the evidence alone."""


async def test_a_url_cited_by_on_topic_pages_rises_at_the_next_upkeep() -> None:
    recorder = Recorder()
    policy = FocusPolicy(Topic(PHRASE), NO_RESCORING, reprioritize=recorder)
    cited, other = "http://x.test/a.html", "http://y.test/b.html"
    _, first = judge(policy, "http://hub.test/", html("gardening", 1, [(cited, "A"), (other, "B")]))
    assert first[cited] == first[other]
    for i in range(3):
        relevance, _ = judge(policy, f"http://p{i}.test/", html(ON, 10 + i, [(cited, "more")]))
        assert relevance >= 0.5
    await policy.upkeep()
    sent = {url: p for batch in recorder.sent for url, p in batch.items()}
    assert sent.get(cited, 0.0) > first[cited], sent
    assert other not in sent


async def test_the_rest_of_an_on_topic_list_rises_on_a_flat_site() -> None:
    recorder = Recorder()
    policy = FocusPolicy(Topic(PHRASE), NO_RESCORING, reprioritize=recorder)
    good = [f"http://site.test/g{i}.html" for i in range(10)]
    bad = [f"http://site.test/b{i}.html" for i in range(10)]
    _, first = judge(policy, "http://site.test/index.html", two_lists(good, bad))
    now = await after_outcomes(policy, recorder, first, good, bad, 3)
    assert min(now[url] for url in good[3:]) > max(now[url] for url in bad[3:]), now


def test_a_list_holding_an_example_lifts_its_other_links() -> None:
    example = "http://site.test/example.html"
    policy = FocusPolicy(Topic(PHRASE, [prose(ON, 1)]), known=[example])
    beside = [f"http://site.test/s{i}.html" for i in range(4)]
    elsewhere = [f"http://site.test/e{i}.html" for i in range(4)]
    _, priorities = judge(
        policy, "http://site.test/toc.html", two_lists([example, *beside], elsewhere)
    )
    assert min(priorities[url] for url in beside) > max(priorities[url] for url in elsewhere)


def test_a_directory_share_counts_the_pages_linked_in_it() -> None:
    """Two on-topic pages judged in a directory of fifty linked say little of the others (a
    flat site keeps every page in one directory)."""
    paths = PathEvidence()
    for i in range(50):
        paths.linked(place_keys("site.test", f"/docs/{i}.html"))
    paths.add("http://site.test/docs/0.html", True)
    paths.add("http://site.test/docs/1.html", True)
    assert paths.score("site.test", "/docs/7.html") < 0.1
    small = PathEvidence()
    for i in range(3):
        small.linked(place_keys("site.test", f"/docs/{i}.html"))
    small.add("http://site.test/docs/0.html", True)
    small.add("http://site.test/docs/1.html", True)
    assert small.score("site.test", "/docs/2.html") >= 0.4


def _site_page(path: str) -> str | None:
    """A flat documentation site: an index listing two chapters of ten pages each in one
    directory, the off-topic chapter first, every anchor neutral."""
    off = [f"/b{i}.html" for i in range(10)]
    on = [f"/a{i}.html" for i in range(10)]
    if path in ("/", "/index.html"):
        return two_lists(off, on).decode()
    if path in on:
        return html(ON, int(path[2:-5]), []).decode()
    if path in off:
        return html("astronomy", 20 + int(path[2:-5]), []).decode()
    return None


async def crawl_docs(tmp_path: Path, pages: Callable[[str], str | None], most: int) -> list[str]:
    """Crawl the site of ``pages`` from its index, focused on ``PHRASE`` with ``/a0.html`` as
    the example, one fetch at a time, ``most`` pages; the paths fetched, in order."""
    records = await focused_crawl(tmp_path, pages, most, PHRASE, ["a0.html"])
    return [urlsplit(r["url"]).path for r in records if r["status"] == 200]


async def focused_crawl(
    tmp_path: Path,
    pages: Callable[[str], str | None],
    most: int,
    phrase: str,
    examples: list[str],
) -> list[dict[str, Any]]:
    """Crawl the site of ``pages`` (host ``docs.test``) from ``/index.html``, focused on
    ``phrase`` with the ``examples`` (paths without their leading slash), one fetch at a time,
    ``most`` pages; its records, in order."""
    async with serve_pages(pages) as port:
        site = f"http://docs.test:{port}"
        settings = load_model(
            CrawlSettings,
            {
                "seeds": [f"{site}/index.html"],
                "out": tmp_path / "out",
                "resolve": ["docs.test=127.0.0.1"],
                "allow_domains": ["test"],
                "quiet": True,
                "concurrency": 1,
                "max_pages": most,
                "sitemaps": False,
                "focus_phrase": phrase,
                "focus_examples": [f"{site}/{path}" for path in examples],
            },
            env={},
        )
        await run_crawl(settings)
    lines = (tmp_path / "out/pages.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


async def test_a_crawl_of_a_flat_site_takes_the_examples_list_first(tmp_path: Path) -> None:
    """The example lies in the second of the index's two lists, behind the same anchors: the
    crawl fetches the rest of its list before the first list."""

    fetched = await crawl_docs(tmp_path, _site_page, 8)
    assert len(fetched) == 8
    assert sum(path.startswith("/a") for path in fetched) >= 6, fetched


def test_citations_are_calibrated_on_the_crawls_outcomes() -> None:
    """Two on-topic pages citing a URL say much until the URLs cited twice turn out
    off-topic in this crawl; on a web where the URLs cited three times turn out on-topic,
    those rise."""
    citations = Citations()
    assert citations.score(1.0, 1) == 0.0  # one on-topic page: every page links its navigation
    first = citations.score(1.9, 2)
    assert first > 0.5
    for _ in range(8):
        citations.outcome(1.9, False)
    assert citations.score(1.9, 2) < first / 3
    for _ in range(8):
        citations.outcome(3.0, True)
    assert citations.score(2.9, 4) > 0.8


def test_citation_scores_of_many_urls_match_one_at_a_time() -> None:
    citations = Citations()
    for cited, relevant in [(2.1, True), (2.2, False), (3.4, True), (6.0, True), (1.6, False)]:
        citations.outcome(cited, relevant)
    cited = [0.5, 1.6, 2.3, 3.0, 7.2]
    citers = [1, 2, 3, 3, 9]
    many = citations.scores(np.array(cited), np.array(citers, dtype=np.float64))
    one = [citations.score(c, n) for c, n in zip(cited, citers, strict=True)]
    assert many.tolist() == pytest.approx(one)


def test_evidence_that_does_not_pay_off_on_this_web_stops_lifting_links() -> None:
    """A place or list share of 0.5 starts as 0.5; on a web where the URLs it pointed at
    turned out off-topic it falls, where they turned out on-topic it rises; below a tenth
    it says nothing."""
    mixed, kept = Calibration(), Calibration()
    assert mixed.score(0.5) == pytest.approx(0.5)
    for _ in range(12):
        mixed.outcome(0.55, False)
        kept.outcome(0.55, True)
    assert mixed.score(0.5) < 0.15
    assert kept.score(0.5) > 0.85
    assert mixed.score(0.05) == 0.0
    many = mixed.scores(np.array([0.05, 0.5, 0.9]))
    assert many.tolist() == pytest.approx([mixed.score(v) for v in (0.05, 0.5, 0.9)])


async def after_outcomes(
    policy: FocusPolicy,
    recorder: Recorder,
    first: dict[str, float],
    good: list[str],
    bad: list[str],
    judged: int,
) -> dict[str, float]:
    """The priorities of ``good`` and ``bad`` after the first ``judged`` of each proved on-topic
    and off-topic and a re-scoring: what the frontier was sent, else what they were queued
    with (``first``)."""
    for i in range(judged):
        judge(policy, good[i], html(ON, 10 + i, []))
        judge(policy, bad[i], html("astronomy", 20 + i, []))
    await policy.upkeep()
    sent = {url: p for batch in recorder.sent for url, p in batch.items()}
    assert sent, "nothing reached the frontier"
    return {url: sent.get(url, first[url]) for url in good + bad}
