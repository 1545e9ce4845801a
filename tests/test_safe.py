"""Values from the network made safe to keep: `safe_text`, `safe_location`, and `PageRecord`,
which passes its text fields through `safe_text` when built."""

from __future__ import annotations

import json
import sqlite3
import typing

import pytest

from gossamer.safe import safe_location, safe_text
from gossamer.sinks.base import FIELD_NAMES, PageRecord


def escaped(raw: bytes) -> str:
    """Header bytes as aiohttp decodes them."""
    return raw.decode("utf-8", "surrogateescape")


def test_clean_text_comes_back_as_it_is() -> None:
    for value in ("plain ascii", "café ☃ 𝄞", ""):
        assert safe_text(value) is value


@pytest.mark.parametrize(
    ("value", "want"),
    [
        (escaped(b"caf\xe9"), "caf\ufffd"),  # Latin-1 in a header
        (escaped(b"\xff\xfe"), "\ufffd\ufffd"),
        ("\udcc3\udca9", "é"),  # escaped bytes that are UTF-8 together
        ("a\ud800b", "a\ufffdb"),  # a lone high surrogate
        ("\udfff", "\ufffd"),  # a low surrogate outside the escape range
        ("é\ud83d" + escaped(b"\xe9"), "é\ufffd\ufffd"),  # both kinds at once
    ],
)
def test_surrogates_become_the_replacement_character(value: str, want: str) -> None:
    safe = safe_text(value)
    assert safe == want
    safe.encode("utf-8")  # never raises


def test_the_replacement_character_is_never_a_question_mark() -> None:
    """``str.encode(errors="replace")`` writes ``?``: in a URL that starts a query."""
    assert "?" not in safe_text("/a\ud800b" + escaped(b"\xe9"))
    assert "?" not in safe_location("/a\ud800b" + escaped(b"\xe9"))


@pytest.mark.parametrize(
    ("value", "want"),
    [
        ("/a/b?c=d#e", "/a/b?c=d#e"),
        ("/%41%zz?x=%20", "/%41%zz?x=%20"),  # escapes already there are kept
        ("/café", "/caf%C3%A9"),  # text: its UTF-8 bytes
        (escaped(b"/caf\xe9"), "/caf%E9"),  # raw bytes: the bytes sent
        ("/a\tb\r\nc\x7f", "/a%09b%0D%0Ac%7F"),  # control characters
        ("/a\ud800b", "/a%EF%BF%BDb"),  # a lone surrogate: U+FFFD, never "?"
        ("/☃ x", "/%E2%98%83%20x"),
    ],
)
def test_safe_location(value: str, want: str) -> None:
    location = safe_location(value)
    assert location == want
    assert location.isascii() and location.isprintable()


def test_a_record_makes_its_text_fields_safe() -> None:
    record = PageRecord(
        url="http://h.test/" + escaped(b"\xe9"),
        status=200,
        depth=0,
        content_type="text/html\udcff",
        title="t\ud800",
        redirect_to=escaped(b"/r\xff"),
        error="e\udc80",
    )
    assert record.url == "http://h.test/\ufffd"
    assert record.content_type == "text/html\ufffd"
    assert record.title == "t\ufffd"
    assert record.redirect_to == "/r\ufffd"
    assert record.error == "e\ufffd"
    line = record.to_json().encode("utf-8")  # never raises
    assert json.loads(line)["title"] == "t\ufffd"


def test_a_clean_record_keeps_its_values() -> None:
    title = "Ünïcödé title"
    record = PageRecord("http://h.test/", 200, 1, title=title)
    assert record.title is title


def test_flags_round_trip_through_a_row_and_json() -> None:
    record = PageRecord(
        "http://h.test/", 200, 0, flags=("deflate-raw-fallback", "html-flattened"), truncated=True
    )
    row = record.as_row()
    assert len(row) == len(FIELD_NAMES)
    assert row[FIELD_NAMES.index("flags")] == "deflate-raw-fallback html-flattened"
    assert PageRecord.from_row(row) == record
    assert json.loads(record.to_json())["flags"] == ["deflate-raw-fallback", "html-flattened"]
    plain = PageRecord("http://h.test/", 404, 0)
    at = FIELD_NAMES.index("flags")
    assert plain.as_row()[at] == ""
    assert PageRecord.from_row(plain.as_row()).flags == ()
    row = list(plain.as_row())
    row[at] = None
    assert PageRecord.from_row(tuple(row)).flags == ()


def test_hook_fields_round_trip_through_a_row() -> None:
    record = PageRecord("http://h.test/", 200, 0, extra={"k": [1, "ü", None]})
    assert record.as_row()[FIELD_NAMES.index("extra")] == '{"k":[1,"ü",null]}'
    assert PageRecord.from_row(record.as_row()) == record


def test_a_record_masks_the_password_of_its_url_only() -> None:
    record = PageRecord("https://u:pw@social.test/@alice?x=a@b", 200, 0)
    assert record.url == "https://u:***@social.test/@alice?x=a@b"
    assert PageRecord("https://social.test/@alice", 200, 0).url == "https://social.test/@alice"


def _poisoned(kind: object) -> object:
    """A value of a record field's type holding a lone surrogate, or None for a field that
    holds no text."""
    text = "Eve\ud800"
    if kind in (str, str | None):
        return text
    if kind == tuple[str, ...]:
        return (text, "Ada")
    if kind == tuple[dict[str, str | None], ...]:
        return ({"src": "http://h.test/i\ud800.png", "alt": text},)
    return None


def test_every_text_a_record_holds_is_made_safe() -> None:
    """A page's metadata (a JSON-LD author's name, an image's alt text) may hold a lone
    surrogate: the record makes it U+FFFD, so its row, its line and every sink can write it.
    Every field whose type holds text is tried, so a field added later is covered."""
    kinds = typing.get_type_hints(PageRecord)
    poisoned = {
        name: value
        for name in PageRecord.__struct_fields__
        if name not in ("extra", "found") and (value := _poisoned(kinds[name])) is not None
    }
    assert {"url", "title", "text", "authors", "images"} <= poisoned.keys()
    record = PageRecord(**{"status": 200, "depth": 0, **poisoned})  # type: ignore[arg-type]
    for value in record.as_row():
        if isinstance(value, str):
            value.encode("utf-8")  # never raises
    line = json.loads(record.to_json().encode("utf-8"))
    assert line["authors"] == ["Eve\ufffd", "Ada"]
    assert line["images"] == [{"src": "http://h.test/i\ufffd.png", "alt": "Eve\ufffd"}]
    db = sqlite3.connect(":memory:")
    db.execute(f"CREATE TABLE pages ({', '.join(FIELD_NAMES)})")
    db.execute(f"INSERT INTO pages VALUES ({', '.join('?' * len(FIELD_NAMES))})", record.as_row())
    (stored,) = db.execute("SELECT * FROM pages").fetchall()
    assert PageRecord.from_row(stored) == record
