"""The pages the examples link to (their chapter, their neighbours): a link to one rises
above its equals as soon as it is met, the evidence falls on a web where such pages turn out
off-topic, and a crawl given an example that links to its chapter's pages fetches them before
the pages listed ahead of them behind the same neutral anchors."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from tests.focus.test_evidence import crawl_docs
from tests.focus.test_policy import ON, PHRASE, html, judge, prose

from gossamer.focus.policy import FocusPolicy
from gossamer.focus.topic import Topic

EXAMPLE = "http://site.test/example.html"


def test_a_page_an_example_links_to_rises_above_its_equals() -> None:
    near = "http://site.test/near.html"
    policy = FocusPolicy(Topic(PHRASE, [prose(ON, 1)]), known=[EXAMPLE], near=[near, EXAMPLE])
    links = [("/other.html", "more"), ("/near.html", "more")]
    _, priorities = judge(policy, "http://site.test/", html("astronomy", 2, links))
    assert priorities[near] >= priorities["http://site.test/other.html"] + 0.3, priorities


def test_example_neighbours_that_turn_out_off_topic_stop_rising() -> None:
    near = [f"http://site.test/n{i}.html" for i in range(13)]
    policy = FocusPolicy(Topic(PHRASE, [prose(ON, 1)]), known=[EXAMPLE], near=near)
    index = [(urlsplit(url).path, "more") for url in near[:12]]
    _, first = judge(policy, "http://site.test/", html("astronomy", 2, index))
    for i, url in enumerate(near[:12]):
        judge(policy, url, html("gardening", 10 + i, []))
    _, later = judge(policy, "http://site.test/x.html", html("astronomy", 3, [("/n12.html", "")]))
    assert later[near[12]] < first[near[0]] - 0.3, (later, first)


def _site_page(path: str) -> str | None:
    """A flat site: an index listing twenty off-topic pages, then six on-topic ones, every
    anchor neutral; the example (not listed) links to the six."""
    off = [f"/b{i}.html" for i in range(20)]
    on = [f"/a{i}.html" for i in range(1, 7)]
    if path in ("/", "/index.html"):
        return html("astronomy", 1, [(p, "page") for p in off + on]).decode()
    if path == "/a0.html":
        return html(ON, 0, [(p, "see also") for p in on]).decode()
    if path in on:
        return html(ON, int(path[2:-5]), []).decode()
    if path in off:
        return html("astronomy", 20 + int(path[2:-5]), []).decode()
    return None


async def test_a_crawl_fetches_the_pages_its_example_links_to_first(tmp_path: Path) -> None:
    fetched = await crawl_docs(tmp_path, _site_page, 7)
    assert len(fetched) == 7
    assert sum(path.startswith("/a") for path in fetched) >= 5, fetched
