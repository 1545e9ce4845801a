"""A page of many links: the URLs waiting past ``max_waiting`` are forgotten oldest first at a
constant cost (judged with the waiting URLs full it costs about what it costs with room), and
only the first ``MAX_SCORED_LINKS`` are scored."""

from __future__ import annotations

import time

import pytest

from gossamer.extract import extract
from gossamer.focus.config import FocusConfig
from gossamer.focus.policy import MAX_SCORED_LINKS, FocusPolicy
from gossamer.focus.topic import Topic
from gossamer.parse import links as links_module
from gossamer.parse.links import parse_html

URLS = 150_000


def _keeping(max_waiting: int) -> tuple[float, int]:
    """The CPU of keeping ``URLS`` new waiting URLs (as a page's links are kept), and the URLs
    waiting then."""
    policy = FocusPolicy(Topic("database transactions"), FocusConfig(max_waiting=max_waiting))
    page = parse_html(b'<html><body><a href="/a">database</a></body></html>', "http://a.test/")
    policy.judge("http://a.test/", 0, page, None, page.links)
    entry = policy._waiting["http://a.test/a"]
    urls = [f"http://a.test/p{i}" for i in range(URLS)]
    started = time.thread_time()
    for url in urls:
        policy._keep(url, entry)
    return time.thread_time() - started, policy.stats().waiting


def test_forgetting_the_oldest_waiting_urls_costs_no_more_than_keeping_them() -> None:
    """Before: 2 s full against 0.1 s with room (each eviction scanned the keys evicted
    before it); now about the same."""
    with_room, waiting = _keeping(2 * URLS)
    assert waiting == URLS + 1
    full, waiting = _keeping(50_000)
    assert waiting == 50_000
    assert full < 3 * with_room + 0.1, (full, with_room)


def _judged(links: int) -> tuple[FocusPolicy, list[str], list[float], float]:
    """A page of ``links`` links in one list judged: the policy, the page's links, their
    priorities and the focus's own CPU (its main text extracted before, as a crawl does)."""
    items = "".join(f'<li><a href="/q{i}.html">t</a></li>' for i in range(links))
    page = parse_html(f"<html><body><ul>{items}</ul></body></html>".encode(), "http://a.test/")
    content = extract(page.tree, "http://a.test/", "tree") if page.tree else None
    policy = FocusPolicy(Topic("database transactions"), FocusConfig())
    _, candidates = policy.judge("http://a.test/", 0, page, content, page.links)
    assert [c.url for c in candidates] == page.links
    return policy, page.links, [c.priority for c in candidates], policy.stats().cpu_seconds


def test_a_page_of_more_links_than_are_scored_is_judged_in_bounded_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past ``MAX_SCORED_LINKS`` a page's links go to the frontier at priority 0 unscored
    (200,000 links took 4.5 s to judge, 0.2 s now): five times the links cost the focus
    about what the first ``MAX_SCORED_LINKS`` do (a ratio of CPU times, not a time: the same
    on a loaded machine; five times as much before)."""
    monkeypatch.setattr(links_module, "MAX_PAGE_LINKS", 10 * MAX_SCORED_LINKS)  # a hook's links
    _, _, _, at_cap = _judged(MAX_SCORED_LINKS)
    policy, links, priorities, past_cap = _judged(5 * MAX_SCORED_LINKS)
    assert len(links) == 5 * MAX_SCORED_LINKS
    assert all(priority == 0.0 for priority in priorities[MAX_SCORED_LINKS:])
    assert policy.stats().waiting == MAX_SCORED_LINKS
    assert past_cap < 2.5 * at_cap + 0.05, (past_cap, at_cap)
