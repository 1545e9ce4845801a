"""What a host's sitemaps leave in crawl.db once its page budget is spent: a crawl of one
host with ``--max-pages-per-host 1`` whose robots.txt names two sitemaps of ``--urls``
entries each, served once the seed was asked (its lease took the host's one page). Prints
the ``sitemap_entries`` rows, the size of crawl.db (with its WAL) and the crawl's CPU time.

``python benchmarks/bench_sitemap_budget_db.py [--urls 50000] [--port 0]``
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import tempfile
import time
from pathlib import Path

from aiohttp import web

from gossamer.crawl import run_crawl
from gossamer.settings import load_settings


def _app(urls: int) -> web.Application:
    seed = asyncio.Event()

    async def handle(request: web.Request) -> web.StreamResponse:
        base = f"http://{request.host}"
        if request.path == "/robots.txt":
            names = f"Sitemap: {base}/s0.xml\nSitemap: {base}/s1.xml\n"
            return web.Response(text=f"User-agent: *\n{names}")
        if request.path.endswith(".xml"):
            await seed.wait()
            name = request.path[1:-4]
            rows = "".join(
                f"<url><loc>{base}/{name}-{i}</loc><lastmod>2024-01-01</lastmod></url>"
                for i in range(urls)
            )
            return web.Response(text=f"<urlset>{rows}</urlset>", content_type="text/xml")
        seed.set()
        return web.Response(text="<html><body>page</body></html>", content_type="text/html")

    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)
    return app


async def run(urls: int, port: int) -> None:
    runner = web.AppRunner(_app(urls))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    out = Path(tempfile.mkdtemp()) / "out"
    settings = {
        "seeds": [f"http://127.0.0.1:{port}/"],
        "max_pages_per_host": 1,
        "out": out,
        "allow_private": True,
        "quiet": True,
        "delay": 0.01,
    }
    began = time.process_time()
    try:
        stats = await run_crawl(load_settings(settings, env={}))
    finally:
        await runner.cleanup()
    cpu = time.process_time() - began
    with sqlite3.connect(out / "crawl.db") as db:
        rows = db.execute("SELECT COUNT(*) FROM sitemap_entries").fetchone()[0]
    size = sum(path.stat().st_size for path in out.glob("crawl.db*"))
    print(f"sitemap_entries rows {rows}, crawl.db {size / 1e6:.1f} MB, CPU {cpu:.2f} s")
    print(f"sitemaps {stats.sitemaps}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--urls", type=int, default=50_000)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    asyncio.run(run(args.urls, args.port))


if __name__ == "__main__":
    main()
