"""Focused crawling on the topical test web (:mod:`gossamer.testweb.topical`): harvest rate and
target recall after N pages, breadth first against ``--focus-mode soft`` and ``hard``, and
two ceilings: the oracle crawler (follows links from the seed like any crawler, but knows each
page's distance to the nearest on-topic page and fetches the closest first) and "perfect"
(every fetch on-topic, as if their URLs were known).

Each crawl runs in this process against the test web on a loopback port, up to the largest N,
with the topic ``database transactions, isolation levels and locking`` and two example pages;
the first N fetched HTML pages (pages.jsonl keeps their order) are compared with the web's
known on-topic set (hard mode with ``--focus-tolerance 3``: the seed, a portal, lies three
generic hubs above the topic). Harvest = on-topic pages among the first N / N; recall =
on-topic pages among the first N / all on-topic pages. Politeness is read from the server's
own request log: the smallest spacing between two requests to the Crawl-delay host.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_focus.py [--n 100 200 500] [--json]
        [--modes breadth-first soft hard "soft, phrase only"] [--seed 7] [--slack S]
"""

from __future__ import annotations

import argparse
import asyncio
import heapq
import itertools
import json
import logging
import tempfile
import time
from pathlib import Path
from typing import Any

from gossamer.crawl import run_crawl
from gossamer.settings import CrawlSettings, load_model
from gossamer.testweb.topical import (
    SLOW_DELAY,
    SLOW_HOST,
    TopicalServer,
    TopicalWeb,
    generate_topical,
)

PHRASE = "database transactions, isolation levels and locking"
EXAMPLES = ("/reference/storage/engine/concurrency/0/", "/reference/storage/engine/concurrency/5/")
HARD_TOLERANCE = 3
"""The seed is a portal three generic hubs above the topic: hard mode has to tunnel through."""
MODES = ("breadth-first", "soft", "hard", "soft, phrase only")
FOCUSED: dict[str, Any] = {}
"""Settings of the focused crawls given on the command line (``focus_slack``)."""


async def crawl(server: TopicalServer, mode: str, pages: int, out: Path) -> dict[str, Any]:
    """One crawl of the topical web; its fetched pages in order and the politeness figures."""
    flags: dict[str, Any] = {
        "seeds": [server.url("www.test")],
        "out": out,
        "resolve": ["*.test=127.0.0.1"],
        "allow_domains": ["test"],
        "quiet": True,
        "max_pages": pages,
        "concurrency": 16,
    }
    if mode != "breadth-first":
        flags["focus_phrase"] = PHRASE
        flags["focus_mode"] = "hard" if mode == "hard" else "soft"
        if mode == "hard":
            flags["focus_tolerance"] = HARD_TOLERANCE
        if "phrase only" not in mode:
            flags["focus_examples"] = [server.url("docs.test", p) for p in EXAMPLES]
        flags.update(FOCUSED)
    settings = load_model(CrawlSettings, flags, env={})
    server.log.clear()
    started = time.monotonic()
    stats = await run_crawl(settings)
    elapsed = time.monotonic() - started
    records = [json.loads(line) for line in (out / "pages.jsonl").read_text().splitlines()]
    fetched = [r["url"] for r in records if r["status"] == 200 and r.get("title") is not None]
    slow = sorted(h.monotonic for h in server.log if h.host == SLOW_HOST)
    gaps = [b - a for a, b in itertools.pairwise(slow)]
    return {
        "fetched": fetched,
        "seconds": round(elapsed, 2),
        "focus": stats.focus,
        "slow_requests": len(slow),
        "slow_min_gap": round(min(gaps), 3) if gaps else None,
    }


def oracle_order(web: TopicalWeb, port: int, n: int) -> list[str]:
    """The pages an oracle crawler fetches first: it must follow links from the seed like any
    crawler, but knows each page's distance (in links) to the nearest on-topic page and
    always fetches the closest page it knows of."""
    links = {
        key: [(link.host, link.path) for link in page.links] for key, page in web.pages.items()
    }
    back: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for source, targets in links.items():
        for target in targets:
            back.setdefault(target, []).append(source)
    distance = {k: 0 for k, page in web.pages.items() if page.topic == web.target}
    todo = list(distance)
    for key in todo:  # breadth first over reversed links
        for source in back.get(key, []):
            if source not in distance:
                distance[source] = distance[key] + 1
                todo.append(source)
    far = len(web.pages)
    seed = ("www.test", "/")
    queue, seen, order = [(distance.get(seed, far), 0, seed)], {seed}, []
    while queue and len(order) < n:
        _, _, key = heapq.heappop(queue)
        order.append(f"http://{key[0]}:{port}{key[1]}")
        for target in links.get(key, []):
            if target in web.pages and target not in seen:
                seen.add(target)
                heapq.heappush(queue, (distance.get(target, far), len(seen), target))
    return order


def figures(fetched: list[str], relevant: set[str], n: int) -> tuple[float, float]:
    first = fetched[:n]
    hits = sum(url in relevant for url in first)
    return hits / max(len(first), 1), hits / len(relevant)


async def main(
    ns: list[int], as_json: bool, modes: tuple[str, ...] = MODES, seed: int = 7
) -> dict[str, Any]:
    web = generate_topical(seed)
    report: dict[str, Any] = {"n": ns}
    async with TopicalServer(web) as server:
        relevant = web.relevant(server.port)
        report["pages"] = len(web.pages)
        report["relevant"] = len(relevant)
        with tempfile.TemporaryDirectory() as tmp:
            for i, mode in enumerate(modes):
                run = await crawl(server, mode, max(ns), Path(tmp) / str(i))
                run["at"] = {n: figures(run["fetched"], relevant, n) for n in ns}
                run["fetched"] = len(run["fetched"])
                report[mode] = run
        oracle = oracle_order(web, server.port, max(ns))
    report["oracle crawler"] = {"at": {n: figures(oracle, relevant, n) for n in ns}}
    report["perfect"] = {
        "at": {n: (min(len(relevant), n) / n, min(len(relevant), n) / len(relevant)) for n in ns}
    }
    if as_json:
        print(json.dumps(report, indent=2))
        return report
    print(f"topical web: {report['pages']} pages, {report['relevant']} on topic")
    print(f"{'crawl':<20}" + "".join(f"  harvest@{n:<4} recall@{n:<4}" for n in ns) + "  seconds")
    for mode in (*modes, "oracle crawler", "perfect"):
        row = report[mode]
        cells = "".join(f"  {h:>11.2f} {r:>10.2f}" for h, r in (row["at"][n] for n in ns))
        print(f"{mode:<20}{cells}  {row.get('seconds', '')}")
    for mode in modes:
        row = report[mode]
        focus = row["focus"] or {}
        cpu = 1000 * focus.get("cpu_seconds", 0.0) / max(focus.get("judged", 0), 1)
        print(
            f"{mode}: {row['slow_requests']} requests to {SLOW_HOST} (Crawl-delay {SLOW_DELAY}), "
            f"smallest spacing {row['slow_min_gap']} s"
            + (f"; focus CPU {cpu:.2f} ms a judged page" if focus else "")
        )
    return report


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, nargs="+", default=[100, 200, 500])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--seed", type=int, default=7, help="of the generated topical web")
    parser.add_argument("--slack", type=float, help="the focused crawls' --focus-slack")
    args = parser.parse_args()
    if args.slack is not None:
        FOCUSED["focus_slack"] = args.slack
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(main(args.n, args.json, tuple(args.modes), args.seed))
