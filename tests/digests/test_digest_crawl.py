"""Duplicate content in an embedded crawl of a real site on loopback: exact duplicates by
default and near ones with ``--digests near``, named in ``duplicate_of``, their links not
followed (followed with ``follow_duplicates``), counts in stats.json, ``--digests off``, and
``--resume`` keeping the digests."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from aiohttp import web
from tests.content_site import crawl, records_by_path
from tests.digests.digest_site import handle
from tests.local_app import serve

from gossamer.crawl import run_crawl
from gossamer.settings import load_settings

pytestmark = pytest.mark.timeout(60)


def stats(out: Path) -> dict[str, int]:
    data: dict[str, int] = json.loads((out / "stats.json").read_text())
    return data


async def test_exact_duplicates_only(tmp_path: Path) -> None:
    records = await crawl(tmp_path / "out", handle, digests="exact")
    first = records["/a?ref=1"]["url"]
    assert records["/a?ref=2"]["duplicate_of"] == first  # a query value in the template only
    assert records["/print/a"]["duplicate_of"] is None  # "Printed from" line: near
    assert records["/edit/a"]["duplicate_of"] is None
    assert "/from/print" in records and "/from/session" not in records
    counted = stats(tmp_path / "out")
    assert (counted["duplicates_exact"], counted["duplicates_near"]) == (1, 0)


async def test_near_duplicates_by_default_are_named_and_their_links_not_followed(
    tmp_path: Path,
) -> None:
    records = await crawl(tmp_path / "out", handle)
    first = records["/a?ref=1"]["url"]
    assert records["/a?ref=1"]["duplicate_of"] is None
    assert records["/a?ref=2"]["duplicate_of"] == first  # a query value: exact
    assert records["/print/a"]["duplicate_of"] == first  # "Printed from" line: near
    assert records["/edit/a"]["duplicate_of"] == first  # a sentence added: near
    assert records["/b"]["duplicate_of"] is None  # same template, another article
    assert records["/"]["duplicate_of"] is None  # too short to tell
    assert "/from/first" in records and "/from/b" in records
    assert not {"/from/session", "/from/print", "/from/edit"} & set(records)
    assert records["/a?ref=2"]["outlinks"] == 6  # found (5 in the navigation), not followed
    counted = stats(tmp_path / "out")
    assert (counted["duplicates_exact"], counted["duplicates_near"]) == (1, 2)


async def test_follow_duplicates_follows_their_links(tmp_path: Path) -> None:
    records = await crawl(tmp_path / "out", handle, digests="near", follow_duplicates=True)
    assert records["/a?ref=2"]["duplicate_of"] == records["/a?ref=1"]["url"]
    assert {"/from/session", "/from/print", "/from/edit"} <= set(records)


async def test_digests_off_marks_nothing(tmp_path: Path) -> None:
    records = await crawl(tmp_path / "out", handle, digests="off")
    assert all(r["duplicate_of"] is None for r in records.values())
    assert {"/from/session", "/from/print", "/from/edit"} <= set(records)
    assert stats(tmp_path / "out")["duplicates_exact"] == 0


async def test_resume_keeps_the_digests(tmp_path: Path) -> None:
    out = tmp_path / "out"
    async with serve(handle) as port:
        settings = {
            "out": out, "resolve": ["site.test=127.0.0.1"], "robots": False, "quiet": True,
            "seeds": [f"http://site.test:{port}/b"],
        }  # fmt: skip
        await asyncio.wait_for(run_crawl(load_settings(settings | {"max_pages": 1}, env={})), 30)
        again = settings | {"resume": True, "max_depth": 0}
        again["seeds"] = [f"http://site.test:{port}/b?ref=9"]
        await asyncio.wait_for(run_crawl(load_settings(again, env={})), 30)
    records = records_by_path(out)
    assert records["/b?ref=9"]["duplicate_of"] == records["/b"]["url"]
    assert stats(out)["duplicates_exact"] == 1


async def hostile(request: web.Request) -> web.Response:
    """Empty pages (alike, but no text to compare) and two copies of a huge one."""
    path = request.path
    if path == "/":
        links = "".join(f'<a href="/{name}">x</a>' for name in ("e1", "e2", "h1", "h2"))
        html = f"<html><body><p>Start</p>{links}</body></html>"
    elif path in ("/e1", "/e2"):
        html = f'<html><body><nav><a href="/from{path}">next</a></nav></body></html>'
    elif path in ("/h1", "/h2"):
        words = " ".join(f"w{i % 5000}" for i in range(120_000))  # 690 KB of main text
        html = f"<html><body><article><p>{words}</p></article></body></html>"
    else:
        html = f"<html><body><p>{path}</p></body></html>"
    return web.Response(text=html, content_type="text/html")


async def test_empty_and_huge_texts(tmp_path: Path) -> None:
    records = await crawl(tmp_path / "out", hostile, digests="near")
    assert records["/e1"]["duplicate_of"] is None and records["/e2"]["duplicate_of"] is None
    assert "/from/e1" in records and "/from/e2" in records  # no text: links followed
    huge = [records["/h1"], records["/h2"]]
    assert all(r["text_chars"] > 600_000 for r in huge)
    assert sorted(r["duplicate_of"] is None for r in huge) == [False, True]
    assert {r["duplicate_of"] for r in huge} - {None} <= {r["url"] for r in huge}


FOOTER = (
    "<footer><p>Copyright 2001-2026, the Example Software Foundation. This page is licensed"
    " under the Example License, version 2. Examples and recipes in the documentation are"
    " additionally licensed under a permissive licence. See the history for details.</p>"
    "</footer>"
)


async def index_site(request: web.Request, second_title: str = "Index") -> web.Response:
    """Two link lists whose main text the extractor finds only in the shared footer (as
    python3-doc's ``genindex.html`` and ``using/index.html``), each leading to pages of its
    own; those pages hold a paragraph of their own."""
    lists = {"/": ("Contents", "/index-a", "/guide"), "/index-a": (second_title, "/letter-a", "/b")}
    if request.path in lists:
        title, *targets = lists[request.path]
        targets += [f"{targets[0]}-{i}" for i in range(12)]  # a list: more links than words / 4
        items = "".join(f'<li><a href="{t}">{t[1:]}</a></li>' for t in targets)
        body = f"<ul>{items}</ul>{FOOTER}"
    else:
        title = request.path[1:]
        body = f"<article><p>{'The page about ' + title + ' says more. ' * 12}</p></article>"
    html = f"<html><head><title>{title}</title></head><body>{body}</body></html>"
    return web.Response(text=html, content_type="text/html")


async def test_pages_with_one_boilerplate_text_and_other_titles_are_no_duplicates(
    tmp_path: Path,
) -> None:
    """The title is digested with the main text: a second list of links whose extracted
    text is the site's footer alone is not the first list's duplicate, and its links are
    followed."""
    records = await crawl(tmp_path / "out", index_site)
    assert records["/"]["text"] == records["/index-a"]["text"]  # the footer, in both
    assert records["/index-a"]["duplicate_of"] is None
    assert {"/letter-a", "/b", "/guide"} <= set(records)


async def test_a_list_of_links_named_duplicate_still_has_its_links_followed(
    tmp_path: Path,
) -> None:
    """Pages with fewer than four words of main text per link are lists of links: a second
    list titled as the first, its text the same footer, is named its duplicate, and its
    links are followed all the same."""

    async def same_titles(request: web.Request) -> web.Response:
        return await index_site(request, second_title="Contents")

    records = await crawl(tmp_path / "out", same_titles)
    assert records["/"]["title"] == records["/index-a"]["title"]
    assert records["/index-a"]["duplicate_of"] == records["/"]["url"]
    assert {"/letter-a", "/b", "/guide"} <= set(records)
