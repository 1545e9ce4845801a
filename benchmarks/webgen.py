"""Generate the benchmark web: static HTML for many loopback hosts, plus its expected crawl.

Each host is a loopback address (127.0.0.2, 127.0.0.3, ...) on one port, so neither crawler
needs a resolver trick. A host has a home page ``/``, section indexes ``/sK/`` listing every
page of their section, and content pages ``/sK/pN.html`` of 10-60 KB with 30-300 ``<a href>``
links: navigation, same-host links in relative, root-relative and absolute spellings,
cross-host links, duplicates, fragments, a few links out of scope (loopback addresses that
serve nothing) and a few broken links (404). Every page is reachable from its host's ``/``.
Some hosts have robots.txt rules, one has none at all.

The expected crawl (pages answered 200, 404s, URLs blocked by robots.txt) is found by a
breadth-first walk of the same link graph with protego, the robots.txt parser both crawlers
use. Everything is deterministic from the seed.

With ``layout="reference"`` the content pages are API reference pages instead, 150-300 links
each (`WebSpec`).

Run alone: ``python benchmarks/webgen.py DIR --pages 3000 --hosts 20 --seed 1
[--layout reference]``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import shutil
from collections import deque
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import urlsplit

from protego import Protego

from weblinks import Graph, Host, Linker, host_ip
from webtext import LAYOUT, REFERENCE_LAYOUT, TextPool, render_page, render_reference

PAGES_PER_SECTION = 100
MAX_SECTIONS = 250
MISSING_PER_HOST = 3
MANIFEST = "manifest.json"
ROBOTS_AGENT = "benchbot"


LAYOUTS = ("article", "reference")


@dataclass(frozen=True)
class WebSpec:
    """What to generate (``pages`` is approximate: content pages plus indexes); every field is
    part of the cache key, and so is the version of the page layout (`webtext.LAYOUT`).

    ``layout`` is ``article`` (news or docs articles, 30-300 links a page) or ``reference``
    (API reference pages of 150-300 links: a sidebar index of the section, a table of
    contents and a permalink per symbol, cross-references with fragments)."""

    pages: int = 3000
    hosts: int = 20
    seed: int = 1
    port: int = 18473
    layout: str = "article"

    def key(self) -> str:
        """A directory name unique to this spec."""
        rest = f"s{self.seed}-n{self.pages}-h{self.hosts}-p{self.port}"
        if self.layout == "article":
            return f"web-v{LAYOUT}-{rest}"
        return f"web-{self.layout}-v{REFERENCE_LAYOUT}-{rest}"


@dataclass
class Expected:
    """The crawl a correct crawler makes of the web."""

    ok: int = 0
    not_found: int = 0
    robots_blocked: int = 0
    max_depth: int = 0
    files: int = 0
    bytes: int = 0


def seeds(spec: WebSpec) -> list[str]:
    """The root URL of every host."""
    return [f"http://{host_ip(i)}:{spec.port}/" for i in range(spec.hosts)]


def _split_pages(spec: WebSpec, rng: random.Random) -> list[int]:
    """Content pages per host: uneven sizes (one big host, a tail of small ones)."""
    indexes = spec.hosts * 2
    content = max(spec.pages - indexes, spec.hosts)
    weights = [rng.uniform(0.3, 1.0) / (1 + 0.15 * i) for i in range(spec.hosts)]
    total = sum(weights)
    counts = [max(1, int(content * w / total)) for w in weights]
    counts[0] += content - sum(counts)
    return counts


def _robots_for(host: Host, port: int) -> str | None:
    """A few kinds of robots.txt; host 0 has none (404)."""
    kind = host.index % 4
    if host.index == 0:
        return None
    lines = ["User-agent: BadBot", "Disallow: /", "", "User-agent: *"]
    if kind == 1 and len(host.sections) > 1:
        lines.append("Disallow: /s1/")
    elif kind == 2:
        lines += ["Disallow: /s0/p1", "Allow: /s0/p15"]
    elif kind == 3:
        lines += ["Disallow: /s0/p2", "Disallow: /*/p4*.html$"]
    else:
        lines.append("Disallow:")
    lines += ["", f"Sitemap: http://{host.ip}:{port}/sitemap.xml", ""]
    return "\n".join(lines)


def _build_graph(spec: WebSpec, rng: random.Random) -> tuple[list[Host], Graph]:
    graph = Graph()
    hosts = []
    for index, count in enumerate(_split_pages(spec, rng)):
        per_section = max(PAGES_PER_SECTION, -(-count // MAX_SECTIONS))
        host = Host(index, host_ip(index), graph.add(index, "/"), per_section)
        for s in range(-(-count // per_section)):
            host.sections.append(graph.add(index, f"/s{s}/"))
        for n in range(count):
            host.pages.append(graph.add(index, f"/s{n // per_section}/p{n}.html"))
        for m in range(MISSING_PER_HOST):
            host.missing.append(graph.add(index, f"/old/page-{m}.html", exists=False))
        host.robots = _robots_for(host, spec.port)
        hosts.append(host)
    return hosts, graph


def _walk(spec: WebSpec, hosts: list[Host], graph: Graph) -> Expected:
    """Breadth-first crawl of the link graph from every root, obeying robots.txt."""
    parsers = [Protego.parse(h.robots) if h.robots else None for h in hosts]
    roots = [i for i, p in enumerate(graph.paths) if p == "/"]
    depth = dict.fromkeys(roots, 0)
    queue = deque(roots)
    expected = Expected()
    while queue:
        node = queue.popleft()
        parser = parsers[graph.hosts[node]]
        url = f"http://{host_ip(graph.hosts[node])}:{spec.port}{graph.paths[node]}"
        if parser is not None and not parser.can_fetch(url, ROBOTS_AGENT):
            expected.robots_blocked += 1
            continue
        if not graph.exists[node]:
            expected.not_found += 1
            continue
        expected.ok += 1
        expected.max_depth = max(expected.max_depth, depth[node])
        for target in graph.links[node]:
            if target not in depth:
                depth[target] = depth[node] + 1
                queue.append(target)
    return expected


def generate(spec: WebSpec, out: Path) -> Expected:
    """Write the web for ``spec`` under ``out/www/<ip>/`` and return its expected crawl."""
    rng = random.Random(spec.seed)
    hosts, graph = _build_graph(spec, rng)
    pool = TextPool(rng)
    linker = Linker(hosts, graph, spec.port, pool, rng)
    www = out / "www"
    expected = Expected()
    for node, path in enumerate(graph.paths):
        if not graph.exists[node]:
            continue
        graph.links[node], html = _render(spec, linker, node, pool, rng)
        relative = path.lstrip("/")
        if not relative or relative.endswith("/"):
            relative += "index.html"
        file = www / host_ip(graph.hosts[node]) / relative
        file.parent.mkdir(parents=True, exist_ok=True)
        data = html.encode("utf-8")
        file.write_bytes(data)
        expected.files += 1
        expected.bytes += len(data)
    for host in hosts:
        if host.robots is not None:
            (www / host.ip / "robots.txt").write_text(host.robots, encoding="utf-8")
    walked = _walk(spec, hosts, graph)
    walked.files, walked.bytes = expected.files, expected.bytes
    return walked


def _render(
    spec: WebSpec, linker: Linker, node: int, pool: TextPool, rng: random.Random
) -> tuple[list[int], str]:
    """The target ids and HTML of page ``node`` in the spec's layout."""
    size = int(rng.triangular(10_000, 60_000, 24_000))
    if spec.layout == "article":
        plan = linker.plan(node)
        return plan.targets, render_page(plan.title, plan.url, plan.nav, plan.body, size, pool, rng)
    plan = linker.plan_reference(node)
    html = render_reference(
        plan.title, plan.url, plan.nav, plan.sidebar, plan.symbols, plan.body, size, pool, rng
    )
    return plan.targets, html


def ensure_web(spec: WebSpec, root: Path) -> tuple[Path, Expected]:
    """The web for ``spec`` under ``root``, generated unless a complete copy is cached."""
    out = root / spec.key()
    manifest = out / MANIFEST
    if manifest.exists():
        data = json.loads(manifest.read_text(encoding="utf-8"))
        return out, Expected(**data["expected"])
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    # In a process of its own: generating a big web takes hundreds of MB that this process
    # would keep (and lend the crawlers it starts as their peak RSS: `measure.run_measured`).
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        expected = pool.submit(generate, spec, out).result()
    payload = {"spec": asdict(spec), "seeds": seeds(spec), "expected": asdict(expected)}
    manifest.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return out, expected


def robots_allows(web: Path) -> Callable[[str], bool]:
    """A check of the web's URLs against its robots.txt files, read as the crawlers read them."""
    parsers: dict[str, Protego | None] = {}

    def allowed(url: str) -> bool:
        host = urlsplit(url).hostname or ""
        if host not in parsers:
            file = web / "www" / host / "robots.txt"
            parsers[host] = Protego.parse(file.read_text("utf-8")) if file.exists() else None
        parser = parsers[host]
        return parser is None or bool(parser.can_fetch(url, ROBOTS_AGENT))

    return allowed


def main() -> None:
    """Generate a web from the command line and print its expected crawl."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--pages", type=int, default=WebSpec.pages)
    parser.add_argument("--hosts", type=int, default=WebSpec.hosts)
    parser.add_argument("--seed", type=int, default=WebSpec.seed)
    parser.add_argument("--port", type=int, default=WebSpec.port)
    parser.add_argument("--layout", choices=LAYOUTS, default=WebSpec.layout)
    args = parser.parse_args()
    spec = WebSpec(args.pages, args.hosts, args.seed, args.port, args.layout)
    web, expected = ensure_web(spec, args.root)
    print(web, json.dumps(asdict(expected)))


if __name__ == "__main__":
    main()
