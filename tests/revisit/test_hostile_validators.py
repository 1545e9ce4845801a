"""Revisits of a server whose validators are hostile (a raw asyncio server writing the exact
bytes): a non-ASCII ``Last-Modified`` or ``ETag`` is never sent back, valid ones are, and a
304 sent with a body is an unchanged page, fetched once per revisit, not a failure retried."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from tests.fetch.test_http import raw_server

from gossamer.crawl import run_crawl
from gossamer.settings import load_settings

DURATION = 2.5
LAST_MODIFIED = "Mon, 01 Jan 2024 00:00:00 GMT"
_PAGE = b"<html><body>" + b"".join(
    b'<a href="/%s">x</a>' % p for p in (b"nonascii", b"good", b"p304")
)


class Server:
    """The site, and the conditional headers of every request by path."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, dict[str, str]]] = []

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for _ in range(200):  # bounded: a few revisits of four pages
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
            path = head[0].split(" ")[1]
            lines = [line.partition(":") for line in head[1:] if line]
            sent = {k.lower(): v.strip() for k, _, v in lines if k.lower().startswith("if-")}
            self.asked.append((path, sent))
            writer.write(_answer(path, sent))
            await writer.drain()

    def conditions(self, path: str) -> list[dict[str, str]]:
        return [sent for p, sent in self.asked if p == path]


def _answer(path: str, sent: dict[str, str]) -> bytes:
    status, extra, body = b"200 OK", b"", _PAGE + b"</body></html>"
    if path == "/nonascii":
        extra = f'ETag: "é☃"\r\nLast-Modified: {LAST_MODIFIED}\xff\r\n'.encode()
    elif path == "/good":
        extra = f'ETag: "g1"\r\nLast-Modified: {LAST_MODIFIED}\r\n'.encode()
    elif path == "/p304":
        extra = b'ETag: "v1"\r\n'
        if "if-none-match" in sent:
            status, body = b"304 Not Modified", b"<html>BODY-IN-304 " + b"Q" * 50_000 + b"</html>"
    head = b"HTTP/1.1 " + status + b"\r\n" + extra + b"Content-Type: text/html\r\n"
    return head + b"Content-Length: %d\r\n\r\n" % len(body) + body


def _records(out: Path, page: str) -> list[dict[str, Any]]:
    lines = (out / "pages.jsonl").read_text("utf-8").splitlines()
    return [r for r in map(json.loads, lines) if r["url"].endswith(page)]


async def test_hostile_validators_are_not_sent_back(tmp_path: Path) -> None:
    server, out = Server(), tmp_path / "out"
    async with raw_server(server.serve) as base:
        settings = {
            "seeds": [f"{base}/"],
            "out": out,
            "robots": False,
            "quiet": True,
            "recrawl": True,
            "revisit_initial": 1,
            "revisit_min": 1,
            "revisit_max": 1,
            "max_duration": DURATION,
            "delay": 0.05,
            "checkpoint_interval": 0.05,
            "retry_backoff": 0.05,
        }
        await asyncio.wait_for(run_crawl(load_settings(settings, env={})), DURATION + 20)
    hostile = server.conditions("/nonascii")
    assert len(hostile) >= 2 and hostile[1:] == [{}] * (len(hostile) - 1)
    good = server.conditions("/good")
    assert len(good) >= 2
    assert good[1:] == [{"if-none-match": '"g1"', "if-modified-since": LAST_MODIFIED}] * (
        len(good) - 1
    )
    revisits = _records(out, "/p304")[1:]
    assert revisits, "the 304 page was revisited"
    assert {(r["status"], r["change"], r["attempts"], r["error"]) for r in revisits} == {
        (304, "unchanged", 1, None)
    }
    assert len(server.conditions("/p304")) == len(revisits) + 1  # one request per revisit
