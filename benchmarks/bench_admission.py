"""The per-URL cost of admission's guards: parameter stripping and the trap guards.

Builds the link graph of the benchmark web (``webgen.py``: its hosts, pages and each page's
link targets, without writing the pages) and adds every page's links to the embedded frontier
as a crawl does (one ``Outlinks`` per page, with the page's URL, in breadth-first order),
once with the default guards and once with both turned off (``--strip-params ''``,
``--no-trap-guards``), alternating, and prints the CPU time per candidate URL and per URL
new to the crawl.

    .venv/bin/python benchmarks/bench_admission.py [--pages 3000] [--hosts 20] [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time

from gossamer.frontier.admission import Guards
from gossamer.frontier.base import Outlinks
from gossamer.frontier.local import LocalFrontier
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.urls import Scope
from webgen import WebSpec, _build_graph
from weblinks import Linker, host_ip
from webtext import TextPool

OFF = Guards(strip=(), traps=None)


def link_lists(spec: WebSpec) -> list[tuple[str, list[str]]]:
    """Each page's URL and link targets as absolute URLs, pages in id order."""
    rng = random.Random(spec.seed)
    hosts, graph = _build_graph(spec, rng)
    linker = Linker(hosts, graph, spec.port, TextPool(rng), rng)
    base = [f"http://{host_ip(graph.hosts[n])}:{spec.port}" for n in range(len(graph.paths))]
    pages = []
    for node in range(len(graph.paths)):
        if graph.exists[node]:
            links = [base[t] + graph.paths[t] for t in linker.plan(node).targets]
            pages.append((base[node] + graph.paths[node], links))
    return pages


async def run(pages: list[tuple[str, list[str]]], guards: Guards | None) -> tuple[float, int, int]:
    """CPU seconds to add every page's links; candidates; URLs queued."""
    seeds = sorted({url.split("/", 3)[2] for _, links in pages for url in links})
    scope = Scope.for_seeds([f"http://{s}/" for s in seeds])
    frontier = LocalFrontier(scope, PolitenessPolicy(), guards=guards)
    candidates = added = 0
    started = time.process_time()
    for depth, (page, links) in enumerate(pages):
        result = await frontier.add(Outlinks(links, 1 + depth % 5, page))
        candidates += len(links)
        added += result.added
    return time.process_time() - started, candidates, added


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=3000)
    parser.add_argument("--hosts", type=int, default=20)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    pages = link_lists(WebSpec(pages=args.pages, hosts=args.hosts))
    times: dict[str, list[float]] = {"on": [], "off": []}
    for _ in range(args.runs):
        for name, guards in (("on", None), ("off", OFF)):
            seconds, candidates, added = await run(pages, guards)
            times[name].append(seconds)
    for name, runs in times.items():
        best = min(runs)
        print(
            f"guards {name:3}: {candidates} candidates, {added} queued; CPU best {best:.3f} s, "
            f"median {statistics.median(runs):.3f} s; {best / candidates * 1e9:.0f} ns a "
            f"candidate, {best / added * 1e6:.2f} us a queued URL"
        )
    extra = min(times["on"]) - min(times["off"])
    print(f"guards cost {extra / candidates * 1e9:.0f} ns a candidate (best of {args.runs})")


if __name__ == "__main__":
    asyncio.run(main())
