"""Trap guards and parameter stripping in admission: each trap kind is stopped after a few
URLs, real pages are not, memory stays bounded, and tracking parameters never reach the queue."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import pytest

from gossamer.frontier.admission import Guards
from gossamer.frontier.base import Candidate, Outlinks
from gossamer.frontier.local import LocalFrontier
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.frontier.traps import (
    TrapGuard,
    TrapLimits,
    is_token,
    kinds_of,
    loops,
    shape_of,
)
from gossamer.frontier.trapvariants import odd_path
from gossamer.tracking import ParamStripper
from gossamer.urls import Scope, canonicalize

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


def test_the_lines_of_descent_remembered_are_bounded() -> None:
    guard = TrapGuard(TrapLimits(lineage=50))
    for i in range(500):
        guard.screen([(H, f"{H}/a/{i:08x}c0ffee", 1)], f"{H}/")
    assert guard.stats().lines == 50


# -- generated kinds: tokens, lines of descent -----------------------------------------------


def test_tokens_are_told_from_words_with_numbers() -> None:
    tokens = ["9f86d081", "123e4567-e89b-12d3-a456-426614174000", "dQw4w9WgXcQ", "a3f1-2c9b"]
    words = ["sha256", "base64", "python-3-12-released", "win32api", "word-12", "2to3", "x86_64"]
    assert all(is_token(t) for t in tokens)
    assert not any(is_token(w) for w in words)
    assert shape_of(f"{H}/s/77b01f3c.html").template == "/s/{id}.html"
    assert shape_of(f"{H}/feed?cursor=MlaIG4ux").token
    assert not shape_of(f"{H}/list?page=12").token


def test_a_path_has_a_line_and_a_kind() -> None:
    assert kinds_of(("3f1", "a9c0e2d4.html")) == ("/*/*.html", "/*/*.html")
    assert kinds_of(("item", "AbXk", "")) == ("/*/*/", "/item/*/")
    assert kinds_of(("cal",), "d") == ("/*", "/cal?d")


async def crawl_of(
    front: LocalFrontier, entry: str, links_of: Callable[[str], list[str]], most: int = 500
) -> list[str]:
    """A breadth-first crawl of ``entry`` (linked from the home page): the URLs fetched."""
    await front.add(Outlinks([entry], 1, f"{H}/"))
    fetched: list[str] = []
    while len(fetched) < most and (leases := await front.lease(100)):
        for lease in leases:
            fetched.append(lease.url)
            await front.add(Outlinks(links_of(lease.url), lease.depth + 1, lease.url))
            await front.ack(lease, None)
    return fetched


def digest(text: str, size: int = 8) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:size]


async def test_hashes_that_link_more_hashes_stop_after_a_step() -> None:
    front = frontier()
    fetched = await crawl_of(
        front,
        f"{H}/a/{digest('a')}",
        lambda url: [f"{H}/a/{digest(url + str(i))}" for i in range(5)],
    )
    assert len(fetched) == 6  # the entry and its five
    assert front.stats().rejected == {"trap-generated": 25}


async def test_a_first_segment_that_changes_does_not_break_the_line() -> None:
    front = frontier()

    def links(url: str) -> list[str]:
        return [f"{H}/{'pqr'[i]}{digest(url, 2)}/{digest(url + str(i))}.htm" for i in range(3)]

    fetched = await crawl_of(front, f"{H}/s/{digest('s')}.htm", links)
    assert len(fetched) == 4
    assert front.stats().rejected == {"trap-generated": 9}


async def test_plain_names_in_a_generated_kind_count_too() -> None:
    front = frontier()  # base62 ids: half of them look like words, or words with a number

    def links(url: str) -> list[str]:
        return [
            f"{H}/item/{''.join(sorted(digest(url + str(i), 12), key=str.isdigit))}"
            for i in range(4)
        ] + [f"{H}/item/{'QwErTyUiOp'[i:]}{digest(url, 2).upper()}" for i in range(2)]

    fetched = await crawl_of(front, f"{H}/item/{digest('i', 12)}", links)
    assert len(fetched) <= 1 + 6 + 6
    assert set(front.stats().rejected) == {"trap-generated"}


async def test_cursors_in_query_values_stop() -> None:
    front = frontier()

    def links(url: str) -> list[str]:
        return [f"{H}/feed?cursor={digest(url)}", f"{H}/feed?after={digest(url + 'a')}"]

    fetched = await crawl_of(front, f"{H}/feed?cursor={digest('f')}", links)
    assert len(fetched) == 3
    assert front.stats().rejected == {"trap-generated": 4}


async def test_a_calendar_of_years_and_months_in_the_query_stops() -> None:
    front = frontier()

    def links(url: str) -> list[str]:  # the next month and the previous one
        year, month = (int(v.partition("=")[2]) for v in url.partition("?")[2].split("&"))
        after, before = divmod(year * 12 + month, 12), divmod(year * 12 + month - 2, 12)
        return [f"{H}/cal?y={y}&m={m + 1}" for y, m in (after, before)]

    fetched = await crawl_of(front, f"{H}/cal?y=2026&m=11", links)
    assert len(fetched) == 5  # the month, two steps each way
    assert front.stats().rejected == {"trap-calendar": 2}


async def test_ids_nested_in_a_path_stop() -> None:
    front = frontier()
    fetched = await crawl_of(
        front,
        f"{H}/u/{digest('u')}/",
        lambda url: [f"{url}{digest(url + str(i))}/" for i in range(3)],
    )
    assert len(fetched) == 4  # /u/<id>/ and /u/<id>/<id>/ three times
    assert front.stats().rejected == {"trap-nesting": 9}


async def test_hashed_pages_of_a_paginated_list_are_all_admitted() -> None:
    front = frontier()
    commits = [digest(f"c{i}", 40) for i in range(300)]

    def links(url: str) -> list[str]:
        path = url.removeprefix(H)
        if path.startswith("/commits?page="):
            page = int(path.rpartition("=")[2])
            listed = [f"{H}/commit/{c}" for c in commits[10 * page - 10 : 10 * page]]
            return [*listed, f"{H}/commits?page={page + 1}"] if page < 30 else listed
        if path.startswith("/tree/"):
            return []
        index = commits.index(path.rpartition("/")[2])
        parent = commits[min(index + 1, 299)]
        return [f"{H}/commit/{parent}", f"{H}/tree/{commits[index]}/src/"]

    fetched = await crawl_of(front, f"{H}/commits?page=1", links, most=2000)
    assert len(fetched) == 30 + 300 + 300  # every list page, commit and tree
    assert not front.stats().rejected


# -- links with a user name or password ------------------------------------------------------


async def test_links_with_a_user_name_or_password_are_dropped() -> None:
    front = frontier()
    links = ["http://user:pw@h.test/a", "http://user@h.test/b", f"{H}/c?u=a@b"]
    result = await front.add(Outlinks(links, 1, f"{H}/"))
    assert result.added == 1 and result.rejected == {"userinfo": 2}
    redirect = await front.add([Candidate("http://u:p@h.test/d", depth=0, hops=1)])
    assert redirect.rejected == {"userinfo": 1}  # a server's redirect sends none either


async def test_a_seed_s_own_credentials_go_on() -> None:
    front = frontier()
    seed = await front.add([Candidate("http://u:p@h.test/e", seed=True)])
    assert seed.added == 1  # the user's own seed keeps its credentials
    page = "http://u:p@h.test/e"  # its relative links keep them; a link's own are dropped
    links = ["http://u:p@h.test/f", "http://x:y@h.test/g", "http://u:p@other.test/h"]
    result = await front.add(Outlinks(links, 1, page))
    assert result.added == 1 and result.rejected == {"userinfo": 2}


# -- variants of one page --------------------------------------------------------------------


def test_month_and_weekday_names_after_a_year_are_date_parts() -> None:
    november = shape_of(f"{H}/events/2026/november")
    assert november.dated and november.template == shape_of(f"{H}/events/2031/Jan").template
    assert shape_of(f"{H}/cal/2026-11-27/friday").template == "/cal/{date}/{date}"
    assert not shape_of(f"{H}/may/2026-report").dated  # a name before a year: a word


def test_templates_fold_letter_case_and_path_parameters() -> None:
    assert shape_of(f"{H}/GuIde/Intro-1").template == shape_of(f"{H}/guide/intro-2").template
    version = shape_of(f"{H}/docs/guide;v=12;state=9f3a")
    assert version.template == "/docs/guide;state;v" and version.token


def test_odd_paths_grow_by_empty_segments_file_names_or_encoding() -> None:
    assert odd_path("s/a//b//")
    assert odd_path("s/a/index.html/index.html/")
    assert odd_path("s/a/index.php//b")
    assert odd_path("enc/my%252520page")
    assert not odd_path("s/a//b")  # once: a slip in a real link
    assert not odd_path("docs/index.html")
    assert not odd_path("enc/100%2525-cotton".replace("2525", "25"))


async def test_spellings_of_one_path_in_letter_case_stop() -> None:
    guard = TrapGuard()
    spellings = ["/Guide/Intro", "/GUIDE/intro", "/guide/INTRO", "/GuIdE/InTrO"]
    verdicts = [guard.check(H, f"{H}{path}", 1) for path in spellings]
    assert verdicts == [None, None, "trap-template", "trap-template"]
    assert guard.check(H, f"{H}/Other/Page", 1) is None


def test_subdirectories_a_page_echoes_from_its_parents_stop() -> None:
    guard = TrapGuard()
    names = ["news", "blog", "team"]

    def screen(page: str) -> list[str | None]:
        return guard.screen([(H, f"{H}{page}{name}/", 1) for name in names], f"{H}{page}")

    assert screen("/") == [None] * 3
    assert screen("/news/") == [None] * 3  # the same as its parent's
    assert screen("/news/blog/") == ["trap-loop"] * 3  # and its grandparent's
    assert screen("/blog/") == [None] * 3  # another line
    # a tree whose directories name their own subdirectories is not one
    tree = [("/docs/", ["guide", "api"]), ("/docs/guide/", ["intro", "install"])]
    tree += [("/docs/guide/intro/", ["first", "second"]), ("/docs/api/", ["urls", "frontier"])]
    for page, subdirectories in tree:
        batch = [(H, f"{H}{page}{name}/", 1) for name in subdirectories]
        assert guard.screen(batch, f"{H}{page}") == [None, None]


async def test_spellings_of_one_query_in_order_and_repeats_stop() -> None:
    guard = TrapGuard()
    spellings = ["a=1&b=2", "b=2&a=1", "a=1&b=2&a=1", "b=2&a=1&b=2", "b=2&b=2&a=1"]
    verdicts = [guard.check(H, f"{H}/item?{query}", 1) for query in spellings]
    assert verdicts == [None, None, None, "trap-template", "trap-template"]
    assert guard.check(H, f"{H}/item?b=3&a=1", 1) is None  # another query
    assert guard.check(H, f"{H}/item?a=1", 1) is None


async def test_path_parameters_that_link_more_of_themselves_stop() -> None:
    front = frontier()

    def links(url: str) -> list[str]:
        return [f"{H}/docs/guide;v={int(digest(url + str(i)), 16) % 10**5}" for i in range(5)]

    fetched = await crawl_of(front, f"{H}/docs/guide;v=1", links)
    assert fetched == [f"{H}/docs/guide;v=1"]  # its variants turned away
    assert front.stats().rejected == {"trap-template": 5}
    other = await front.add(Outlinks([f"{H}/docs/other;v=2"], 3, f"{H}/docs/guide;v=1"))
    assert other.added == 1  # another page


async def test_a_query_grown_by_appending_stops() -> None:
    front = frontier()

    def links(url: str) -> list[str]:
        query, word = url.partition("?")[2], "".join(chr(97 + int(c, 16)) for c in digest(url))
        return [f"{H}/filter?{query},{word}", f"{H}/filter?{query}&tags={word[:4]}"]

    fetched = await crawl_of(front, f"{H}/filter?tags=red", links)
    assert len(fetched) == 1 + 2  # the entry and one step
    assert front.stats().rejected == {"trap-facets": 4}


def test_a_query_value_replaced_is_not_grown() -> None:
    guard = TrapGuard(TrapLimits(growth_steps=0))
    assert guard.check(H, f"{H}/list?page=12", 2, f"{H}/list?page=1") is None
    assert guard.check(H, f"{H}/list?page=2&sort=asc", 2, f"{H}/list?page=2") == "trap-facets"
    assert guard.check(H, f"{H}/browse?q=red+blue", 2, f"{H}/f?tags=red") == "trap-facets"
    assert guard.check(H, f"{H}/s?q=red+green", 2, f"{H}/s?q=red+blue") == "trap-facets"
    assert guard.check(H, f"{H}/s?d=2024-01-06", 2, f"{H}/s?d=2024-01-05") is None


async def test_a_calendar_of_month_names_stops() -> None:
    front = frontier()
    months = "january february march april may june july august september october november"
    names = [*months.split(), "december"]

    def links(url: str) -> list[str]:
        year, month = url.split("/")[-2:]
        at = int(year) * 12 + names.index(month)
        return [f"{H}/events/{(at + k) // 12}/{names[(at + k) % 12]}" for k in (1, -1)]

    fetched = await crawl_of(front, f"{H}/events/2026/november", links)
    assert len(fetched) == 5  # the month, two steps each way
    assert front.stats().rejected == {"trap-calendar": 2}


async def test_random_values_under_any_name_stop() -> None:
    front = frontier()

    def links(url: str) -> list[str]:
        return [f"{H}/shop/view?{name}={digest(url + name, 24)}" for name in ("s", "ctx", "tkn")]

    fetched = await crawl_of(front, f"{H}/shop/view?bv={digest('b', 24)}", links)
    assert len(fetched) <= 1 + 3 + 9
    assert set(front.stats().rejected) == {"trap-generated"}
