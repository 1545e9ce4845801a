"""Focused crawling on real documentation sites: target recall and harvest after N pages for
each topic, against breadth first and a link oracle (Menczer's evaluation framework).

Four documentation sites installed from Debian packages (python3-doc, postgresql-doc-15,
sqlite3-doc, git-doc) are each served by nginx on their own loopback address (one port),
named ``python.test``, ``postgres.test``, ``sqlite.test`` and ``git.test``; the seed is a
neutral hub page (``hub.test``) holding one link to each site's root. A topic is a phrase and
two example pages; its relevant pages are defined by documentation section (a chapter and the
pages its table of contents lists, or a named set of pages where a site has no chapters), not
by words, so the crawler has to find pages that name the topic in the site's own terms. Three
topics (``backup``, ``dates``, ``concurrency``) are held out: added to check that what was tuned
on the first four generalises, their figures were not looked at while tuning and are reported
apart.

For each topic: ``--rounds`` focused crawls (``--focus-mode soft``; three by default: the
order of a crawl with 16 requests in flight varies from run to run, and the figures are their
mean, with the lowest and highest recall) and the same breadth-first crawl (one for all
topics), all real crawls over HTTP; the order of their fetched HTML pages
(pages.jsonl) gives harvest (relevant among the first N / N) and target recall (relevant among
the first N / all relevant). The link oracle is computed from the sites' files: a crawler that
starts at the hub, follows links like any crawler and knows whether each link's target is
relevant (it fetches a known relevant target first, otherwise the oldest link: breadth first).
The CPU the focus spends per judged page (judging, learning, link scoring, re-scoring; the
thread's CPU time, without fetching, parsing and main-text extraction, which every crawl pays)
comes from the crawl's ``focus`` statistics.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_focus_real.py [--n 100 200 500]
        [--topics NAME ...] [--rounds 3] [--port 8391] [--json]
        [--slack S] [--concurrency C]   (the focused crawls' --focus-slack and requests in flight)
        [--order]   (each relevant page's place in the first focused crawl and the oracle's)
        [--keep DIR]   (each focused crawl's pages.jsonl copied to DIR/TOPIC-ROUND.jsonl)
"""

from __future__ import annotations

import argparse
import asyncio
import heapq
import json
import logging
import shutil
import socket
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

from selectolax.lexbor import LexborHTMLParser

from gossamer.crawl import run_crawl
from gossamer.parse.links import parse_html
from gossamer.settings import CrawlSettings, load_model
from nginx import port_free, serve
from realweb import located, provide_missing


@dataclass(frozen=True, slots=True)
class Site:
    host: str
    ip: str
    installed: Path
    """Where the set's HTML is once its package is installed (`root`)."""
    start: str
    """The path the hub links to."""
    name: str

    @property
    def root(self) -> Path:
        """The set's HTML directory, installed or unpacked (`realweb.located`)."""
        return located(self.installed) if self.installed.parts else self.installed


SITES = (
    Site("python.test", "127.0.0.2", Path("/usr/share/doc/python3/html"), "index.html", "Python"),
    Site(
        "postgres.test",
        "127.0.0.3",
        Path("/usr/share/doc/postgresql-doc-15/html"),
        "index.html",
        "PostgreSQL",
    ),
    Site("sqlite.test", "127.0.0.4", Path("/usr/share/doc/sqlite3"), "index.html", "SQLite"),
    Site("git.test", "127.0.0.5", Path("/usr/share/doc/git-doc"), "git.html", "Git"),
)
HUB = Site("hub.test", "127.0.0.1", Path(), "index.html", "hub")
_BY_HOST = {site.host: site for site in SITES}


@dataclass(frozen=True, slots=True)
class Section:
    """Relevant pages of one site: ``pages`` and, for each of ``chapters``, the chapter page
    and the pages its table of contents lists (``toc``: a CSS selector), followed ``levels``
    deep (a Python chapter lists modules whose pages list their own parts)."""

    host: str
    chapters: tuple[str, ...] = ()
    toc: str = ""
    levels: int = 1
    pages: tuple[str, ...] = ()


PY_TOC = "div.toctree-wrapper a.reference.internal"
PG_TOC = "div.toc a"


@dataclass(frozen=True, slots=True)
class Topic:
    name: str
    phrase: str
    examples: tuple[str, ...]
    """host/path of the example pages."""
    sections: tuple[Section, ...]
    held_out: bool = False
    """Added to check that the focus generalises: its figures were not looked at while the
    focus was tuned on the others (reported apart)."""


TOPICS = (
    Topic(
        "transactions",
        "SQL transactions and locking",
        ("postgres.test/transaction-iso.html", "postgres.test/explicit-locking.html"),
        (
            Section(
                "postgres.test",
                chapters=("mvcc.html",),
                toc=PG_TOC,
                pages=(
                    "tutorial-transactions.html",
                    *(
                        f"sql-{name}.html"
                        for name in (
                            "begin",
                            "start-transaction",
                            "commit",
                            "rollback",
                            "savepoint",
                            "release-savepoint",
                            "rollback-to",
                            "lock",
                            "set-transaction",
                            "abort",
                            "end",
                            "prepare-transaction",
                            "commit-prepared",
                            "rollback-prepared",
                        )
                    ),
                ),
            ),
            Section(
                "sqlite.test",
                pages=(
                    "lang_transaction.html",
                    "lang_savepoint.html",
                    "lockingv3.html",
                    "isolation.html",
                    "wal.html",
                    "atomiccommit.html",
                    "transactional.html",
                ),
            ),
        ),
    ),
    Topic(
        "encoding",
        "text encoding and unicode",
        ("python.test/howto/unicode.html", "postgres.test/multibyte.html"),
        (
            Section(
                "python.test",
                pages=(
                    "howto/unicode.html",
                    "library/codecs.html",
                    "library/unicodedata.html",
                    "library/stringprep.html",
                ),
            ),
            Section("postgres.test", chapters=("charset.html",), toc=PG_TOC),
        ),
    ),
    Topic(
        "full-text",
        "full-text search",
        ("postgres.test/textsearch-intro.html", "sqlite.test/fts5.html"),
        (
            Section(
                "postgres.test",
                chapters=("textsearch.html",),
                toc=PG_TOC,
                pages=("datatype-textsearch.html", "functions-textsearch.html"),
            ),
            Section("sqlite.test", pages=("fts3.html", "fts5.html", "fts5vocab.html")),
        ),
    ),
    Topic(
        "email",
        "sending email from a program",
        ("python.test/library/smtplib.html", "python.test/library/email.message.html"),
        (
            Section(
                "python.test",
                chapters=("library/internet.html", "library/netdata.html"),
                toc=PY_TOC,
                levels=2,
            ),
        ),
    ),
    Topic(
        "backup",
        "backing up and restoring a database",
        ("postgres.test/backup-dump.html", "sqlite.test/backup.html"),
        (
            Section(
                "postgres.test",
                chapters=("backup.html",),
                toc=PG_TOC,
                pages=(
                    "app-pgdump.html",
                    "app-pg-dumpall.html",
                    "app-pgrestore.html",
                    "app-pgbasebackup.html",
                ),
            ),
            Section("sqlite.test", pages=("backup.html",)),
        ),
        held_out=True,
    ),
    Topic(
        "dates",
        "dates, times and time zones",
        ("python.test/library/datetime.html", "postgres.test/datatype-datetime.html"),
        (
            Section(
                "python.test",
                pages=(
                    "library/datetime.html",
                    "library/time.html",
                    "library/calendar.html",
                    "library/zoneinfo.html",
                ),
            ),
            Section(
                "postgres.test",
                chapters=("datetime-appendix.html",),
                toc=PG_TOC,
                pages=("datatype-datetime.html", "functions-datetime.html"),
            ),
            Section("sqlite.test", pages=("lang_datefunc.html",)),
        ),
        held_out=True,
    ),
    Topic(
        "concurrency",
        "running code concurrently with threads and processes",
        ("python.test/library/threading.html", "sqlite.test/threadsafe.html"),
        (
            Section("python.test", chapters=("library/concurrency.html",), toc=PY_TOC),
            Section("sqlite.test", pages=("threadsafe.html",)),
        ),
        held_out=True,
    ),
)


def _file(host: str, path: str) -> Path | None:
    site = _BY_HOST.get(host)
    if site is None:
        return None
    target = site.root / path.lstrip("/")
    if target.is_dir():
        target = target / "index.html"
    return target if target.suffix == ".html" and target.is_file() else None


def _toc(host: str, path: str, selector: str) -> list[str]:
    file = _file(host, path)
    if file is None:
        return []
    tree = LexborHTMLParser(file.read_text(encoding="utf-8", errors="replace"))
    found = []
    for node in tree.css(selector):
        href = (node.attributes.get("href") or "").split("#", 1)[0]
        if href and "://" not in href:
            found.append(urlsplit(urljoin(f"http://{host}/{path}", href)).path.lstrip("/"))
    return list(dict.fromkeys(found))


def relevant_pages(topic: Topic) -> set[str]:
    """``host/path`` of the topic's relevant pages (those whose file exists)."""
    keys: set[str] = set()
    for section in topic.sections:
        paths = set(section.pages)
        layer = list(section.chapters)
        for _ in range(section.levels + 1):
            paths.update(layer)
            layer = [p for page in layer for p in _toc(section.host, page, section.toc)]
            layer = [p for p in layer if p not in paths]
        keys.update(f"{section.host}/{p}" for p in paths if _file(section.host, p) is not None)
    return keys


def key(url: str) -> str:
    """``host/path`` of a URL (the port and query dropped; a directory's index named)."""
    parts = urlsplit(url)
    path = parts.path.lstrip("/")
    if not path or path.endswith("/"):
        path += "index.html"
    return f"{parts.hostname}/{path}"


def link_graph(port: int) -> dict[str, list[str]]:
    """``host/path`` -> the HTML pages it links to (in document order), from the files, for
    every page reachable from the hub."""
    roots = [f"{site.host}/{site.start}" for site in SITES]
    graph: dict[str, list[str]] = {f"{HUB.host}/{HUB.start}": roots}
    todo = list(roots)
    seen = set(todo)
    while todo:
        page = todo.pop()
        host, _, path = page.partition("/")
        file = _file(host, path)
        if file is None:
            graph[page] = []
            continue
        parsed = parse_html(file.read_bytes(), f"http://{host}:{port}/{path}")
        links = [key(u) for u in parsed.links if (urlsplit(u).hostname or "") in _BY_HOST]
        links = [k for k in dict.fromkeys(links) if _file(*k.split("/", 1)) is not None]
        graph[page] = links
        for link in links:
            if link not in seen:
                seen.add(link)
                todo.append(link)
    return graph


def oracle_order(graph: dict[str, list[str]], relevant: set[str], n: int) -> list[str]:
    """The first ``n`` pages of the link oracle (see the module docstring)."""
    start = f"{HUB.host}/{HUB.start}"
    queue = [(1, 0, start)]
    seen = {start}
    order: list[str] = []
    while queue and len(order) < n:
        _, _, page = heapq.heappop(queue)
        order.append(page)
        for link in graph.get(page, []):
            if link not in seen:
                seen.add(link)
                heapq.heappush(queue, (0 if link in relevant else 1, len(seen), link))
    return order


def _url(site: Site, path: str, port: int) -> str:
    return f"http://{site.host}:{port}/{path}"


def write_hub(www: Path) -> None:
    """The web root: one directory per address (the sites' link to their files), the hub's
    page with one link to each site."""
    hub = www / HUB.ip
    hub.mkdir(parents=True)
    links = "".join(f'<li><a href="{_url(s, s.start, PORT[0])}">{s.name}</a></li>' for s in SITES)
    (hub / "index.html").write_text(
        "<!doctype html><html><head><title>Documentation</title></head><body>"
        f"<h1>Documentation</h1><p>Manuals kept on this network:</p><ul>{links}</ul>"
        "</body></html>",
        encoding="utf-8",
    )
    for site in SITES:
        (www / site.ip).symlink_to(site.root.resolve())


PORT = [8391]
KEEP: list[Path] = []
"""Where each focused crawl's pages.jsonl is copied (``--keep``)."""
FOCUSED: dict[str, Any] = {}
"""Settings of the focused crawls given on the command line (``focus_slack``, ``concurrency``)."""


async def crawl(topic: Topic | None, pages: int, out: Path) -> dict[str, Any]:
    """One crawl from the hub (focused on ``topic``, or breadth first): its fetched HTML pages
    in order and its focus statistics."""
    port = PORT[0]
    flags: dict[str, Any] = {
        "seeds": [_url(HUB, HUB.start, port)],
        "out": out,
        "resolve": [f"{s.host}={s.ip}" for s in (HUB, *SITES)],
        "allow_domains": ["test"],
        "quiet": True,
        "max_pages": pages,
        "concurrency": 16,
    }
    if topic is not None:
        flags["focus_phrase"] = topic.phrase
        flags["focus_examples"] = [
            f"http://{e.replace('/', f':{port}/', 1)}" for e in topic.examples
        ]
        flags.update(FOCUSED)
    settings = load_model(CrawlSettings, flags, env={})
    started = time.monotonic()
    stats = await run_crawl(settings)
    elapsed = time.monotonic() - started
    records = [json.loads(line) for line in (out / "pages.jsonl").read_text().splitlines()]
    fetched = [key(r["url"]) for r in records if r["status"] == 200 and r.get("title") is not None]
    return {"fetched": fetched, "seconds": round(elapsed, 1), "focus": stats.focus}


def order(fetched: list[str], oracle: list[str], relevant: set[str]) -> list[list[Any]]:
    """Each relevant page with its place in a crawl's order and in the oracle's (None:
    not fetched), the crawl's first."""
    place = {page: i for i, page in enumerate(fetched)}
    by_oracle = {page: i for i, page in enumerate(oracle)}
    rows = [[page, place.get(page), by_oracle.get(page)] for page in relevant]
    return sorted(rows, key=lambda row: (row[1] is None, row[1] or 0, row[0]))


def figures(order: Iterable[str], relevant: set[str], n: int) -> tuple[float, float]:
    """Harvest and target recall of the first ``n`` pages of ``order``."""
    first = list(order)[:n]
    hits = sum(page in relevant for page in first)
    return round(hits / max(len(first), 1), 3), round(hits / len(relevant), 3)


def _free_port(start: int) -> int:
    ips = [HUB.ip, *(s.ip for s in SITES)]
    for port in range(start, start + 100):
        if port_free(ips, port):
            return port
    raise OSError(f"no free port in {start}..{start + 99}")


def mean_figures(runs: list[dict[str, Any]], relevant: set[str], n: int) -> tuple[float, float]:
    """Harvest and recall of the first ``n`` pages, the mean over ``runs``."""
    each = [figures(run["fetched"], relevant, n) for run in runs]
    return (
        round(sum(h for h, _ in each) / len(each), 3),
        round(sum(r for _, r in each) / len(each), 3),
    )


async def run(ns: list[int], names: list[str], port: int, rounds: int = 1) -> dict[str, Any]:
    provide_missing()
    missing = [str(s.root) for s in SITES if not s.root.is_dir()]
    if missing:
        raise SystemExit(f"missing documentation: {missing} (apt-get download failed?)")
    PORT[0] = _free_port(port)
    topics = [t for t in TOPICS if not names or t.name in names]
    budget = max(ns) + max(ns) // 5  # text files (sources) are fetched too: N HTML pages
    report: dict[str, Any] = {"n": ns, "rounds": rounds, "topics": {}}
    with tempfile.TemporaryDirectory() as tmp:
        www = Path(tmp) / "www"
        write_hub(www)
        with serve(Path(tmp) / "nginx", www, [HUB.ip, *(s.ip for s in SITES)], PORT[0]):
            graph = link_graph(PORT[0])
            report["pages"] = len(graph)
            breadth = await crawl(None, budget, Path(tmp) / "bfs")
            for i, topic in enumerate(topics):
                relevant = relevant_pages(topic)
                runs = [await crawl(topic, budget, Path(tmp) / f"{i}-{r}") for r in range(rounds)]
                if KEEP:
                    for r in range(rounds):
                        shutil.copy(
                            Path(tmp) / f"{i}-{r}" / "pages.jsonl",
                            KEEP[0] / f"{topic.name}-{r}.jsonl",
                        )
                oracle = oracle_order(graph, relevant, max(ns))
                judged = sum(max((run["focus"] or {}).get("judged", 0), 1) for run in runs)
                cpu = sum((run["focus"] or {}).get("cpu_seconds", 0.0) for run in runs)
                report["topics"][topic.name] = {
                    "phrase": topic.phrase,
                    "held_out": topic.held_out,
                    "relevant": len(relevant),
                    "reachable": len(relevant & graph.keys()),
                    "focused": {n: mean_figures(runs, relevant, n) for n in ns},
                    "focused_recall_range": {
                        n: [min(r), max(r)]
                        for n in ns
                        if (r := [figures(run["fetched"], relevant, n)[1] for run in runs])
                    },
                    "breadth-first": {n: figures(breadth["fetched"], relevant, n) for n in ns},
                    "oracle": {n: figures(oracle, relevant, n) for n in ns},
                    "order": order(
                        runs[0]["fetched"], oracle_order(graph, relevant, 10**6), relevant
                    ),
                    "seconds": round(sum(run["seconds"] for run in runs) / rounds, 1),
                    "focus_cpu_ms_per_page": round(1000 * cpu / judged, 3),
                }
    return report


def show_order(report: dict[str, Any]) -> None:
    for name, row in report["topics"].items():
        print(f"\n{name}: relevant page, place in the first focused crawl, in the oracle's")
        for page, crawled, oracle in row["order"]:
            print(f"  {page:<55} {'-' if crawled is None else crawled:>5} {oracle:>5}")


def show(report: dict[str, Any]) -> None:
    ns = report["n"]
    print(f"{report['pages']} pages reachable from the hub")
    head = "".join(f"  harvest@{n:<4} recall@{n:<4}" for n in ns)
    for name, row in report["topics"].items():
        print(
            f"\n{name}{' [held out]' if row['held_out'] else ''} ({row['phrase']!r}): "
            f"{row['relevant']} relevant pages "
            f"({row['reachable']} reachable); focus CPU {row['focus_cpu_ms_per_page']} ms/page, "
            f"crawl {row['seconds']} s"
        )
        print(f"{'crawl':<14}{head}")
        for crawl_ in ("breadth-first", "focused", "oracle"):
            cells = "".join(f"  {h:>11.2f} {r:>10.2f}" for h, r in (row[crawl_][n] for n in ns))
            print(f"{crawl_:<14}{cells}")
        low_high = ", ".join(
            f"{n}: {a:.2f}-{b:.2f}" for n, (a, b) in row["focused_recall_range"].items()
        )
        print(f"focused recall, lowest-highest of {report['rounds']} crawls: {low_high}")
        if 200 in ns and row["oracle"][200][1]:
            share = row["focused"][200][1] / row["oracle"][200][1]
            print(f"recall@200 focused / oracle: {share:.2f}")
    if 200 in ns:
        for held_out in (False, True):
            shares = [
                f"{name} {row['focused'][200][1] / row['oracle'][200][1]:.2f}"
                for name, row in report["topics"].items()
                if row["held_out"] == held_out and row["oracle"][200][1]
            ]
            if shares:
                kind = "held-out topics" if held_out else "topics tuned on"
                print(f"\nrecall@200 / oracle's, {kind}: {', '.join(shares)}")
    cpu = [row["focus_cpu_ms_per_page"] for row in report["topics"].values()]
    if cpu:
        print(f"focus CPU a judged page: {min(cpu)}-{max(cpu)} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, nargs="+", default=[100, 200, 500])
    parser.add_argument("--topics", nargs="+", choices=[t.name for t in TOPICS], default=[])
    parser.add_argument("--port", type=int, default=8391, help="first port tried")
    parser.add_argument("--rounds", type=int, default=3, help="focused crawls per topic")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--slack", type=float, help="the focused crawls' --focus-slack")
    parser.add_argument("--concurrency", type=int, help="the focused crawls' requests in flight")
    parser.add_argument(
        "--order", action="store_true", help="each relevant page's place, crawl and oracle"
    )
    parser.add_argument("--keep", type=Path, help="copy each focused crawl's pages.jsonl here")
    args = parser.parse_args()
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
        KEEP.append(args.keep)
    if args.slack is not None:
        FOCUSED["focus_slack"] = args.slack
    if args.concurrency is not None:
        FOCUSED["concurrency"] = args.concurrency
    logging.basicConfig(level=logging.WARNING)
    report = asyncio.run(run(sorted(args.n), args.topics, args.port, args.rounds))
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        show(report)
        if args.order:
            show_order(report)


if __name__ == "__main__":
    socket.setdefaulttimeout(30)
    main()
