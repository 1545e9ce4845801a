"""Malformed JSON bodies answer 400 (never 500) on every POST of the UI: real requests to a
served dashboard with the real rule editor mounted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from tests.ui.editor_pages import editor
from tests.ui.server import Served, dashboard

from gossamer.ui.bodies import MAX_DEPTH, BodyError, parse_json
from gossamer.ui.security import CSRF_HEADER

pytestmark = pytest.mark.timeout(30)

DEEP = b"[" * 20_000 + b"]" * 20_000
LONE = b'{"document": "a.toml", "rule": {"name": "\\ud800", "url": "^x$"}, "samples": []}'
JUNK = [
    b"",
    b"\xff\xfe{}",
    b'{"a": NaN}',
    b'{"a": Infinity}',
    b'{"rule": {"name": "r", "url": "^x$"}, "samples": [], "more": 1e999999, "state": "x"}',
    b'{"a": ' + b"9" * 5000 + b"}",
    b'{"a": "\\udfff"}',
    b'{"\\ud800": 1}',
    b'{"a": [' + b"{" * 40 + b"}" * 40 + b"]}",
    b"{",
]
"""Not acceptable JSON: 400 on every route."""
ODD = [
    b'{"a": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["}',  # brackets in a string
    b"[]",
    b"null",
    b'"x"',
    b'{"samples": "x", "rule": 1}',
    b'{"samples": [null, {"a": 1}], "rule": {"name": 5}}',
    b'{"rule": {"name": "r", "field": "x"}, "samples": []}',
    b'{"rule": {"name": "r", "field": [1]}, "samples": []}',
    b'{"rule": {"name": "r", "url": "("}, "samples": [], "more": 1e308}',
    b'{"rule": {"name": "r", "record": [null]}, "samples": [], "more": -1}',
    b'{"url": ["x"]}',
    b'{"url": "http://\\u0000/"}',
    b'{"document": 5, "rule": {"name": "r"}, "samples": []}',
    b'{"document": "a.toml", "rule": {"name": "r", "url": {"a": null}}, "samples": []}',
    b'{"document": "a.toml", "rule": {"name": "r\\u0000"}, "samples": [], "replaces": 7}',
    b'{"state": {"x": []}}',
]
"""JSON of the wrong shapes: refused or answered with the rule's problems, never a 5xx."""
EDITOR_POSTS = ("/editor/api/fetch", "/editor/api/preview", "/editor/api/save")
JOB_STATE = "/api/jobs/j/state"


def test_the_parser_bounds_depth_and_refuses_what_utf_8_cannot_hold() -> None:
    assert parse_json(b'{"a": ["[{", {"b": "\\u00e9\\ud83d\\ude00"}]}') == {
        "a": ["[{", {"b": "\u00e9\U0001f600"}]
    }
    assert parse_json(b"[" * MAX_DEPTH + b"]" * MAX_DEPTH) is not None
    for raw, why in [
        (DEEP, "nested deeper"),
        (b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1), "nested deeper"),
        (LONE, "lone surrogate"),
        (b'{"\\udc00": 1}', "lone surrogate"),
        (b"\xc3(", "not UTF-8"),
        (b"[NaN]", "not valid JSON"),
        (b'{"more": 1e999999}', "too large for a number"),
        (b"[-1E400]", "too large for a number"),
        (b'{"a": 1', "not valid JSON"),
    ]:
        with pytest.raises(BodyError, match=why):
            parse_json(raw)


async def _post(http: aiohttp.ClientSession, served: Served, path: str, raw: bytes) -> int:
    headers = {
        "Authorization": f"Bearer {served.guard.token}",
        "Origin": served.base,
        CSRF_HEADER: served.guard.csrf,
        "Content-Type": "application/json",
    }
    async with http.post(served.base + path, data=raw, headers=headers) as response:
        await response.read()
        return response.status


async def test_a_deep_body_and_a_lone_surrogate_answer_400(tmp_path: Path) -> None:
    async with jobs(tmp_path) as served, aiohttp.ClientSession() as http:
        assert await _post(http, served, JOB_STATE, DEEP) == 400
    async with editor(tmp_path, []) as served, aiohttp.ClientSession() as http:
        for path in EDITOR_POSTS:
            assert await _post(http, served, path, DEEP) == 400, path
        assert await _post(http, served, "/editor/api/save", LONE) == 400
        headers = {"Authorization": f"Bearer {served.guard.token}", "Origin": served.base}
        async with http.post(
            served.base + "/editor/api/save",
            data=LONE,
            headers={**headers, CSRF_HEADER: served.guard.csrf},
        ) as response:
            assert "lone surrogate" in await response.text()
    assert not (tmp_path / "a.toml").exists()


async def test_no_junk_body_is_a_server_error(tmp_path: Path) -> None:
    async with jobs(tmp_path) as served, aiohttp.ClientSession() as http:
        await _no_server_error(http, served, JOB_STATE)
    async with editor(tmp_path, []) as served, aiohttp.ClientSession() as http:
        for path in EDITOR_POSTS:
            await _no_server_error(http, served, path)


async def _no_server_error(http: aiohttp.ClientSession, served: Served, path: str) -> None:
    for raw in JUNK:
        assert await _post(http, served, path, raw) == 400, (path, raw[:60])
    for raw in ODD:
        status = await _post(http, served, path, raw)
        assert status < 500, (path, raw[:60], status)
    status = await _post(http, served, path, json.dumps({"x": "y" * 70_000}).encode())
    assert status == 413, path


def jobs(tmp_path: Path) -> Any:
    """The dashboard with jobs (of a Redis nobody listens on: the body is read first)."""
    return dashboard([tmp_path], redis="redis://127.0.0.1:1/0")
