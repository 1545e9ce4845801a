"""CPU the focus spends a judged page and the recall it reaches, replayed offline: a
deterministic best-first crawl of the real documentation sites' files (those of
``bench_focus_real.py``, read from disk, no HTTP) through ``FocusPolicy``, the fastest of
``--passes`` passes a topic.

A crawl over HTTP moves with its requests in flight and the machine's load; this one does not:
it takes the best waiting URLs in batches (``--batch`` pages, at most two a host, those within
``--slack`` of the best host), judges them and runs the policy's upkeep after each batch, so
the same code fetches the same URLs in the same order every time. Pages are parsed and their
main text extracted once, before the passes; only the policy's own CPU time is counted
(``cpu_seconds`` of its statistics: judging, learning, link scoring, re-scoring). ``--order
FILE`` writes each topic's fetched URLs (``host/path``) as JSON, so two versions can be
checked for the same crawl order; ``--as-sandboxed`` reads each page a crawl's parse sandbox
would take as its worker reads it (the tree as it is, the links' texts read there, no tree
kept), for the same check against the in-process reading. ``--callgrind`` counts
instructions instead of time: run under ``valgrind --tool=callgrind --instr-atstart=no``, only
the passes are instrumented (not the parsing), the replay's own frontier included.

Each topic's harvest and target recall after ``--n`` pages (100, 200, 500) are printed beside
the link oracle's (``bench_focus_real.py``'s), with recall at 200 over the oracle's: the same
every run, so a change to the focus can be measured on every topic without the noise of a
crawl over HTTP. ``--spread B ...`` replays more crawls in batches of B pages each (the order
moves with the batch) and reports recall's mean and range over them; ``--shuffled N`` N more,
each in an order shuffled as a crawl over HTTP might take it (seeded 0..N-1: the same every
run; the hosts within the slack of the best, as the crawl's frontier holds back, one or two a
host, 3 to 16 pages between upkeeps), harsher than the crawls over HTTP.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_focus_replay.py [--topics NAME ...]
        [--pages 600] [--passes 3] [--order FILE] [--n 100 200 500] [--spread 4 6 12 16]
        [--shuffled 24] [--as-sandboxed]
    PYTHONPATH=src valgrind --tool=callgrind --instr-atstart=no .venv/bin/python \
        benchmarks/bench_focus_replay.py --topics email --passes 1 --callgrind
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import gc
import heapq
import json
import os
import random
import resource
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from bench_focus_real import (
    _BY_HOST,
    SITES,
    TOPICS,
    _file,
    figures,
    key,
    link_graph,
    oracle_order,
    relevant_pages,
)
from gossamer.extract import Content, extract
from gossamer.focus.anchors import read_whole
from gossamer.focus.policy import MAX_SCORED_LINKS, FocusPolicy
from gossamer.focus.topic import Topic
from gossamer.page.sandboxed import wanted
from gossamer.parse.links import ParsedPage, parse_html
from realweb import provide_missing

PORT = 8391
HUB = "hub.test/index.html"


def url_of(page: str) -> str:
    host, path = page.split("/", 1)
    return f"http://{host}:{PORT}/{path}"


@dataclass
class Page:
    parsed: ParsedPage
    content: Content
    links: list[str]


class Pages:
    """The sites' pages, parsed once (their links kept when they lead to a site's file);
    ``as_sandboxed``: a page a crawl's parse sandbox takes read as its worker reads it (the
    tree as it is, the main text and the links' texts read there, no tree kept)."""

    def __init__(self, as_sandboxed: bool = False) -> None:
        self._pages: dict[str, Page] = {}
        self._as_sandboxed = as_sandboxed

    def get(self, page: str) -> Page:
        found = self._pages.get(page)
        if found is None:
            found = self._pages[page] = self._read(page)
        return found

    def _read(self, page: str) -> Page:
        url = url_of(page)
        if page == HUB:
            items = "".join(
                f'<li><a href="{url_of(f"{s.host}/{s.start}")}">{s.name}</a></li>' for s in SITES
            )
            html = f"<html><body><h1>Documentation</h1><ul>{items}</ul></body></html>".encode()
        else:
            host, path = page.split("/", 1)
            file = _file(host, path)
            html = file.read_bytes() if file is not None else b""
        sandboxed = self._as_sandboxed and wanted(html)
        parsed = parse_html(html, url, anchors=True, guarded=not sandboxed)
        links = [
            link
            for link in parsed.links
            if (urlsplit(link).hostname or "") in _BY_HOST and _file(*key(link).split("/", 1))
        ]
        content = extract(parsed.tree, url, "tree") if parsed.tree else Content("")
        if sandboxed:
            texts = read_whole(parsed, set(parsed.links[:MAX_SCORED_LINKS]))
            parsed = dataclasses.replace(parsed, tree=None, anchors=None, texts=texts)
        return Page(parsed, content, list(dict.fromkeys(links)))


class Frontier:
    """Best first, one queue a host; a URL whose priority changes is queued again."""

    def __init__(self) -> None:
        self.priority: dict[str, float] = {}
        self._queues: dict[str, list[tuple[float, int, str]]] = {}
        self._count = 0

    def push(self, url: str, priority: float) -> None:
        self._count += 1
        self.priority[url] = priority
        queue = self._queues.setdefault(urlsplit(url).hostname or "", [])
        heapq.heappush(queue, (-priority, self._count, url))

    def reprioritize(self, priorities: Mapping[str, float]) -> int:
        moved = [(url, p) for url, p in priorities.items() if self.priority.get(url, p) != p]
        for url, p in moved:
            self.push(url, p)
        return len(moved)

    def _top(self, queue: list[tuple[float, int, str]]) -> float | None:
        while queue and self.priority.get(queue[0][2]) != -queue[0][0]:
            heapq.heappop(queue)
        return -queue[0][0] if queue else None

    def batch(self, slack: float, per_host: int) -> list[str]:
        """The next URLs to fetch: from each host within ``slack`` of the best, its best."""
        tops = {h: t for h, q in self._queues.items() if (t := self._top(q)) is not None}
        if not tops:
            return []
        best = max(tops.values())
        taken = []
        for host, top in sorted(tops.items(), key=lambda item: -item[1]):
            if top < best - slack:
                continue
            queue = self._queues[host]
            for _ in range(per_host):
                if self._top(queue) is None:
                    break
                negated, _, url = heapq.heappop(queue)
                del self.priority[url]
                taken.append((negated, url))
        return [url for _, url in sorted(taken)]

    def shuffled(self, rng: random.Random) -> list[str]:
        """The next URLs as a crawl over HTTP might take them: the hosts within the crawl
        frontier's slack of the best (a share of it from even odds up, ``bestfirst.py``), one
        or two a host, in a random order, a random number of them."""
        tops = {h: t for h, q in self._queues.items() if (t := self._top(q)) is not None}
        if not tops:
            return []
        best = max(tops.values())
        floor = best * 0.5 if best >= 0.5 else best - 0.5
        hosts = [host for host, top in tops.items() if top >= floor]
        rng.shuffle(hosts)
        taken = []
        for host in hosts:
            queue = self._queues[host]
            for _ in range(rng.choice((1, 2, 2))):
                if self._top(queue) is None:
                    break
                negated, _, url = heapq.heappop(queue)
                del self.priority[url]
                taken.append((url, -negated))
        rng.shuffle(taken)
        count = rng.randint(3, 16)
        for url, priority in taken[count:]:  # not fetched this time: they wait again
            self.push(url, priority)
        return [url for url, _ in taken[:count]]


async def crawl(
    topic_name: str, pages: Pages, limit: int, batch: int, seed: int | None = None
) -> tuple[list[str], float]:
    """One replayed crawl: the fetched pages in order and the focus's CPU ms a judged page
    (``seed``: the order shuffled as in ``Frontier.shuffled``)."""
    spec = next(t for t in TOPICS if t.name == topic_name)
    examples = [pages.get(e).content.text for e in spec.examples]
    frontier = Frontier()
    policy = FocusPolicy(
        Topic(spec.phrase, examples),
        reprioritize=frontier.reprioritize,
        known=[url_of(e) for e in spec.examples],
        near=[link for e in spec.examples for link in pages.get(e).links],
    )
    start = url_of(HUB)
    seen, depth, fetched = {start}, {start: 0}, list[str]()
    frontier.push(start, 1.0)
    rng = random.Random(seed)

    def next_urls() -> list[str]:
        return frontier.batch(0.5, 2)[:batch] if seed is None else frontier.shuffled(rng)

    while len(fetched) < limit and (urls := next_urls()):
        for url in urls:
            page = pages.get(key(url))
            fetched.append(key(url))
            _, candidates = policy.judge(url, depth[url], page.parsed, page.content, page.links)
            for candidate in candidates:
                if candidate.url not in seen:
                    seen.add(candidate.url)
                    depth[candidate.url] = candidate.depth
                    frontier.push(candidate.url, candidate.priority)
        await policy.upkeep()
    stats = policy.stats()
    return fetched, 1000 * stats.cpu_seconds / max(stats.judged, 1)


def _instrument(wanted: bool, state: str) -> None:
    """Turn callgrind's instrumentation of this process on or off."""
    if wanted:
        command = ["callgrind_control", "-i", state, str(os.getpid())]
        subprocess.run(command, check=True, capture_output=True, timeout=300)


def recall_line(
    name: str, orders: list[list[str]], graph: dict[str, list[str]], ns: list[int]
) -> str:
    """Harvest / recall after each N pages (the mean over the replayed crawls ``orders``), the
    oracle's, and recall at the middle N over the oracle's (with its range over the crawls)."""
    spec = next(t for t in TOPICS if t.name == name)
    relevant = relevant_pages(spec)
    oracle = oracle_order(graph, relevant, max(ns))
    each = [[figures(order, relevant, n) for n in ns] for order in orders]
    ours = [
        (sum(run[i][0] for run in each) / len(each), sum(run[i][1] for run in each) / len(each))
        for i in range(len(ns))
    ]
    best = [figures(oracle, relevant, n) for n in ns]
    cells = ", ".join(f"@{n} {h:.2f} / {r:.2f}" for n, (h, r) in zip(ns, ours, strict=True))
    ceiling = ", ".join(f"{h:.2f} / {r:.2f}" for h, r in best)
    mid = len(ns) // 2
    top = best[mid][1] or 1.0
    shares = [run[mid][1] / top for run in each]
    spread = f" ({min(shares):.2f}-{max(shares):.2f})" if len(each) > 1 else ""
    held = " [held out]" if spec.held_out else ""
    return (
        f"  {name}{held} ({len(relevant)} relevant): {cells}; oracle {ceiling}; "
        f"recall@{ns[mid]} / oracle's {ours[mid][1] / top:.2f}{spread}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--topics", nargs="*", default=[t.name for t in TOPICS])
    parser.add_argument("--pages", type=int, default=600)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--order", type=Path, help="write the fetched URLs here (JSON)")
    parser.add_argument("--callgrind", action="store_true", help="instrument only the passes")
    parser.add_argument(
        "--as-sandboxed", action="store_true", help="big pages read as the parse sandbox does"
    )
    parser.add_argument("--n", type=int, nargs="+", default=[100, 200, 500])
    parser.add_argument(
        "--spread", type=int, nargs="*", default=[], help="batch sizes of more crawls (recall)"
    )
    parser.add_argument(
        "--shuffled", type=int, default=0, help="more crawls, each in a shuffled order (recall)"
    )
    args = parser.parse_args()
    provide_missing()
    graph = link_graph(PORT)
    orders: dict[str, list[str]] = {}
    costs = []
    for name in args.topics:
        pages = Pages(args.as_sandboxed)
        asyncio.run(crawl(name, pages, args.pages, args.batch))  # parses the pages
        _instrument(args.callgrind, "on")
        runs = [asyncio.run(crawl(name, pages, args.pages, args.batch)) for _ in range(args.passes)]
        _instrument(args.callgrind, "off")
        orders[name] = runs[0][0]
        if any(order != runs[0][0] for order, _ in runs):
            print(f"{name}: the order moved between passes")
        fastest = min(ms for _, ms in runs)
        costs.append(fastest)
        more = [asyncio.run(crawl(name, pages, args.pages, b))[0] for b in args.spread]
        more += [
            asyncio.run(crawl(name, pages, args.pages, args.batch, seed))[0]
            for seed in range(args.shuffled)
        ]
        del pages  # a topic's parsed pages (some 600 MB) go before the next topic's
        gc.collect()
        print(
            f"{name:13} {len(runs[0][0])} pages judged; focus CPU {fastest:.3f} ms/page", flush=True
        )
        print(recall_line(name, [runs[0][0], *more], graph, args.n), flush=True)
    if costs:
        print(
            f"focus CPU a judged page: {min(costs):.3f}-{max(costs):.3f} ms "
            f"(peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MB)"
        )
    if args.order is not None:
        args.order.write_text(json.dumps(orders, indent=0))


if __name__ == "__main__":
    main()
