"""pages.jsonl and items.jsonl: a checkpoint's records appended line for line, however many and
long, each one line for every line reader (no raw U+2028, U+2029 or U+0085)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import msgspec
from aiohttp import web
from tests.local_app import serve

from gossamer.crawl import run_crawl
from gossamer.safe import json_lines
from gossamer.settings import load_settings
from gossamer.sinks.base import FIELD_NAMES, Item, PageRecord
from gossamer.sinks.jsonl import ItemJsonlSink, JsonlSink, repair_jsonl


async def test_a_big_checkpoint_is_written_whole_and_in_order(tmp_path: Path) -> None:
    path = tmp_path / "pages.jsonl"
    sink = JsonlSink(path)
    # 3 MB of text over 300 records: written a megabyte at a time, no line cut or lost
    records = [
        PageRecord(f"http://a.test/{i}", 200, 0, text=f"{i} " + "é" * 10_000) for i in range(300)
    ]
    await sink.write(records[:1])
    await sink.write([])
    await sink.write(records[1:])
    sink.close()
    lines = path.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["url"] for line in lines] == [r.url for r in records]
    assert json.loads(lines[-1])["text"] == records[-1].text
    assert repair_jsonl(path) == 300


BREAKS = "one\u2028two\u2029three\x85four"
"""Line breaks that JSON encoders leave raw and ``str.splitlines`` splits on."""


def test_line_breaks_are_escaped_and_characters_ending_in_their_last_bytes_are_not() -> None:
    # é, è and Å end in the last byte of U+2029, U+2028 and U+0085 (A9, A8, 85)
    kept = "é è Å ©"
    for breaks in (BREAKS, "\u2028", "\u2029", "\x85", ""):
        line = json.dumps({"text": f"{kept}{breaks}{kept}"}, ensure_ascii=False)
        escaped = json_lines(bytearray(line.encode()))
        assert escaped.decode() == line.replace("\u2028", "\\u2028").replace(
            "\u2029", "\\u2029"
        ).replace("\x85", "\\u0085")
        assert json.loads(escaped)["text"] == f"{kept}{breaks}{kept}"
        assert len(escaped.decode().splitlines()) == 1


async def test_no_line_break_inside_a_line_of_pages_or_items(tmp_path: Path) -> None:
    pages, items = JsonlSink(tmp_path / "pages.jsonl"), ItemJsonlSink(tmp_path / "items.jsonl")
    found = (Item("http://a.test/1", "r", 0, 1.0, {BREAKS: [BREAKS], "n": 1}),)
    records = [
        PageRecord("http://a.test/1", 200, 0, title=BREAKS, text=BREAKS, found=found),
        PageRecord("http://a.test/2", 200, 0, extra={"hook": BREAKS}),
        PageRecord("http://a.test/3", 200, 0, extra={None: BREAKS}),
    ]  # the third: msgspec refuses a key of null, the standard encoder writes it
    await pages.write(records)
    await items.write(records)
    pages.close()
    items.close()
    lines = (tmp_path / "pages.jsonl").read_text("utf-8").splitlines()
    assert [json.loads(line)["url"] for line in lines] == [r.url for r in records]
    first = json.loads(lines[0])
    assert first["title"] == first["text"] == BREAKS  # the same characters back
    assert json.loads(lines[1])["extra"] == {"hook": BREAKS}
    assert json.loads(lines[2])["extra"] == {"null": BREAKS}
    (line,) = (tmp_path / "items.jsonl").read_text("utf-8").splitlines()
    assert json.loads(line)["fields"] == {BREAKS: [BREAKS], "n": 1}
    assert repair_jsonl(tmp_path / "pages.jsonl") == 3


RULES = """
[[rule]]
name = "page"
url = '.'

[[rule.field]]
name = "headline"
jsonld = "Article.headline"

[[rule.field]]
name = "label"
css = "h1"
attr = "title"
"""
LD = f'{{"@type": "Article", "headline": "{BREAKS}"}}'
PAGE = (
    f'<html><head><script type="application/ld+json">{LD}</script></head>'
    f'<body><h1 title="{BREAKS}">heading</h1><p>text</p></body></html>'
)
"""A page that holds the line breaks where the page stage keeps them as they are."""


async def test_a_crawl_writes_the_line_breaks_of_a_page_escaped(tmp_path: Path) -> None:
    async def page(request: web.Request) -> web.Response:
        if request.path == "/robots.txt":
            return web.Response(status=404)
        return web.Response(text=PAGE, content_type="text/html", charset="utf-8")

    rules = tmp_path / "rules.toml"
    rules.write_text(RULES, "utf-8")
    out = tmp_path / "out"
    async with serve(page) as port:
        settings = {"seeds": [f"http://127.0.0.1:{port}/"], "out": out, "quiet": True}
        settings |= {"rules": [rules], "max_pages": 1}
        stats = await asyncio.wait_for(run_crawl(load_settings(settings, env={})), 30)
    assert stats.pages == 1
    (line,) = (out / "pages.jsonl").read_text("utf-8").splitlines()
    assert json.loads(line)["url"] == f"http://127.0.0.1:{port}/"
    (line,) = (out / "items.jsonl").read_text("utf-8").splitlines()
    assert json.loads(line)["fields"] == {"headline": BREAKS, "label": BREAKS}


def test_a_password_in_a_url_of_a_record_or_item_is_shown_as_stars() -> None:
    record = PageRecord("http://a:pw@h.test/x", 200, 0, canonical="http://u:hunter2@h.test/c")
    item = Item("http://a:pw@h.test/x", "rule", 0, None, {})
    line = record.to_json() + item.to_json()
    assert "pw" not in line.replace("***", "") and "hunter2" not in line
    assert record.canonical == "http://u:***@h.test/c" and item.url == "http://a:***@h.test/x"


def test_a_token_as_a_url_s_user_name_is_shown_as_stars() -> None:
    """A user name alone (``https://TOKEN@host/``) may be a token: masked like a password,
    the path's own ``@`` left alone."""
    record = PageRecord("http://T0KEN@h.test/@me", 200, 0, redirect_to="http://T0KEN@h.test/x")
    item = Item("http://T0KEN@h.test/p@q", "rule", 0, None, {})
    line = record.to_json() + item.to_json()
    assert "T0KEN" not in line
    assert (record.url, record.redirect_to) == ("http://***@h.test/@me", "http://***@h.test/x")
    assert item.url == "http://***@h.test/p@q"


async def test_a_file_of_lines_holds_each_record_s_json_line(tmp_path: Path) -> None:
    """The sink encodes into one buffer and escapes the line breaks there: each line is
    still the record's own `to_json`, whichever encoder wrote it, across write chunks."""
    path = tmp_path / "pages.jsonl"
    sink = JsonlSink(path)
    records = [
        PageRecord("http://a.test/1", 200, 0, title=BREAKS, text=f"é{BREAKS}ü" * 9000),
        PageRecord("http://a.test/2", 200, 0, text="plain " * 100_000, flags=("a", "b")),
        PageRecord("http://a.test/3", 200, 0, extra={None: BREAKS}),  # the standard encoder
        PageRecord("http://a.test/4", 200, 0, extra={"x": [1, "\x85"]}, authors=("Zoë",)),
        PageRecord("http://a.test/5", None, 0, error="dns"),
    ]
    records += [PageRecord(f"http://a.test/{i}", 200, 0, text="✓" * i) for i in range(6, 80)]
    await sink.write(records)
    sink.close()
    expected = "".join(record.to_json() + "\n" for record in records)
    assert path.read_bytes() == expected.encode("utf-8")


def test_a_record_s_line_holds_its_stored_fields_with_items_or_without() -> None:
    """A record without items is encoded as itself, its empty ``found`` cut off: the line is
    the one of its stored fields, in order, as a record with items writes it."""
    item = Item("http://a.test/", "rule", 0, 1.5, {"f": "v"})
    bare = PageRecord("http://a.test/", 200, 0, title="Zoë", flags=("a",), extra={"k": [1]})
    carrying = msgspec.structs.replace(bare, found=(item,), items=1)
    stored = dict(zip(FIELD_NAMES, bare.values(), strict=True))
    assert "found" not in FIELD_NAMES and bare == msgspec.structs.replace(carrying, items=0)
    assert bare.to_json() == json.dumps(stored, ensure_ascii=False, separators=(",", ":"))
    assert carrying.to_json() == bare.to_json().replace('"items":0', '"items":1')
    for record in (bare, carrying):
        buffer = bytearray(b"[")
        record.json_into(buffer)
        assert buffer == b"[" + record.to_json().encode("utf-8")
