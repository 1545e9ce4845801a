"""What the focus learns as it goes, on pages made for it: links that share a list with one
that led to an on-topic page rise at the next re-scoring; links to pages already judged and
to the examples train the scorer at once; exploration sends a link into an unexplored
section, or of an unexplored hub on a flat site, first, within its share; the CPU the focus
spends is counted."""

from __future__ import annotations

from collections.abc import Mapping

from tests.focus.test_policy import ON, PHRASE, html, judge, prose

from gossamer.focus.config import FocusConfig
from gossamer.focus.policy import FocusPolicy
from gossamer.focus.topic import Topic
from gossamer.parse.links import parse_html


class Recorder:
    def __init__(self) -> None:
        self.sent: list[dict[str, float]] = []

    def __call__(self, priorities: Mapping[str, float]) -> int:
        self.sent.append(dict(priorities))
        return len(priorities)


def two_lists(first: list[str], second: list[str]) -> bytes:
    """A page of neutral prose with two lists of links whose anchors say nothing."""
    lists = "".join(
        "<ul>" + "".join(f'<li><a href="{url}">Chapter</a></li>' for url in urls) + "</ul>"
        for urls in (first, second)
    )
    return f"<html><body><main>{prose('gardening', 3)}{lists}</main></body></html>".encode()


async def test_links_beside_one_that_led_to_an_on_topic_page_rise() -> None:
    """Two lists of links with the same anchors (each to a site of its own, so where they
    point says nothing): once the first links of one list lead to
    on-topic pages and those of the other do not, the rest of the first list is re-scored
    above the rest of the second."""
    recorder = Recorder()
    policy = FocusPolicy(Topic(PHRASE), FocusConfig(rescore_every=5), reprioritize=recorder)
    good = [f"http://g{i}.test/page.html" for i in range(12)]
    bad = [f"http://b{i}.test/page.html" for i in range(12)]
    _, first = judge(policy, "http://site.test/toc.html", two_lists(good, bad))
    assert first[good[11]] == first[bad[11]]
    for i in range(6):
        judge(policy, good[i], html(ON, 10 + i, []))
        judge(policy, bad[i], html("astronomy", 20 + i, []))
    await policy.upkeep()
    sent = {url: p for batch in recorder.sent for url, p in batch.items()}
    assert sent, "no re-scoring reached the frontier"
    assert all(sent[url] > first[url] for url in good[6:]), sent
    assert min(sent[url] for url in good[6:]) > max(sent.get(url, first[url]) for url in bad[6:])


def test_links_to_judged_pages_and_examples_train_the_scorer() -> None:
    """A page listing an example and a page already judged teaches the scorer without any
    page fetched through its links; the example's link goes first."""
    example = "http://site.test/example.html"
    policy = FocusPolicy(Topic(PHRASE, [prose(ON, 1)]), known=[example])
    judge(policy, "http://site.test/judged.html", html("astronomy", 2, []))
    assert policy.model.updates == 0
    links = [example, "http://site.test/judged.html", "http://site.test/other.html"]
    _, priorities = judge(policy, "http://site.test/toc.html", two_lists(links, []))
    assert policy.model.updates == 2
    assert priorities[example] == 1.0 > priorities["http://site.test/other.html"]


async def test_exploration_sends_an_unexplored_section_first_within_its_share() -> None:
    recorder = Recorder()
    config = FocusConfig(rescore_every=5, explore_share=0.1)
    policy = FocusPolicy(Topic(PHRASE), config, reprioritize=recorder)
    away = "http://other.test/section/page.html"
    links = [(f"http://site.test/docs/{i}.html", "Growing tomatoes") for i in range(30)]
    judge(policy, "http://site.test/docs/index.html", html("gardening", 1, [*links, (away, "x")]))
    for i in range(9):
        judge(policy, f"http://site.test/docs/{i}.html", html("gardening", 40 + i, []))
    await policy.upkeep()
    assert policy.stats().explorations == 0  # 10 judged: a tenth is one page, none left over
    judge(policy, "http://site.test/docs/9.html", html("gardening", 60, []))
    judge(policy, "http://site.test/docs/10.html", html("gardening", 61, []))
    for i in range(11, 14):
        judge(policy, f"http://site.test/docs/{i}.html", html("gardening", 50 + i, []))
    await policy.upkeep()
    assert policy.stats().explorations == 1
    assert recorder.sent[-1].get(away) == 1.0
    for i in range(14, 19):
        judge(policy, f"http://site.test/docs/{i}.html", html("gardening", 50 + i, []))
    await policy.upkeep()
    assert policy.stats().explorations == 1  # 19 judged: the share allows one


async def test_exploration_sends_a_link_of_an_unexplored_hub_on_a_flat_site() -> None:
    """Every page in one directory (one section): the crawl follows the front page's links
    with topic words in their anchors; a contents page it judged, whose fifteen links say
    nothing of the topic, is a hub none of whose links was tried, and exploration sends its
    best link first, within half its share."""
    recorder = Recorder()
    config = FocusConfig(rescore_every=5, explore_share=0.1)
    policy = FocusPolicy(Topic(PHRASE), config, reprioritize=recorder)
    front = [(f"http://site.test/a{i}.html", "Locking and deadlocks") for i in range(30)]
    contents = [(f"http://site.test/c{i}.html", "Chapter") for i in range(15)]
    judge(policy, "http://site.test/", html("gardening", 1, front))
    judge(policy, "http://site.test/contents.html", html("astronomy", 2, contents))
    for i in range(18):
        judge(policy, f"http://site.test/a{i}.html", html("gardening", 40 + i, []))
    await policy.upkeep()
    assert policy.stats().explorations == 1
    explored = [url for batch in recorder.sent for url, p in batch.items() if p == 1.0]
    assert len(explored) == 1 and explored[0].startswith("http://site.test/c"), explored
    judge(policy, explored[0], html("astronomy", 70, []))
    for i in range(18, 22):
        judge(policy, f"http://site.test/a{i}.html", html("gardening", 60 + i, []))
    await policy.upkeep()
    assert policy.stats().explorations == 1  # 25 judged: half the share allows one hub


def test_evidence_learns_only_from_the_pages_it_ranked() -> None:
    """A page fetched for its list (its list's share well above its hubs') turns out
    on-topic: the lists' calibration learns from it, the hubs' does not (a chapter fetched
    for its citations or its list made every hub at the same level look as good)."""
    policy = FocusPolicy(Topic(PHRASE))
    url = "http://site.test/a.html"
    judge(policy, "http://site.test/", html("gardening", 1, [(url, "Chapter")]))
    entry = policy._waiting[url]
    entry.listed, entry.hub = 0.8, 0.3
    hub, listed = policy.hub_calibration.score(0.3), policy.list_calibration.score(0.8)
    judge(policy, url, html(ON, 2, []))
    assert policy.list_calibration.score(0.8) > listed
    assert policy.hub_calibration.score(0.3) == hub


def test_the_focus_counts_its_cpu() -> None:
    policy = FocusPolicy(Topic(PHRASE))
    page = parse_html(html(ON, 1, [("http://site.test/a.html", "locking")]), "http://site.test/")
    policy.judge("http://site.test/", 0, page, None, page.links)
    assert policy.stats().cpu_seconds > 0
