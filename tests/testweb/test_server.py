"""The server: Host dispatch, keep-alive, robots, pages, encodings, the request log."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import aiohttp
import pytest

from gossamer.testweb import Role, TestWebServer, Web, generate

from .support import client, get, raw_exchange, wait_until


async def test_host_header_dispatch(server: TestWebServer, session: aiohttp.ClientSession) -> None:
    titles = []
    for index in range(3):
        async with session.get(server.url(index)) as response:
            assert response.status == 200
            body = await response.text()
        titles.append(body.split("<title>")[1].split("</title>")[0])
        assert f"(site{index}.test #0)" in titles[-1]
    assert len(set(titles)) == 3


async def test_served_bytes_equal_rendered_page(
    server: TestWebServer, session: aiohttp.ClientSession, web: Web
) -> None:
    path = next(iter(web.host(0).pages.values())).path
    async with session.get(server.url(0, path), headers={"Accept-Encoding": "identity"}) as r:
        assert await r.text() == web.render_page("site0.test", path, server.port)


async def test_unknown_and_missing_host(server: TestWebServer) -> None:
    data, _ = await raw_exchange(server.port, get("nope.test", "/", server.port))
    assert data.startswith(b"HTTP/1.1 404")
    data, _ = await raw_exchange(server.port, get("127.0.0.1", "/", server.port))
    assert data.startswith(b"HTTP/1.1 200") and b"site4.test" in data
    data, _ = await raw_exchange(server.port, b"GET / HTTP/1.0\r\n\r\n")
    assert data.startswith(b"HTTP/1.1 400")
    data, _ = await raw_exchange(server.port, b"NONSENSE\r\n\r\n")
    assert data.startswith(b"HTTP/1.1 400")
    long_header = "X-Big: " + "y" * 70_000
    data, _ = await raw_exchange(server.port, get("site0.test", "/", server.port, long_header))
    assert data.startswith(b"HTTP/1.1 431")


async def test_absolute_form_request_target(server: TestWebServer) -> None:
    target = f"http://site1.test:{server.port}/"
    request = f"GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode()
    data, _ = await raw_exchange(server.port, request)
    assert b"(site1.test #0)" in data


async def test_keep_alive_and_pipelining(server: TestWebServer) -> None:
    one = get("site0.test", "/", server.port, keep_alive=True)
    last = get("site1.test", "/robots.txt", server.port)
    data, error = await raw_exchange(server.port, one + one + last)
    assert error is None
    assert data.count(b"HTTP/1.1 200 OK") == 3
    assert data.rstrip().endswith(b"Sitemap: http://site1.test:%d/sitemap.xml" % server.port)
    before = server.stats().total_connections
    async with client() as session:
        for _ in range(30):
            async with session.get(server.url(2)) as response:
                await response.read()
    assert server.stats().total_connections == before + 1


async def test_head_request(server: TestWebServer) -> None:
    request = b"HEAD / HTTP/1.1\r\nHost: site0.test\r\nConnection: close\r\n\r\n"
    data, _ = await raw_exchange(server.port, request)
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and b"Content-Length: " in head and body == b""


async def test_robots_variants(server: TestWebServer, session: aiohttp.ClientSession) -> None:
    expected = {0: 200, 1: 200, 2: 404, 3: 500, 4: 301}
    for index, status in expected.items():
        url = server.url(index, "/robots.txt")
        async with session.get(url, allow_redirects=False) as response:
            assert response.status == status, index
            if status == 301:
                assert response.headers["Location"] == "/robots-real.txt"
    async with session.get(server.url(4, "/robots.txt")) as response:
        assert response.status == 200 and "Disallow: /shop/" in await response.text()
    async with session.get(server.url(0, "/robots-real.txt")) as response:
        assert response.status == 404
    async with session.get(server.url(1, "/robots.txt")) as response:
        text = await response.text()
        assert response.content_type == "text/plain"
        assert "User-agent: gossamer\nCrawl-delay: 1\nDisallow: /private/" in text


async def test_sitemap_lists_plain_pages(
    server: TestWebServer, session: aiohttp.ClientSession, web: Web
) -> None:
    async with session.get(server.url(0, "/sitemap.xml")) as response:
        text = await response.text()
    for page in web.host(0).pages.values():
        listed = f"<loc>{server.url(0, page.path)}</loc>" in text
        assert listed == (page.role is Role.PLAIN)


async def test_equivalent_paths_and_trailing_slash(
    server: TestWebServer, session: aiohttp.ClientSession, web: Web
) -> None:
    staff = next(p for p in web.host(0).pages if p.startswith("/~staff/"))
    async with session.get(server.url(0, staff.replace("~", "%7E"))) as response:
        assert response.status == 200
    async with session.get(server.url(0, staff.rstrip("/")), allow_redirects=False) as response:
        assert response.status == 301 and response.headers["Location"] == staff
    async with session.get(server.url(0, "/no/such/page/")) as response:
        assert response.status == 404


async def test_page_content_encoding_negotiated(server: TestWebServer, web: Web) -> None:
    by_coding = {}
    for host in web.hosts.values():
        for page in host.pages.values():
            by_coding.setdefault(page.encoding, (host.name, page.path))
    assert set(by_coding) == {"identity", "gzip", "deflate", "br"}
    async with client() as session:
        for coding, (host, path) in by_coding.items():
            url = f"http://{host}:{server.port}{path}"
            async with session.get(url, headers={"Accept-Encoding": coding}) as response:
                assert response.headers.get("Content-Encoding", "identity") == coding
                assert await response.text() == web.render_page(host, path, server.port)
            async with session.get(url, headers={"Accept-Encoding": "identity"}) as response:
                assert "Content-Encoding" not in response.headers


async def test_request_log(server: TestWebServer, session: aiohttp.ClientSession) -> None:
    started = time.monotonic()
    for path in ("/", "/status/404", "/robots.txt"):
        async with session.get(server.url(0, path)) as response:
            await response.read()
    entries = server.log[-3:]
    assert [(e.host, e.path, e.method, e.status) for e in entries] == [
        ("site0.test", "/", "GET", 200),
        ("site0.test", "/status/404", "GET", 404),
        ("site0.test", "/robots.txt", "GET", 200),
    ]
    assert all(e.user_agent.startswith("gossamer/") for e in entries)
    assert started <= entries[0].monotonic <= entries[1].monotonic <= entries[2].monotonic
    assert abs(entries[0].time - time.time()) < 5
    assert entries[1].url == server.url(0, "/status/404")


async def test_log_file_json_lines(tmp_path: Path) -> None:
    path = tmp_path / "requests.jsonl"
    async with TestWebServer(generate(1, hosts=2, pages_per_host=5), log_path=path) as server:
        async with client() as session:
            with pytest.raises(TimeoutError):
                await session.get(server.url(1, "/hang"), timeout=aiohttp.ClientTimeout(0.2))
        async with client() as session, session.get(server.url(1, "/?q=1")) as response:
            await response.read()
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(line["host"], line["path"], line["status"]) for line in lines] == [
        ("site1.test", "/hang", None),
        ("site1.test", "/?q=1", 200),
    ]
    assert set(lines[0]) >= {"method", "time", "monotonic", "user_agent", "port"}


async def test_stop_is_prompt_with_hanging_and_streaming_clients(web: Web) -> None:
    server = TestWebServer(web)
    await server.start()
    port = server.port
    exchanges = [
        asyncio.create_task(raw_exchange(port, get("site0.test", path, port)))
        for path in ("/hang", "/hang", "/slow?ms=60000", "/trickle?ms=10000", "/hang")
    ]
    await wait_until(lambda: len(server.log) == len(exchanges))
    started = time.monotonic()
    await asyncio.wait_for(server.stop(), timeout=2)
    assert time.monotonic() - started < 1
    results = await asyncio.wait_for(asyncio.gather(*exchanges), timeout=2)
    assert all(not data or data.startswith(b"HTTP/1.1 200") for data, _ in results)
    await server.stop()  # idempotent
    async with asyncio.timeout(2):
        try:
            await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            pass
        else:
            raise AssertionError("server still accepting")


async def test_throughput_over_keep_alive(server: TestWebServer) -> None:
    count = 600
    started = time.monotonic()
    async with client() as session:

        async def worker() -> None:
            for _ in range(count // 10):
                async with session.get(server.url(0, "/robots.txt")) as response:
                    await response.read()

        await asyncio.gather(*(worker() for _ in range(10)))
    assert count / (time.monotonic() - started) > 500


async def test_stop_with_an_idle_connection_logs_nothing(web: Web) -> None:
    """Stopping the server (SIGTERM, ``kill %1`` in the docs) ends a kept-alive connection
    quietly: no traceback from asyncio's stream callback (Python 3.11 logs one for a cancelled
    connection handler)."""
    loop = asyncio.get_running_loop()
    reported: list[dict[str, object]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _, context: reported.append(context))
    try:
        async with TestWebServer(web, flaky_failures=0) as server:
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(get("site0.test", "/robots.txt", server.port, keep_alive=True))
            await reader.readuntil(b"\r\n\r\n")  # answered: the connection now waits, kept alive
        await reader.read()  # the rest of the answer, then the end the server's stop made
        assert reader.at_eof()
        writer.close()
        await asyncio.sleep(0)  # the stream's done callbacks run
    finally:
        loop.set_exception_handler(previous)
    assert [context.get("message") for context in reported] == []
