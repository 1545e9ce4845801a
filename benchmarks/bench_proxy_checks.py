"""What proxy checks cost a site, and what a proxy answering 404 to everything does to a crawl.

Two whole crawls (`gossamer.crawl.run_crawl`) of one loopback site through real test proxies
(`tests.fetch.proxy_servers.HttpProxy`), the site counting what it is asked for:

- ``share``: ``--proxies`` proxies, a Crawl-delay of ``--delay`` seconds, ``--interval`` as
  ``--proxy-check-interval`` (far below proxies x delay by default), ``--pages`` (7), one
  request per host at a time: the checks the site got, its robots.txt fetches, its pages,
  when the first page came and how long the crawl took.
- ``404``: 3 proxies, the first answering a plain 404 of its own to everything (``--liar``)
  or not, a site of 20 pages and ``--gone`` links to real 404s: the records by status and
  error, and the site's requests (checks apart).

Run from the worktree root: ``PYTHONPATH=src:. python benchmarks/bench_proxy_checks.py
--port 19350 [share|404] ...``; the site listens on ``--port``, the proxies on the ports
after it. To compare with another tree, run it with ``PYTHONPATH`` pointing at that tree's
``src`` (the test proxy's ``not_found`` mode comes from this tree's ``tests``).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from aiohttp import web
from tests.fetch.proxy_servers import HttpProxy

from gossamer.crawl import run_crawl
from gossamer.settings import load_settings

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@asynccontextmanager
async def _serve(handler: Handler, port: int) -> AsyncIterator[str]:
    app = web.Application()
    app.router.add_get("/{tail:.*}", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


async def _proxies(first_port: int, count: int, liar: bool = False) -> list[HttpProxy]:
    proxies = []
    for i in range(count):
        proxy = HttpProxy(not_found=liar and i == 0)
        proxy.port = first_port + i
        await proxy.start()
        proxies.append(proxy)
    return proxies


async def _crawl(origin: str, proxies: list[HttpProxy], **options: object) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        settings = load_settings(
            {
                "seeds": [f"{origin}/"],
                "out": out,
                "quiet": True,
                "text": False,
                "per_host": 1,
                "proxies": [p.url for p in proxies],
                "proxy_check_url": f"{origin}/check",
                **options,
            },
            env={},
        )
        await run_crawl(settings)
        return [json.loads(line) for line in (out / "pages.jsonl").read_text().splitlines()]


async def share(port: int, count: int, delay: float, interval: float, pages: int) -> None:
    log: list[tuple[float, str]] = []

    async def site(request: web.Request) -> web.Response:
        log.append((time.monotonic(), request.path))
        if request.path == "/robots.txt":
            return web.Response(text=f"User-agent: *\nCrawl-delay: {delay}\n")
        links = "".join(f'<a href="/p{i}">{i}</a>' for i in range(pages - 1))
        body = links if request.path == "/" else ""
        return web.Response(text=f"<html><body>{body}leaf</body></html>", content_type="text/html")

    proxies = await _proxies(port + 1, count)
    try:
        async with _serve(site, port) as origin:
            started = time.monotonic()
            records = await _crawl(origin, proxies, proxy_check_interval=interval)
            took = time.monotonic() - started
    finally:
        for proxy in proxies:
            await proxy.stop()
    paths = [path for _, path in log]
    checks, robots = paths.count("/check"), paths.count("/robots.txt")
    first = next(at for at, path in log if path == "/") - started
    print(
        f"share: {count} proxies, Crawl-delay {delay}, interval {interval}: records "
        f"{len(records)}, checks {checks}, robots.txt {robots}, pages "
        f"{len(paths) - checks - robots}, first page after {first:.2f}s, crawl {took:.2f}s"
    )


async def not_found(port: int, liar: bool, gone: int) -> None:
    paths: list[str] = []

    async def site(request: web.Request) -> web.Response:
        paths.append(request.path)
        if request.path.startswith("/gone"):
            raise web.HTTPNotFound()
        links = "".join(f'<a href="/p{i}">x</a>' for i in range(20))
        links += "".join(f'<a href="/gone{i}">x</a>' for i in range(gone))
        return web.Response(text=f"<html><body>{links}</body></html>", content_type="text/html")

    proxies = await _proxies(port + 1, 3, liar)
    try:
        async with _serve(site, port) as origin:
            records = await _crawl(origin, proxies, robots=False)
    finally:
        for proxy in proxies:
            await proxy.stop()
    statuses = collections.Counter((r["status"], r["error"]) for r in records)
    print(
        f"404: liar {liar}, {gone} real 404s: records {len(records)} {dict(statuses)}, "
        f"site requests {len(paths) - paths.count('/check')}, checks {paths.count('/check')}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("share", "404"))
    parser.add_argument("--port", type=int, required=True, help="the site's; proxies after it")
    parser.add_argument("--proxies", type=int, default=12)
    parser.add_argument("--delay", type=float, default=0.4)
    parser.add_argument("--interval", type=float, default=0.5)
    parser.add_argument("--pages", type=int, default=7, help="share: the site's pages")
    parser.add_argument("--liar", action="store_true")
    parser.add_argument("--gone", type=int, default=5)
    args = parser.parse_args()
    if args.what == "share":
        asyncio.run(share(args.port, args.proxies, args.delay, args.interval, args.pages))
    else:
        asyncio.run(not_found(args.port, args.liar, args.gone))


if __name__ == "__main__":
    main()
