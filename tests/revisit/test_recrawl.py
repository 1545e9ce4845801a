"""A continuous crawl (--recrawl) against a site whose pages change, keep still or disappear:
conditional requests with each validator and none, every change value in pages.jsonl and
crawl.db, revisit records in the WARC, one pace per host, and --max-duration."""

from __future__ import annotations

import asyncio
import itertools
import json
import sqlite3
import time
from pathlib import Path
from typing import Any

from tests.revisit.site import Site, serve_site
from warcio.archiveiterator import ArchiveIterator

from gossamer.crawl import run_crawl
from gossamer.settings import load_settings

DELAY = 0.05
DURATION = 4.5


async def recrawl(site: Site, out: Path, **flags: Any) -> float:
    """Crawl the site continuously with a 1-second clock; the seconds it ran."""
    settings = {
        "seeds": [site.url()],
        "out": out,
        "robots": False,
        "quiet": True,
        "recrawl": True,
        "revisit_initial": 1,
        "revisit_min": 1,
        "revisit_max": 1,
        "max_duration": DURATION,
        "delay": DELAY,
        "checkpoint_interval": 0.05,
        "warc": True,
    } | flags
    started = time.monotonic()
    await asyncio.wait_for(run_crawl(load_settings(settings, env={})), DURATION + 20)
    return time.monotonic() - started


def records(out: Path) -> list[dict[str, Any]]:
    lines = (out / "pages.jsonl").read_text("utf-8").splitlines()
    return [json.loads(line) for line in lines]


def changes(found: list[dict[str, Any]], page: str) -> list[str | None]:
    return [r["change"] for r in found if r["url"].endswith(f"/{page}")]


async def test_revisits_say_what_changed_in_every_sink(tmp_path: Path) -> None:
    out = tmp_path / "out"
    async with serve_site() as site:
        took = await recrawl(site, out)
    assert DURATION <= took < DURATION + 6, "--max-duration ends the crawl on time"
    found = records(out)
    assert all(r["change"] is not None for r in found)
    # each page's first record is new, and a revisit knows the last fetch's time
    for page in ("etag", "lm", "both", "still", "changing", "ad", "gone", "moved"):
        seen = changes(found, page)
        assert seen[0] == "new" and len(seen) >= 2, (page, seen)
    for record in found:
        assert (record["change"] == "new") == (record["previous_fetched_at"] is None), record
    # validators: a 304 each time, no body downloaded
    for page in ("etag", "lm"):
        assert set(changes(found, page)[1:]) == {"unchanged"}, page
        assert {r["status"] for r in found if r["url"].endswith(f"/{page}")} == {200, 304}
    etag_hits, lm_hits = site.hits("etag"), site.hits("lm")
    assert [h.if_none_match for h in etag_hits[1:]] == ['"e1"'] * (len(etag_hits) - 1)
    assert all(h.status == 304 for h in etag_hits[1:] + lm_hits[1:])
    assert [h.if_modified_since for h in lm_hits[:2]] == [None, "Wed, 21 Oct 2015 07:28:00 GMT"]
    # both validators: unchanged until it changes, then changed (a new ETag each time)
    both = changes(found, "both")
    assert both[1] == "unchanged" and "changed" in both[2:], both
    # no validators: compared by payload digest, and by main text (an ad is no change)
    assert set(changes(found, "still")[1:]) == {"unchanged"}
    assert set(changes(found, "changing")[1:]) == {"changed"}
    assert set(changes(found, "ad")[1:]) == {"unchanged"}
    # gone: a 404, a redirect away; checked a bounded number of times (3)
    assert changes(found, "gone")[1:] == ["gone"] * len(changes(found, "gone")[1:])
    assert 1 <= len(changes(found, "gone")[1:]) <= 3
    assert set(changes(found, "moved")[1:]) == {"gone"}
    # crawl.db holds the same records
    with sqlite3.connect(out / "crawl.db") as db:
        rows = db.execute("SELECT url, change, previous_fetched_at FROM pages ORDER BY id")
        stored = [(u, c, p) for u, c, p in rows]
    assert stored == [(r["url"], r["change"], r["previous_fetched_at"]) for r in found]
    stats = json.loads((out / "stats.json").read_text())["revisits"]
    results = stats["results"]
    assert results["not-modified"] >= 4 and results["unchanged"] >= 3
    assert results["changed"] >= 2 and results["gone"] >= 2
    assert stats["bytes_saved"] > 0


async def test_unchanged_revisits_are_warc_revisit_records(tmp_path: Path) -> None:
    out = tmp_path / "out"
    async with serve_site() as site:
        await recrawl(site, out)
    kinds: dict[str, list[tuple[str, str | None]]] = {}
    statuses: dict[str, list[int]] = {}
    for path in sorted((out / "warc").glob("*.warc.gz")):
        with path.open("rb") as stream:
            for record in ArchiveIterator(stream):
                if record.rec_type not in ("response", "revisit"):
                    continue
                url = record.rec_headers.get_header("WARC-Target-URI")
                profile = record.rec_headers.get_header("WARC-Profile")
                kinds.setdefault(url.rsplit("/", 1)[1], []).append((record.rec_type, profile))
                if record.rec_type == "response":
                    status = int(record.http_headers.get_statuscode())
                    statuses.setdefault(url.rsplit("/", 1)[1], []).append(status)
                if record.rec_type == "revisit":
                    assert record.rec_headers.get_header("WARC-Refers-To-Target-URI") == url
                    assert record.rec_headers.get_header("WARC-Refers-To-Date")
                    assert record.content_stream().read() == b""
    not_modified = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
    identical = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
    for page, profile in (("etag", not_modified), ("lm", not_modified), ("still", identical)):
        assert kinds[page][0] == ("response", None), page
        assert set(kinds[page][1:]) == {("revisit", profile)}, (page, kinds[page])
    assert {kind for kind, _ in kinds["changing"]} == {"response"}
    # a tombstone is the answer that said so, archived as it came (a 404, a 301)
    assert statuses["gone"][0] == 200 and set(statuses["gone"][1:]) == {404}, statuses
    assert statuses["moved"][0] == 200 and set(statuses["moved"][1:]) == {301}, statuses


async def test_one_pace_per_host_for_revisits_and_discovery(tmp_path: Path) -> None:
    async with serve_site() as site:
        await recrawl(site, tmp_path / "out", delay=0.2, per_host=2)
    times = [hit.at for hit in site.log]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert len(times) > 15
    assert min(gaps) >= 0.2 * 0.95, min(gaps)


async def test_max_duration_ends_a_crawl_that_would_go_on(tmp_path: Path) -> None:
    out = tmp_path / "out"
    async with serve_site() as site:
        took = await recrawl(site, out, recrawl=False, delay=0.5, max_duration=1.0)
    assert 1.0 <= took < 4.0  # the whole site takes 4.5 s at its delay
    assert 1 <= len(records(out)) < 9
    assert json.loads((out / "stats.json").read_text())["revisits"] is None
