"""A page of many links: the URLs waiting past ``max_waiting`` are forgotten oldest first at a
constant cost (judged with the waiting URLs full it costs about what it costs with room), and
only the first ``MAX_SCORED_LINKS`` are scored."""

from __future__ import annotations

import time

from gossamer.focus.config import FocusConfig
from gossamer.focus.policy import MAX_SCORED_LINKS, FocusPolicy
from gossamer.focus.topic import Topic
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


def test_a_page_of_more_links_than_are_scored_is_judged_in_bounded_time() -> None:
    """Past ``MAX_SCORED_LINKS`` a page's links go to the frontier at priority 0 unscored
    (200,000 links took 4.5 s to judge, 0.2 s now)."""
    items = "".join(f'<li><a href="/q{i}.html">t</a></li>' for i in range(5 * MAX_SCORED_LINKS))
    page = parse_html(f"<html><body><ul>{items}</ul></body></html>".encode(), "http://a.test/")
    policy = FocusPolicy(Topic("database transactions"), FocusConfig())
    started = time.thread_time()
    _, candidates = policy.judge("http://a.test/", 0, page, None, page.links)
    spent = time.thread_time() - started
    assert [c.url for c in candidates] == page.links
    assert all(c.priority == 0.0 for c in candidates[MAX_SCORED_LINKS:])
    assert policy.stats().waiting == MAX_SCORED_LINKS
    assert spent < 0.5, spent
