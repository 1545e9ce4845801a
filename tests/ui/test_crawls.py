"""Crawls read from their output folders: crawl.db read-only and a batch at a time,
status.json and stats.json, the tail of crawl.log; and the API that serves them."""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from pathlib import Path

import aiohttp
import pytest
from tests.ui.server import dashboard

from gossamer.crawldb import CrawlDB
from gossamer.logs import LOG_FILE, logging_to_file, logging_to_stderr
from gossamer.sinks.base import PageRecord
from gossamer.sinks.sqlite import SQLiteSink
from gossamer.status import write_status
from gossamer.ui import crawls as crawls_module
from gossamer.ui.crawls import Crawls, crawl_id, discover

pytestmark = pytest.mark.timeout(30)


def folder(path: Path) -> Path:
    path.mkdir(parents=True)
    return path


async def make_crawl(out: Path, pages: int, start: float = 1_700_000_000.0) -> None:
    db = CrawlDB(folder(out) / "crawl.db")
    sink = SQLiteSink(db)
    records = []
    for i in range(pages):
        host = f"h{i % 3}.test"
        if i % 10 == 9:
            records.append(PageRecord(f"http://{host}/{i}", None, 1, error="timeout: read",
                                      fetched_at=start + i))  # fmt: skip
        else:
            records.append(PageRecord(f"http://{host}/{i}", 200, 1, fetched_at=start + i,
                                      title=f"<b>page {i}</b>", text="x" * 30_000))  # fmt: skip
    sink.stage(records)
    await db.commit()
    db.close()


async def test_a_crawl_is_read_in_batches_and_grouped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await make_crawl(tmp_path / "a", 120)
    (tmp_path / "not-a-crawl").mkdir()
    monkeypatch.setattr(crawls_module, "BATCH", 50)
    crawls = Crawls([tmp_path])
    [view] = crawls.refresh_list()
    assert view.ident == crawl_id(tmp_path / "a") and discover([tmp_path]) == {
        view.ident: tmp_path / "a"
    }
    assert view.detail()["records"] == 50  # one batch per look
    view.refresh()
    view.refresh()
    detail = view.detail()
    assert detail["records"] == 120 and detail["state"] == "unknown"
    assert detail["statuses"] == {"200": 108, "no response": 12}
    [errors] = detail["errors"]
    assert errors["reason"] == "timeout" and errors["count"] == 12
    assert len(errors["examples"]) == 3
    assert dict(detail["top_hosts"]) == {"h0.test": 40, "h1.test": 40, "h2.test": 40}
    assert [p["id"] for p in detail["last_pages"][:2]] == [120, 119]
    assert sum(point["rate"] for point in detail["rate"]) > 0
    record = view.record(1)
    assert record is not None and record["url"] == "http://h0.test/0"
    assert len(record["text"]) < 30_000  # long texts are cut
    assert view.record(10_000) is None
    crawls.close()


async def test_crawl_db_is_opened_read_only(tmp_path: Path) -> None:
    await make_crawl(tmp_path / "a", 3)
    crawls = Crawls([tmp_path])
    [view] = crawls.refresh_list()
    conn = view._connect()
    with pytest.raises(sqlite3.OperationalError):
        conn.execute("DELETE FROM pages")
    crawls.close()


async def test_the_state_comes_from_status_json(tmp_path: Path) -> None:
    out = tmp_path / "a"
    await make_crawl(out, 3)
    [view] = Crawls([tmp_path]).refresh_list()
    (out / "stats.json").write_text(json.dumps({"pages": 3, "pages_per_second": 1.5}))
    assert view.live().state == "finished"
    held = [{"host": "http://h.test", "reason": "crawl-delay", "wait": 2.0, "queued": 4,
             "in_flight": 0}]  # fmt: skip
    status = {"state": "running", "updated": time.time(), "stats": {"pages": 3, "queued": 9},
              "held_back": held}  # fmt: skip
    write_status(out / "status.json", status)
    live = view.live()
    assert live.state == "running" and live.stats["queued"] == 9 and live.held_back == held
    assert live.error is None
    write_status(out / "status.json", {**status, "updated": time.time() - 60})
    assert view.live().state == "interrupted"  # the crawl died without a word
    (out / "status.json").write_text("[not json")
    live = view.live()
    assert live.state == "finished" and str(live.error).startswith("status.json: not valid JSON")


async def test_the_log_tail_reads_only_the_end(tmp_path: Path) -> None:
    out = tmp_path / "a"
    await make_crawl(out, 1)
    lines = [
        json.dumps({"time": "t", "level": "info", "message": f"old {i}"}) for i in range(20_000)
    ]
    lines += [json.dumps({"level": "warning", "message": "slow host", "event": "host-slowed"}),
              "not json at all", json.dumps({"level": "error", "message": "boom"})]  # fmt: skip
    (out / "crawl.log").write_text("\n".join(lines) + "\n")
    assert (out / "crawl.log").stat().st_size > 4 * crawls_module.LOG_TAIL_BYTES
    [view] = Crawls([tmp_path]).refresh_list()
    tail = view.log_tail("info")
    assert len(tail) == crawls_module.LOG_LINES and tail[-1]["message"] == "boom"
    assert [e["message"] for e in view.log_tail("warning")] == ["slow host", "boom"]
    assert [e["message"] for e in view.log_tail("error")] == ["boom"]


def test_crawl_log_takes_info_while_stderr_keeps_its_level(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logger = logging.getLogger("gossamer.test")
    with logging_to_stderr("warning"), logging_to_file(tmp_path / LOG_FILE):
        logger.info("an event", extra={"event": "x"})
        logger.warning("trouble")
    assert "an event" not in capsys.readouterr().err
    entries = [json.loads(line) for line in (tmp_path / LOG_FILE).read_text().splitlines()]
    assert [(e["level"], e["message"]) for e in entries] == [("info", "an event"),
                                                            ("warning", "trouble")]  # fmt: skip


async def test_the_api_serves_a_crawl(tmp_path: Path) -> None:
    await make_crawl(tmp_path / "a", 30)
    async with dashboard([tmp_path]) as served:
        headers = {"Authorization": f"Bearer {served.guard.token}"}
        async with aiohttp.ClientSession(headers=headers) as http:
            async with http.get(served.base + "/api/overview") as response:
                [crawl] = (await response.json())["crawls"]
            assert crawl["name"] == "a" and crawl["pages"] == 30
            base = f"{served.base}/api/crawls/{crawl['id']}"
            async with http.get(base) as response:
                detail = await response.json()
            assert detail["last_pages"][1]["title"] == "<b>page 28</b>"  # shown as text
            async with http.get(base + "/pages/2") as response:
                assert (await response.json())["url"] == "http://h1.test/1"
            for path, status in (("/pages/x", 404), ("/pages/99", 404), ("/log?level=loud", 400)):
                async with http.get(base + path) as response:
                    assert response.status == status, path
            for bad in ("../../etc", "0123456789ab", "%2e%2e"):
                async with http.get(f"{served.base}/api/crawls/{bad}") as response:
                    assert response.status == 404


async def test_a_crawl_started_over_is_read_again(tmp_path: Path) -> None:
    out = tmp_path / "a"
    await make_crawl(out, 12)
    crawls = Crawls([tmp_path])
    [view] = crawls.refresh_list()
    assert view.detail()["records"] == 12
    for path in out.iterdir():  # what --overwrite does
        path.unlink()
    out.rmdir()
    await make_crawl(out, 4)
    view.refresh()
    assert view.detail()["records"] == 4
    crawls.close()
