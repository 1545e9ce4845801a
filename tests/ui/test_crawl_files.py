"""Crawl folders whose files are hostile (nested without end, endless, not files at all):
that crawl is listed with what is wrong, every other crawl is shown as ever, and nothing is
read past its bound."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from tests.ui.server import Served, dashboard
from tests.ui.test_crawls import make_crawl

from gossamer.status import write_status
from gossamer.ui.crawls import TEXT_CHARS, URL_CHARS, Crawls
from gossamer.ui.files import MAX_DEPTH, MAX_JSON_BYTES, FileError, parse_json

pytestmark = pytest.mark.timeout(30)

NESTED = b"[" * 100_000 + b"]" * 100_000


def session(served: Served) -> aiohttp.ClientSession:
    """A client of the dashboard that gives up after 5 s."""
    headers = {"Authorization": f"Bearer {served.guard.token}"}
    return aiohttp.ClientSession(headers=headers, timeout=aiohttp.ClientTimeout(total=5))


@contextlib.contextmanager
def released(*fifos: Path) -> Iterator[None]:
    """Let go of a reader left waiting on one of ``fifos`` (what the code before these tests
    did), so that a failing test fails instead of hanging its event loop's shutdown."""
    try:
        yield
    finally:
        for fifo in fifos:
            with contextlib.suppress(OSError):  # ENXIO: no reader waits
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))


async def crawls_with_bad_files(out: Path) -> dict[str, str]:
    """A good crawl and one crawl per hostile file; each bad one's error, by its name."""
    await make_crawl(out / "good", 3)
    write_status(out / "good" / "status.json", {"state": "running", "updated": time.time()})
    bad = {
        "nested": "status.json: JSON nested deeper than 32 levels",
        "zero": "stats.json: not a regular file",
        "fifo": "status.json: not a regular file",
        "huge": f"stats.json: larger than {MAX_JSON_BYTES} bytes",
        "deep": "stats.json: JSON nested deeper than 32 levels",
    }
    for name in bad:
        await make_crawl(out / name, 2)
    (out / "nested" / "status.json").write_bytes(NESTED)
    (out / "zero" / "stats.json").symlink_to("/dev/zero")
    os.mkfifo(out / "fifo" / "status.json")  # opening it to read would wait for a writer
    with (out / "huge" / "stats.json").open("wb") as handle:
        handle.truncate(MAX_JSON_BYTES + 1)  # sparse: nothing of it is read
    deep = {"pages": 2, "pages_per_second": [[[[[[[[[[]]]]]]]]]]}
    for _ in range(MAX_DEPTH):
        deep = {"nested": deep}
    (out / "deep" / "stats.json").write_text(json.dumps(deep))
    return bad


async def test_a_malformed_crawl_folder_is_listed_with_why_and_the_others_are_shown(
    tmp_path: Path,
) -> None:
    errors = await crawls_with_bad_files(tmp_path)
    async with dashboard([tmp_path]) as served, session(served) as http:
        with released(tmp_path / "fifo" / "status.json"):
            async with http.get(served.base + "/api/overview") as response:
                assert response.status == 200, await response.text()
                crawls = {c["name"]: c for c in (await response.json())["crawls"]}
            assert set(crawls) == {"good", *errors}
            good = crawls.pop("good")
            assert good["state"] == "running" and good["error"] is None and good["pages"] == 3
            for name, crawl in crawls.items():
                assert crawl["error"] == errors[name] and crawl["state"] == "unknown", crawl
                assert crawl["pages"] == 2
                async with http.get(f"{served.base}/api/crawls/{crawl['id']}") as response:
                    assert response.status == 200, name
                    detail = await response.json()
                assert detail["error"] == crawl["error"] and detail["stats"] == {}


async def test_a_bad_status_json_falls_back_to_stats_json_and_says_so(tmp_path: Path) -> None:
    out = tmp_path / "a"
    await make_crawl(out, 2)
    (out / "status.json").write_bytes(NESTED)
    (out / "stats.json").write_text(json.dumps({"pages": 7, "pages_per_second": float("nan")}))
    async with dashboard([tmp_path]) as served, session(served) as http:
        async with http.get(served.base + "/api/overview") as response:
            text = await response.text()
        [crawl] = json.loads(text, parse_constant=strict)["crawls"]  # as a browser reads it
        assert crawl["state"] == "finished" and crawl["pages"] == 7
        assert crawl["pages_per_second"] == 0
        assert crawl["error"] == "status.json: JSON nested deeper than 32 levels"


async def test_a_hostile_crawl_log_is_not_a_500_and_never_waits(tmp_path: Path) -> None:
    out = tmp_path / "a"
    await make_crawl(out, 1)
    line = json.dumps({"level": "error", "message": "boom"}).encode()
    (out / "crawl.log").write_bytes(b"[" * 200_000 + b"\n" + line + b"\n")
    async with dashboard([tmp_path]) as served, session(served) as http:
        async with http.get(served.base + "/api/overview") as response:
            [crawl] = (await response.json())["crawls"]
        url = f"{served.base}/api/crawls/{crawl['id']}/log?level=info"
        async with http.get(url) as response:
            assert response.status == 200
            lines = (await response.json())["lines"]
        assert lines[-1]["message"] == "boom"
        assert lines[0]["message"].startswith("[[[")  # shown as the text it is
        (out / "crawl.log").unlink()
        os.mkfifo(out / "crawl.log")
        with released(out / "crawl.log"):
            async with http.get(url) as response:
                assert response.status == 200 and (await response.json())["lines"] == []


def strict(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def test_crawl_files_parse_bounded_in_depth() -> None:
    nested = b"[" * MAX_DEPTH + b"]" * MAX_DEPTH
    assert parse_json(nested) is not None
    for raw in (b"[" + nested + b"]", NESTED, b'{"a": ' * 40 + b"1" + b"}" * 40):
        with pytest.raises(FileError, match="nested deeper than 32 levels"):
            parse_json(raw)
    assert parse_json(b"[NaN, -Infinity, 1e999, 2.5]") == [None, None, None, 2.5]
    with pytest.raises(FileError, match="not valid JSON"):
        parse_json(b"\xff[")


async def test_a_crawl_db_of_huge_values_is_read_cut(tmp_path: Path) -> None:
    out = tmp_path / "a"
    await make_crawl(out, 3)
    huge = "x" * 4_000_000
    with sqlite3.connect(out / "crawl.db") as db:
        db.execute(
            "UPDATE pages SET url = ?, title = ?, error = ?, text = ?, extra = ? WHERE id = 2",
            ("http://h.test/" + huge, huge, "timeout: " + huge, huge, huge.encode()),
        )
    db.close()
    async with dashboard([tmp_path]) as served, session(served) as http:
        async with http.get(served.base + "/api/overview") as response:
            [crawl] = (await response.json())["crawls"]
        async with http.get(f"{served.base}/api/crawls/{crawl['id']}") as response:
            detail = await response.read()
        assert len(detail) < 100_000  # the URL, title and error of the last pages, cut
        [page] = [p for p in json.loads(detail)["last_pages"] if p["id"] == 2]
        assert len(page["url"]) == URL_CHARS and len(page["title"]) == 200
        async with http.get(f"{served.base}/api/crawls/{crawl['id']}/pages/2") as response:
            record = await response.json()
        assert len(record["text"]) == TEXT_CHARS + len(" [...]")
        assert record["extra"] == "<4000000 bytes>" and record["status"] == 200
    [view] = Crawls([tmp_path]).refresh_list()
    tracemalloc.start()
    try:
        assert view.record(2) is not None
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000  # SQLite cut the texts: none was read whole into Python
    view.close()


async def test_infinite_numbers_in_crawl_db_are_shown_as_null(tmp_path: Path) -> None:
    await make_crawl(tmp_path / "good", 2)
    out = tmp_path / "odd"
    await make_crawl(out, 3)
    with sqlite3.connect(out / "crawl.db") as db:
        db.execute("UPDATE pages SET fetched_at = 9e999, elapsed_ms = -9e999 WHERE id = 2")
    db.close()
    async with dashboard([tmp_path]) as served, session(served) as http:

        async def strict_json(path: str) -> Any:
            async with http.get(served.base + path) as response:
                assert response.status == 200, path
                return json.loads(await response.text(), parse_constant=strict)

        crawls = {c["name"]: c for c in (await strict_json("/api/overview"))["crawls"]}
        assert crawls["good"]["pages"] == 2 and crawls["odd"]["pages"] == 3
        detail = await strict_json(f"/api/crawls/{crawls['odd']['id']}")
        [page] = [p for p in detail["last_pages"] if p["id"] == 2]
        assert page["fetched_at"] is None and page["elapsed_ms"] is None
        record = await strict_json(f"/api/crawls/{crawls['odd']['id']}/pages/2")
        assert record["fetched_at"] is None and record["url"] == "http://h1.test/1"
