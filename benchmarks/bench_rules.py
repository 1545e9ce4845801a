"""``make bench``: what rule documents (``--rules``) cost the crawl.

1. Extraction time per page: a rule of 10 CSS fields and one of 10 XPath fields (the same
   data, a record-less item per page) evaluated with ``gossamer.extract.rules.evaluate`` on
   the pages of the benchmark web (``webgen.py``, cached under ``bench-out/webs/``: 10-60 KB
   article pages), each page parsed once beforehand as the crawl does; the parse time is
   shown for scale. The XPath rule pays for lxml's own parse of the page.
2. Whole crawl: ``gossamer crawl`` of the bundled test web (``python -m gossamer.testweb
   --big-pages``, served from another process) without rules and with the CSS rule on every
   page, alternately for several rounds; pages per CPU-second of the crawler (its own CPU
   time, ``os.wait4``), medians, and their ratio. The target: at most 15% slower with rules.

Usage: ``.venv/bin/python benchmarks/bench_rules.py [--rounds R] [--pages N] [--quick]``.
The summary also goes to ``bench-out/rules-bench.json``.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from gossamer.extract.rules import RuleSet, evaluate, load_rules
from gossamer.parse.links import parse_html
from measure import run_measured
from webgen import WebSpec, ensure_web

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench-out"
TARGET = 0.85
"""Pages per CPU-second with the CSS rule over without, at least."""

FIELDS = [
    ("title", "title", "//title", "text"),
    ("heading", "h1", "//h1", "text"),
    ("first_paragraph", "p", "(//p)[1]", "text"),
    ("subheadings", "h2", "//h2", "text", True),
    ("links_in_text", "p a", "//p//a", "href", True),
    ("nav", "nav a", "//nav//a", "text", True),
    ("footer", "footer", "//footer", "text"),
    ("lang", "html", "/html", "lang"),
    ("next", 'link[rel="next"]', '//link[@rel="next"]', "href"),
    ("images", "img", "//img", "src", True),
]
"""(name, CSS, XPath, attr[, multiple]): the same ten fields both ways, as a rule for an
article page reads them (not every paragraph: reading a page's whole text costs as much as
all ten of these on a 24 KB page)."""


def rule_document(kind: str) -> str:
    """A rule for every page with the ten fields read by ``kind`` (css or xpath)."""
    lines = ["[[rule]]", f'name = "{kind}-fields"', "url = '.'", ""]
    for name, css, xpath, attr, *multiple in FIELDS:
        selector = css if kind == "css" else xpath
        lines += ["[[rule.field]]", f'name = "{name}"', f"{kind} = '{selector}'"]
        lines += [f'attr = "{attr}"', f"multiple = {'true' if multiple else 'false'}", ""]
    return "\n".join(lines)


def write_rules(directory: Path) -> dict[str, Path]:
    """The CSS and XPath rule documents, written to ``directory``."""
    paths = {}
    for kind in ("css", "xpath"):
        path = directory / f"{kind}.toml"
        path.write_text(rule_document(kind), "utf-8")
        paths[kind] = path
    return paths


# -- 1. extraction per page -----------------------------------------------------------------


def sample_pages(count: int) -> list[tuple[str, bytes]]:
    """Up to ``count`` pages of the benchmark web as (URL, body)."""
    web, _ = ensure_web(WebSpec(pages=600, hosts=4), OUT / "webs")
    pages = []
    for path in sorted((web / "www").rglob("*.html"))[:count]:
        host, _, rest = str(path.relative_to(web / "www")).partition("/")
        pages.append((f"http://{host}/{rest.removesuffix('index.html')}", path.read_bytes()))
    return pages


def per_page(pages: list[tuple[str, bytes]], rules: dict[str, RuleSet], rounds: int) -> dict:
    """Median microseconds per page: parse, then each rule's evaluation."""
    parsed = [(url, parse_html(body, url), body) for url, body in pages]
    times: dict[str, list[float]] = {"parse": [], **{kind: [] for kind in rules}}
    for _ in range(rounds):
        started = time.perf_counter()
        for url, body in pages:
            parse_html(body, url)
        times["parse"].append(time.perf_counter() - started)
        for kind, ruleset in rules.items():
            started = time.perf_counter()
            for url, page, body in parsed:
                found = evaluate(ruleset, url, page, body)
                assert found is not None and not found.errors, found
            times[kind].append(time.perf_counter() - started)
    return {k: round(statistics.median(v) / len(pages) * 1e6, 1) for k, v in times.items()}


# -- 2. whole crawl -------------------------------------------------------------------------


def serve(hosts: int, pages: int) -> tuple[subprocess.Popen[str], int]:
    """The bundled test web in its own process; its port."""
    command = [sys.executable, "-m", "gossamer.testweb", "--port", "0", "--hosts", str(hosts),
               "--pages", str(pages), "--big-pages", "--crawl-delay", "0", "--specials", "none",
               "--flaky-failures", "0"]  # fmt: skip
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert server.stdout is not None
    line = server.stdout.readline()
    match = re.search(r"http://127\.0\.0\.1:(\d+)", line)
    if match is None:
        server.kill()
        raise SystemExit(f"the test web did not start: {line!r}")
    return server, int(match.group(1))


def crawl_once(port: int, hosts: int, work: Path, rules: Path | None) -> dict[str, Any]:
    """One measured crawl; its pages, CPU seconds and pages per CPU-second."""
    out = work / ("rules" if rules else "plain")
    command = [sys.executable, "-m", "gossamer.cli", "crawl", f"http://site0.test:{port}/",
               "--allow-domain", "test", "--resolve", "*.test=127.0.0.1", "--out", str(out),
               "--overwrite", "--quiet", "--concurrency", "32", "--per-host", "4",
               "--robots-retry", "0.2"]  # fmt: skip
    if rules is not None:
        command += ["--rules", str(rules)]
    measured = run_measured(command, work / "crawl.log", cpu=None, timeout=600)
    stats = json.loads((out / "stats.json").read_text())
    cpu = measured.user + measured.system
    return {"pages": stats["pages"], "items": stats["items"], "cpu": round(cpu, 2),
            "pages_per_cpu_s": round(stats["pages"] / cpu, 1)}  # fmt: skip


def whole_crawl(rules: Path, rounds: int, hosts: int, pages: int) -> dict[str, Any]:
    """Crawls without and with the CSS rule, alternately; medians and their ratio."""
    server, port = serve(hosts, pages)
    runs: dict[str, list[dict[str, Any]]] = {"plain": [], "rules": []}
    try:
        with tempfile.TemporaryDirectory(prefix="bench-rules-") as tmp:
            for number in range(rounds):
                order = ("plain", "rules") if number % 2 == 0 else ("rules", "plain")
                for name in order:
                    result = crawl_once(port, hosts, Path(tmp), rules if name == "rules" else None)
                    runs[name].append(result)
                    print(f"  round {number + 1} {name:<6} {result}", flush=True)
    finally:
        server.terminate()
        server.wait()
    plain = round(statistics.median(r["pages_per_cpu_s"] for r in runs["plain"]), 1)
    ruled = round(statistics.median(r["pages_per_cpu_s"] for r in runs["rules"]), 1)
    return {"plain_pages_per_cpu_s": plain, "rules_pages_per_cpu_s": ruled,
            "ratio": round(ruled / plain, 3), "pages": runs["rules"][0]["pages"],
            "items": runs["rules"][0]["items"]}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4, help="crawls of each kind (4)")
    parser.add_argument("--pages", type=int, default=200, help="pages to time rules on (200)")
    parser.add_argument("--quick", action="store_true", help="2 rounds, a smaller web")
    args = parser.parse_args()
    rounds, hosts, per_host = (2, 4, 100) if args.quick else (args.rounds, 8, 150)
    with tempfile.TemporaryDirectory(prefix="bench-rules-") as tmp:
        paths = write_rules(Path(tmp))
        rules = {kind: load_rules([path]) for kind, path in paths.items()}
        pages = sample_pages(args.pages)
        timing = per_page(pages, rules, 5)
        print(f"extraction per page over {len(pages)} pages of the benchmark web (median us):")
        print(f"  parse (for scale) {timing['parse']:>8}")
        print(f"  10 CSS fields     {timing['css']:>8}")
        print(f"  10 XPath fields   {timing['xpath']:>8}  (lxml parses the page again)")
        print(f"whole crawl of the test web ({hosts} hosts x {per_host} big pages), CSS rule:")
        crawl = whole_crawl(paths["css"], rounds, hosts, per_host)
    verdict = "ok" if crawl["ratio"] >= TARGET else f"SLOWER than the {TARGET:.0%} target"
    print(f"  pages per CPU-second: {crawl['plain_pages_per_cpu_s']} without rules, "
          f"{crawl['rules_pages_per_cpu_s']} with; ratio {crawl['ratio']} ({verdict})")  # fmt: skip
    OUT.mkdir(exist_ok=True)
    summary = {"per_page_us": timing, "pages_timed": len(pages), "crawl": crawl}
    (OUT / "rules-bench.json").write_text(json.dumps(summary, indent=2) + "\n", "utf-8")


if __name__ == "__main__":
    main()
