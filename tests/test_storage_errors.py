"""A full disk and a corrupt crawl.db end ``gossamer crawl`` with one line naming the file
and what to do, no traceback; a crawl stopped by a full disk resumes once there is room.

The full disk is a real one: a 3 MiB tmpfs (``small_disk``, tests/conftest.py: mounting it needs
root; skipped otherwise)."""

from __future__ import annotations

import asyncio
import json
import random
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from aiohttp import web
from tests.local_app import serve

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

GOSSAMER = [sys.executable, "-m", "gossamer.cli"]
_WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india")
PAGES = 400


async def handle(request: web.Request) -> web.Response:
    """``/`` and ``/pN``: ~20 KB of text each, linking 20 further pages (PAGES in all)."""
    if request.path == "/robots.txt":
        return web.Response(status=404)
    n = 0 if request.path == "/" else int(request.path[2:])
    text = " ".join(random.Random(n).choice(_WORDS) for _ in range(3000))
    links = "".join(f'<a href="/p{n * 20 + i}">x</a>' for i in range(1, 21) if n * 20 + i < PAGES)
    body = f"<html><head><title>p{n}</title></head><body><p>{text}</p>{links}</body></html>"
    return web.Response(text=body, content_type="text/html")


async def gossamer(out: Path, port: int, *flags: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        *GOSSAMER, "crawl", f"http://127.0.0.1:{port}/", "--out", str(out), "--quiet",
        "--allow-private", "--warc", "--max-depth", "2", "--digests", "off", *flags,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    _, err = await asyncio.wait_for(proc.communicate(), 90)
    assert proc.returncode is not None
    return proc.returncode, err.decode()


async def test_a_full_disk_is_one_line_and_the_crawl_resumes(small_disk: Path) -> None:
    out = small_disk / "out"
    async with serve(handle) as port:
        code, err = await gossamer(out, port, "--overwrite")
        assert code == 1, err
        assert "Traceback" not in err, err
        [line] = [line for line in err.splitlines() if "WARNING" not in line]
        assert line.startswith(f"gossamer: cannot write {out}/"), line
        assert line.endswith(
            "no space left on device (free some space, then continue the crawl with --resume)"
        ), line
        remount = ["mount", "-o", "remount,size=64m", str(small_disk)]
        await asyncio.to_thread(subprocess.run, remount, check=True)
        code, err = await gossamer(out, port, "--resume")
    assert code == 0, err
    lines = (out / "pages.jsonl").read_text("utf-8").splitlines()
    urls = [json.loads(line)["url"] for line in lines]  # every line whole
    assert len(urls) == len(set(urls)) == PAGES
    with sqlite3.connect(out / "crawl.db") as db:
        assert db.execute("SELECT count(*) FROM pages").fetchone() == (PAGES,)


async def test_a_corrupt_crawl_db_is_one_line(tmp_path: Path) -> None:
    out = tmp_path / "out"
    async with serve(handle) as port:
        code, err = await gossamer(out, port, "--max-pages", "5")
        assert code == 0, err
        with (out / "crawl.db").open("r+b") as db:
            db.truncate(4096)
        code, err = await gossamer(out, port, "--resume")
    assert code == 1, err
    assert "Traceback" not in err, err
    [line] = err.splitlines()
    assert line.startswith(f"gossamer: {out / 'crawl.db'} is corrupt ("), line
    assert line.endswith("restore it from a copy, or start the crawl again with --overwrite")
