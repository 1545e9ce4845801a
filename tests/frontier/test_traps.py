"""Trap guards and parameter stripping in admission: each trap kind is stopped after a few
URLs, real pages are not, memory stays bounded, and tracking parameters never reach the queue."""

from __future__ import annotations

import pytest

from gossamer.frontier.admission import Guards
from gossamer.frontier.base import Candidate, Outlinks
from gossamer.frontier.local import LocalFrontier
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.frontier.traps import TrapGuard, TrapLimits, loops, shape_of
from gossamer.urls import ParamStripper, Scope, canonicalize

H = "http://h.test"


def frontier(guards: Guards | None = None) -> LocalFrontier:
    scope = Scope.for_seeds([], ["test"])
    return LocalFrontier(scope, PolitenessPolicy(per_host=100), guards=guards)


async def queued(front: LocalFrontier) -> list[str]:
    return [lease.url for lease in await front.lease(10_000)]


# -- stripping -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "stripped"),
    [
        ("http://h.test/a?utm_source=x&b=1&UTM_Medium=m", "http://h.test/a?b=1"),
        ("http://h.test/a?gclid=1&fbclid=2", "http://h.test/a"),
        ("http://h.test/a;jsessionid=ABC?x=1", "http://h.test/a?x=1"),
        ("http://h.test/a;JSESSIONID=ABC/b;v=1", "http://h.test/a/b;v=1"),
        ("http://h.test/?PHPSESSID=9&Sid=3&q=a", "http://h.test/?q=a"),
        ("http://h.test/a?sidebar=1&utm=2", "http://h.test/a?sidebar=1&utm=2"),
        ("http://h.test/plain/page", "http://h.test/plain/page"),
    ],
)
def test_tracking_and_session_parameters_are_stripped(url: str, stripped: str) -> None:
    assert ParamStripper().strip(canonicalize(url)) == stripped


async def test_the_stripped_url_is_queued_once() -> None:
    front = frontier()
    result = await front.add(
        [
            Candidate(f"{H}/a?utm_source=mail"),
            Candidate(f"{H}/a;jsessionid=0F3A"),
            Candidate(f"{H}/a?GCLID=x"),
            Candidate(f"{H}/a"),
        ]
    )
    assert (result.added, result.duplicates) == (1, 3)
    assert await queued(front) == [f"{H}/a"]


async def test_stripping_can_be_turned_off() -> None:
    front = frontier(Guards(strip=()))
    await front.add([Candidate(f"{H}/a?utm_source=mail"), Candidate(f"{H}/a")])
    assert sorted(await queued(front)) == [f"{H}/a", f"{H}/a?utm_source=mail"]


# -- templates -------------------------------------------------------------------------------


def test_templates_fold_digits_dates_ids_and_query_values() -> None:
    assert shape_of(f"{H}/cal/2026/11/28").template == shape_of(f"{H}/cal/2031/01/02").template
    assert shape_of(f"{H}/cal/2026/11/28").dated
    assert shape_of(f"{H}/s?date=2026-11-28").dated
    assert shape_of(f"{H}/s?b=2&a=x").template == shape_of(f"{H}/s?a=y&b=3").template == "/s?a&b"
    uuid = "123e4567-e89b-12d3-a456-426614174000"
    assert shape_of(f"{H}/o/{uuid}/").template == "/o/{id}/"
    assert shape_of(f"{H}/news/word-12/").template == "/news/word-#/"
    assert not shape_of(f"{H}/article/123456").dated


def test_loops_are_runs_repeated_in_a_row() -> None:
    assert loops(("loop", "a", "b", "a", "b", "a", "b", ""), 3)
    assert loops(("x", "x", "x"), 3)
    assert not loops(("loop", "a", "b", "a", "b", ""), 3)
    assert not loops(("2024", "01", "01", ""), 3)


# -- each trap kind --------------------------------------------------------------------------


async def test_an_endless_calendar_stops_a_few_links_deep() -> None:
    front = frontier()
    fetched = 0
    day, depth = 1, 1
    links = [f"{H}/cal/2026/01/{day:02d}"]
    while links and fetched < 100:  # a crawl of the calendar, next-day links only
        await front.add(Outlinks(links, depth))
        leased = await queued(front)
        fetched += len(leased)
        day, depth = day + 1, depth + 1
        links = [f"{H}/cal/2026/01/{day:02d}"] if leased else []
    assert fetched == 3  # the first day and two steps (date_steps)
    assert front.stats().rejected == {"trap-calendar": 1}


async def test_dated_pages_linked_from_one_list_are_all_admitted() -> None:
    front = frontier()
    posts = [f"{H}/2024/{m:02d}/{d:02d}/post/" for m in range(1, 13) for d in range(1, 29)]
    result = await front.add(Outlinks(posts, 1))
    assert result.added == len(posts) and not result.rejected


async def test_faceted_navigation_is_stopped_at_its_combinations() -> None:
    front = frontier()
    names = ("brand", "color", "size", "price", "material", "rating")
    values = [f"v{i}" for i in range(10)]
    singles = [f"{H}/shop?{n}={v}" for n in names for v in values]
    assert (await front.add(Outlinks(singles, 1))).added == 60  # one filter: pages
    doubles = [f"{H}/shop?brand=v0&{n}={v}" for n in names[1:] for v in values]
    result = await front.add(Outlinks(doubles, 2))  # a filter page's links: 5 combinations
    assert result.added == 0 and result.rejected == {"trap-facets": 50}
    later = await front.add(Outlinks([f"{H}/shop?color=v1&size=v2"], 2))
    assert later.rejected == {"trap-facets": 1}


async def test_new_query_name_combinations_stop_at_the_limit() -> None:
    guard = TrapGuard(TrapLimits(query_combos=3))
    verdicts = [guard.check(H, f"{H}/list?{name}=1", 1) for name in ("a", "b", "c", "d")]
    assert verdicts == [None, None, None, "trap-facets"]
    assert guard.check(H, f"{H}/list?a=2", 1) is None  # a combination known already


async def test_a_relative_link_loop_stops() -> None:
    front = frontier()
    path, fetched = "/loop/", 0
    while fetched < 50:
        await front.add([Candidate(H + path, depth=fetched)])
        if not await queued(front):
            break
        fetched += 1
        path += "a/b/"
    assert fetched == 3  # /loop/, /loop/a/b/, /loop/a/b/a/b/
    assert front.stats().rejected == {"trap-loop": 1}


async def test_session_ids_not_stripped_are_turned_away() -> None:
    front = frontier()
    result = await front.add(
        [
            Candidate(f"{H}/(S(abcdefghijklmnopqrstuvwx))/account", depth=1),
            Candidate(f"{H}/account?session_id=8F2E", depth=1),
            Candidate(f"{H}/account?sid=8F2E", depth=1),  # stripped: the page itself
        ]
    )
    assert result.added == 1 and result.rejected == {"trap-session": 2}


async def test_a_template_has_a_budget() -> None:
    front = frontier(Guards(traps=TrapLimits(per_template=50)))
    result = await front.add(Outlinks([f"{H}/item/{i}" for i in range(80)], 1))
    assert result.added == 50 and result.rejected == {"trap-template": 30}


async def test_trap_guards_can_be_turned_off() -> None:
    front = frontier(Guards(traps=None))
    result = await front.add(Outlinks([f"{H}/cal/2026/01/{d:02d}" for d in range(1, 29)], 9))
    loop = await front.add([Candidate(f"{H}/l/a/b/a/b/a/b/a/b/", depth=1)])
    assert result.added == 28 and loop.rejected == {"repeated-segments": 1}


async def test_real_pages_are_never_stopped() -> None:
    front = frontier()
    pages = [f"{H}/{s}/word-{i}/" for s in ("news", "docs", "blog") for i in range(900)]
    pages += [f"{H}/product?id={i}" for i in range(900)]
    pages += [f"{H}/?{name}=1" for name in ("p", "cat", "tag", "s", "m", "author", "paged")]
    pages += [f"{H}/list?cat={c}&page={p}" for c in range(20) for p in range(30)]
    result = await front.add(Outlinks(pages, 3))
    assert result.added == len(pages) and not result.rejected


async def test_seeds_are_never_turned_away() -> None:
    front = frontier()
    result = await front.add([Candidate(f"{H}/account?session_id=1"), Candidate(f"{H}/a/a/a/")])
    assert result.added == 2 and not result.rejected


def test_memory_is_bounded() -> None:
    guard = TrapGuard(TrapLimits(hosts=20, templates=30))
    for host in range(100):
        key = f"http://h{host}.test"
        for i in range(100):
            guard.check(key, f"{key}/t{i}/{i}?q{i}=1", 1)
    stats = guard.stats()
    assert stats.hosts == 20 and stats.templates <= 20 * 30
