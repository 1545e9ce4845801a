"""Tracking parameters stripped from links in a whole crawl of a real server on loopback:
the empty parameters around a removed one go with it (``/a?x=1&&utm_campaign=z`` is
``/a?x=1``), and a query without any removed keeps its spelling but for its empty pairs,
which canonicalization drops (``/c?x=1&&y=2`` is ``/c?x=1&y=2``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from aiohttp import web
from tests.content_site import crawl

from gossamer.tracking import ParamStripper
from gossamer.urls import canonicalize

pytestmark = pytest.mark.timeout(60)

LINKS = ["/a?x=1&&utm_campaign=z", "/b?utm_source=s&&y=2&", "/c?x=1&&y=2"]


async def handle(request: web.Request) -> web.Response:
    links = "".join(f'<a href="{link}">{link}</a>' for link in LINKS)
    return web.Response(body=f"<html>{links}</html>".encode(), content_type="text/html")


async def test_no_empty_parameters_are_left_behind(tmp_path: Path) -> None:
    records = await crawl(tmp_path / "out", handle, digests="off")
    assert {"/a?x=1", "/b?y=2", "/c?x=1&y=2"} <= set(records), sorted(records)
    assert not any(path.endswith("&") for path in records), sorted(records)


@pytest.mark.parametrize(
    ("url", "stripped"),
    [
        ("http://h.test/a?x=1&&utm_campaign=z", "http://h.test/a?x=1"),
        ("http://h.test/a?&utm_source=1&", "http://h.test/a"),
        ("http://h.test/a?x=&y&&z=1", "http://h.test/a?x=&y&z=1"),  # nothing removed
    ],
)
def test_stripping_leaves_no_empty_parameter(url: str, stripped: str) -> None:
    assert ParamStripper().strip(canonicalize(url)) == stripped
