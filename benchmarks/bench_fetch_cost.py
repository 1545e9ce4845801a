"""CPU a response costs the HTTP client on the real pages: aiohttp alone, with gzip, gossamer's.

Serves the documentation sets of ``realweb.py`` with nginx (gzip, as ``bench_realpages.py``
serves them), then fetches every HTML file of them in one process pinned to one core, 16
requests in flight, three ways, alternated round by round:

- ``aiohttp``: ``session.get`` and ``read`` of the body as it came (no decompression), the
  least any aiohttp crawler pays;
- ``aiohttp+gzip``: the same, the body then inflated whole by ISA-L (``isal_zlib``);
- ``gossamer``: :class:`gossamer.fetch.Fetcher` with its defaults (streamed, bounded
  decoding, headers read into the record, times stamped), as a crawl's fetch step.

It prints the CPU milliseconds per response of each round and the medians: what the client
costs a page before any parse, next to the parse floor of ``bench_realpages.py``. Every way
runs on the event loop a crawl runs on (uvloop when installed; ``GOSSAMER_EVENT_LOOP=asyncio``
for the standard loop: see ``gossamer.eventloop``).

With ``--urls FILE`` it fetches the URLs listed there instead (and each site's
``robots.txt``): ``bench_realpages.py`` gives it the answers its last gossamer crawl read, the
404s of the sets' broken links among them, so the floor counts what that crawl had to fetch.

Usage: ``PYTHONPATH=src .venv/bin/python benchmarks/bench_fetch_cost.py [--rounds 4]
[--port 18497] [--limit N] [--urls FILE] [--json]`` (``--json``: the medians and the number
of responses as one line of JSON, as ``bench_realpages.py`` reads them; the rounds go to
standard error).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from urllib.parse import urlsplit

import nginx
import realweb
from bench_crawl import choose_cpus

ROOT = Path(__file__).resolve().parent.parent
IN_FLIGHT = 16
Way = Callable[[list[str]], Awaitable[None]]


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def _each(urls: list[str], one: Callable[[str], Awaitable[None]]) -> None:
    slots = asyncio.Semaphore(IN_FLIGHT)

    async def bounded(url: str) -> None:
        async with slots:
            await one(url)

    await asyncio.gather(*(bounded(url) for url in urls))


async def plain_aiohttp(urls: list[str], inflate: bool = False) -> None:
    """Every URL with aiohttp alone; ``inflate``: the gzip body inflated whole."""
    import aiohttp
    from isal import isal_zlib

    headers = {"Accept-Encoding": "gzip"}
    async with aiohttp.ClientSession(auto_decompress=False, headers=headers) as session:

        async def one(url: str) -> None:
            async with session.get(url, allow_redirects=False) as response:
                body = await response.read()
                if inflate and response.headers.get("Content-Encoding") == "gzip":
                    isal_zlib.decompressobj(31).decompress(body)

        await _each(urls, one)


async def gzip_aiohttp(urls: list[str]) -> None:
    """`plain_aiohttp` with the bodies inflated."""
    await plain_aiohttp(urls, inflate=True)


async def gossamer_fetcher(urls: list[str]) -> None:
    """Every URL with gossamer's fetcher, its defaults."""
    from gossamer.fetch import Fetcher
    from gossamer.fetch.result import FetchConfig

    async with Fetcher(FetchConfig()) as fetcher:

        async def one(url: str) -> None:
            await fetcher.fetch(url)

        await _each(urls, one)


WAYS: dict[str, Way] = {
    "aiohttp": plain_aiohttp,
    "aiohttp+gzip": gzip_aiohttp,
    "gossamer": gossamer_fetcher,
}


def urls_of(sites: Sequence[realweb.Site], port: int, limit: int | None) -> list[str]:
    """The URL of every HTML file served, in a fixed order."""
    urls = []
    for site in sites:
        for file in realweb.html_files([site]):
            urls.append(f"http://{site.ip}:{port}/{file.relative_to(site.root).as_posix()}")
    return urls[:limit]


def urls_listed(listing: Path, sites: Sequence[realweb.Site], port: int) -> list[str]:
    """The URLs of ``listing`` (one a line, as a crawl of ``bench_realpages.py`` fetched
    them) on ``port``, with the ``/robots.txt`` of each site: every answer the crawl read."""
    urls = [f"http://{site.ip}:{port}/robots.txt" for site in sites]
    served = {site.ip for site in sites}
    for line in listing.read_text(encoding="utf-8").splitlines():
        parts = urlsplit(line.strip())
        if parts.hostname in served:
            path = parts.path + (f"?{parts.query}" if parts.query else "")
            urls.append(f"http://{parts.hostname}:{port}{path}")
    return urls


def measure(urls: list[str], rounds: int) -> dict[str, list[float]]:
    """CPU milliseconds per response, by way, round by round (the order alternating)."""
    from gossamer import eventloop, tls

    tls.defer_ca_file()  # as ``gossamer crawl`` does: no CA bundle read for http pages
    eventloop.run(gossamer_fetcher(urls[:50]))  # imports and first connections out of the way
    figures: dict[str, list[float]] = {name: [] for name in WAYS}
    for number in range(rounds):
        order = list(WAYS.items())
        for name, way in order if number % 2 == 0 else order[::-1]:
            started = _cpu()
            eventloop.run(way(urls))  # the loop a crawl runs on (GOSSAMER_EVENT_LOOP)
            figures[name].append(1000 * (_cpu() - started) / len(urls))
            print(f"round {number + 1} {name:<13} {figures[name][-1]:.4f} ms", file=sys.stderr)
    return figures


def main(argv: Sequence[str] | None = None) -> int:
    """Serve the real pages, fetch them every way, print the medians."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4, help="rounds of every way (4)")
    parser.add_argument("--port", type=int, default=18497, help="port of every host (18497)")
    parser.add_argument("--limit", type=int, help="fetch only the first N files")
    parser.add_argument(
        "--urls", type=Path, help="fetch these URLs (one a line, any port) and robots.txt"
    )
    parser.add_argument("--out", type=Path, default=ROOT / "bench-out" / "fetch-cost")
    parser.add_argument("--json", action="store_true", help="the medians as one JSON line")
    parser.add_argument(
        "--docs",
        type=realweb.doc_sets,
        default=realweb.DOCS,
        metavar="PACKAGE=GLOB,...",
        help="documentation sets to serve (as bench_realpages.py's --docs)",
    )
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    sites = realweb.lay_out(args.out / "www", args.docs)
    if not sites:
        print("bench: no documentation package installed (realweb.py)", file=sys.stderr)
        return 2
    if args.urls is not None:
        urls = urls_listed(args.urls, sites, args.port)[: args.limit]
    else:
        urls = urls_of(sites, args.port, args.limit)
    server_cpu, client_cpu = choose_cpus()
    if client_cpu is not None:
        os.sched_setaffinity(0, {client_cpu})
    ips = [site.ip for site in sites]
    with nginx.serve(args.out / "nginx", args.out / "www", ips, args.port, server_cpu, True):
        figures = measure(urls, args.rounds)
    if args.json:
        medians = {name: statistics.median(values) for name, values in figures.items()}
        print(json.dumps({"responses": len(urls), "ms": medians}))
        return 0
    print(f"{len(urls)} responses, {IN_FLIGHT} in flight, CPU ms per response (median):")
    for name, values in figures.items():
        print(f"  {name:<13} {statistics.median(values):.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
