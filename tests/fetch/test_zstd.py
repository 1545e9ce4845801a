"""zstd Content-Encoding against real servers on 127.0.0.1: decoded under the same caps and
bomb ratio as gzip and br, every frame of a body read, cut or corrupt frames flagged."""

from __future__ import annotations

import asyncio
import gzip
import json
import sys
import tracemalloc

import pytest
from aiohttp import web
from tests.fetch.test_http import PAGE, fetcher, raw_server, read_request, serve_app

from gossamer.fetch import FetchResult
from gossamer.fetch.decoding import MAX_MEMBERS, Body

if sys.version_info >= (3, 14):
    from compression import zstd
else:
    from backports import zstd


def _zeros_bomb(megabytes: int) -> bytes:
    compressor = zstd.ZstdCompressor(level=3)
    zeros = bytes(1 << 20)
    return b"".join(compressor.compress(zeros) for _ in range(megabytes)) + compressor.flush()


async def _fetch_body(body: bytes, coding: str = "zstd", **config: object) -> FetchResult:
    async def send(request: web.Request) -> web.Response:
        return web.Response(body=body, headers={"Content-Encoding": coding})

    app = web.Application()
    app.router.add_get("/", send)
    async with serve_app(app) as base, fetcher(**config) as f:
        return await f.fetch(base + "/")


async def test_zstd_body_is_decoded_and_advertised() -> None:
    seen: list[str] = []
    payload = zstd.compress(PAGE)

    async def send(request: web.Request) -> web.Response:
        seen.append(request.headers["Accept-Encoding"])
        return web.Response(body=payload, headers={"Content-Encoding": "zstd"})

    app = web.Application()
    app.router.add_get("/", send)
    async with serve_app(app) as base, fetcher() as f:
        result = await f.fetch(base + "/")
    assert seen == ["gzip, deflate, br, zstd"]
    assert (result.status, result.error, result.truncated, result.flags) == (200, None, False, ())
    assert result.body == PAGE
    assert result.wire_bytes == len(payload) < len(PAGE)


async def test_zstd_body_kept_raw_for_the_archive_is_decoded_once() -> None:
    payload = zstd.compress(PAGE)
    result = await _fetch_body(payload, keep_wire=True)
    assert result.body == PAGE
    assert result.exchange is not None
    assert result.exchange.body == payload


async def test_every_zstd_frame_is_decoded_skippable_ones_too() -> None:
    thirds = [PAGE[:1000], PAGE[1000:20000], PAGE[20000:]]
    skippable = (0x184D2A5E).to_bytes(4, "little") + (5).to_bytes(4, "little") + b"skip!"
    payload = zstd.compress(thirds[0]) + skippable + zstd.compress(thirds[1])
    payload += zstd.compress(thirds[2])
    result = await _fetch_body(payload)
    assert (result.error, result.truncated, result.flags) == (None, False, ())
    assert result.body == PAGE


async def test_bytes_after_a_zstd_frame_are_flagged_and_the_body_kept() -> None:
    result = await _fetch_body(zstd.compress(PAGE) + b"\x00\x00not zstd")
    assert (result.error, result.truncated) == (None, False)
    assert result.flags == ("trailing-garbage",)
    assert result.body == PAGE


async def test_truncated_zstd_frame_is_flagged() -> None:
    cut = zstd.compress(PAGE)[:-20]

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        head = f"HTTP/1.1 200 OK\r\nContent-Encoding: zstd\r\nContent-Length: {len(cut)}\r\n\r\n"
        writer.write(head.encode() + cut)
        await writer.drain()
        await reader.read()

    async with raw_server(handler) as base, fetcher() as f:
        result = await f.fetch(base + "/")
    assert result.error is None
    assert result.truncated
    assert PAGE.startswith(result.body)


async def test_corrupt_zstd_is_a_decode_error() -> None:
    result = await _fetch_body(b"\x28\xb5\x2f\xfd" + b"\xff" * 200)
    assert (result.status, result.error, result.truncated) == (200, "decode-error", True)


async def test_zstd_window_over_8_mib_is_refused_before_it_is_allocated() -> None:
    options = {zstd.CompressionParameter.window_log: 27}
    compressor = zstd.ZstdCompressor(options=options)
    payload = compressor.compress(PAGE) + compressor.flush()  # streamed: no content size
    result = await _fetch_body(payload)
    assert (result.error, result.truncated) == ("decode-error", True)


async def test_zstd_bomb_is_capped() -> None:
    bomb = _zeros_bomb(100)
    assert len(bomb) < 10_000  # a ratio over 10,000
    cap = 1 << 20
    tracemalloc.start()
    try:
        result = await _fetch_body(bomb, max_decoded_bytes=cap)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.truncated
    assert result.error == "decompression-bomb"
    assert result.body == bytes(cap)
    assert peak < 40 * 1024 * 1024


async def test_zstd_cap_on_ordinary_text_truncates_without_error() -> None:
    text = json.dumps([f"word{i} page{i * 7} host{i % 13}" for i in range(20_000)]).encode()
    result = await _fetch_body(zstd.compress(text), max_decoded_bytes=10_000)
    assert (result.truncated, result.error) == (True, None)
    assert result.body == text[:10_000]


async def test_stacked_codings_with_zstd_are_undone_in_reverse() -> None:
    payload = zstd.compress(gzip.compress(PAGE))
    result = await _fetch_body(payload, coding="gzip, zstd")
    assert (result.error, result.body) == (None, PAGE)


def test_many_tiny_zstd_frames_are_cut_after_max_members() -> None:
    frame = zstd.compress(b"a")
    body = Body("zstd", 10 << 20, 10 << 20)
    assert body.feed(frame * (MAX_MEMBERS + 5)) is False
    assert body.value() == b"a" * MAX_MEMBERS
    assert (body.truncated, body.flags) == (True, ("zstd-frames-cut",))


@pytest.mark.parametrize("step", [1, 7, 4096])
def test_zstd_fed_in_small_chunks(step: int) -> None:
    payload = zstd.compress(PAGE) + zstd.compress(PAGE[:100])
    body = Body("zstd", 10 << 20, 10 << 20)
    for i in range(0, len(payload), step):
        assert body.feed(payload[i : i + step])
    body.finish()
    assert (body.value(), body.truncated, body.error) == (PAGE + PAGE[:100], False, None)
