"""--render on a local site with a JS-only section: rendering speed, CPU, browser memory, and
how ``auto`` compares with ``always``.

The site (served here, on 127.0.0.1): ``--static`` server-rendered pages (prose, links to
five other static pages and one app page, and an analytics script) and ``--app`` pages of a
JS-only section (an empty ``<div id="root">``; a script writes links to the next three app
pages and fetches ``/api/N``, whose JSON names two static pages). Each mode crawls it all
from the first static page, as a subprocess with the default render concurrency and
``--per-host 8`` (politeness would otherwise cap one host's renders at two at a time):

    .venv/bin/python benchmarks/bench_render.py [--static 150] [--app 100] [--per-host 8]

Prints, per mode (never, auto, always): pages, pages rendered, wall seconds, rendered pages
per second, CPU seconds per rendered page (crawler, driver and browser processes together:
the children's rusage), the browser tree's peak RSS, and links found (URLs recorded). The
target: ``auto`` finds the same URLs as ``always`` while rendering at most the pages that
need it (the app pages; ``--max-depth 1000``, so the app's chain of links is followed to
its end whichever order the pages are found in); exit status 1 if missed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PROSE = "<p>" + "Server-rendered prose of a catalogue page, long enough to read. " * 6 + "</p>"


def site(static: int, app: int) -> web.Application:
    """The benchmark site."""

    def static_page(i: int) -> str:
        links = "".join(
            f'<a href="/s/{(i + k) % static}">s{(i + k) % static}</a> ' for k in (1, 2, 3, 5, 8)
        )
        return (
            f"<!doctype html><html><head><title>S{i}</title></head><body><h1>Static {i}</h1>"
            f'{PROSE}<nav>{links}<a href="/app/0">app</a></nav>'
            "<script>window.dataLayer = [];</script></body></html>"
        )

    def app_page(i: int) -> str:
        nexts = [f"/app/{(i + k) % app}" for k in (1, 2, 3)]
        script = (
            f"const links = {json.dumps(nexts)};"
            "document.getElementById('root').innerHTML = '<h1>App " + str(i) + "</h1>' +"
            " links.map(u => '<a href=\"' + u + '\">' + u + '</a>').join(' ');"
            f"fetch('/api/{i}').then(r => r.json()).then(d => {{ for (const u of d) {{"
            " const a = document.createElement('a'); a.href = u; a.textContent = u;"
            " document.getElementById('root').appendChild(a); } });"
        )
        return (
            "<!doctype html><html><head><title>App</title></head><body>"
            f'<div id="root"></div><script>{script}</script></body></html>'
        )

    async def handle(request: web.Request) -> web.Response:
        parts = request.path.strip("/").split("/")
        try:
            kind, n = parts[0], int(parts[1])
        except (IndexError, ValueError):
            return web.Response(status=404, text="no")
        if kind == "s" and 0 <= n < static:
            return web.Response(text=static_page(n), content_type="text/html")
        if kind == "app" and 0 <= n < app:
            return web.Response(text=app_page(n), content_type="text/html")
        if kind == "api" and 0 <= n < app:
            targets = [f"/s/{(n * 7 + 3) % static}", f"/s/{(n * 11 + 5) % static}"]
            return web.Response(text=json.dumps(targets), content_type="application/json")
        return web.Response(status=404, text="no")

    application = web.Application()
    application.router.add_get("/{tail:.*}", handle)
    return application


def serve(application: web.Application) -> int:
    """Serve in a thread of its own (its own loop); the port."""
    ready = threading.Event()
    port: list[int] = []

    def run() -> None:
        loop = asyncio.new_event_loop()
        runner = web.AppRunner(application, access_log=None)
        loop.run_until_complete(runner.setup())
        tcp = web.TCPSite(runner, "127.0.0.1", 0)
        loop.run_until_complete(tcp.start())
        port.append(tcp._server.sockets[0].getsockname()[1])  # type: ignore[union-attr]
        ready.set()
        loop.run_forever()

    threading.Thread(target=run, daemon=True).start()
    ready.wait()
    return port[0]


@dataclass
class Run:
    """One crawl's figures."""

    mode: str
    pages: int
    rendered: int
    wall: float
    cpu: float
    browser_peak_mb: float
    peak_mb: float
    concurrency: int
    urls: set[str]


def crawl(mode: str, port: int, out: Path, per_host: int) -> Run:
    """One crawl as a subprocess; its figures."""
    args = [
        sys.executable, "-m", "gossamer.cli", "crawl", f"http://127.0.0.1:{port}/s/0",
        "--out", str(out), "--render", mode, "--quiet", "--no-robots",
        "--per-host", str(per_host), "--max-depth", "1000",
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    subprocess.run(args, env=env, check=True)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    stats = json.loads((out / "stats.json").read_text())
    urls = {json.loads(line)["url"] for line in (out / "pages.jsonl").read_text().splitlines()}
    render = stats.get("render") or {}
    return Run(
        mode,
        stats["pages"],
        int(render.get("pages_rendered", 0)),
        wall,
        cpu,
        float(render.get("browser_peak_rss_mb", 0.0)),
        float(stats["peak_rss_mb"]),
        int(render.get("concurrency", 0)),
        urls,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--static", type=int, default=150)
    parser.add_argument("--app", type=int, default=100)
    parser.add_argument(
        "--per-host", type=int, default=8, help="pages of the one host in flight at once (8)"
    )
    args = parser.parse_args()
    port = serve(site(args.static, args.app))
    with tempfile.TemporaryDirectory(prefix="bench-render-") as tmp:
        runs = [
            crawl(mode, port, Path(tmp) / mode, args.per_host)
            for mode in ("never", "auto", "always")
        ]
    print(
        f"site: {args.static} static pages, {args.app} JS-only pages; {os.cpu_count()} cores; "
        f"--per-host {args.per_host}; render concurrency {runs[-1].concurrency} (the default)"
    )
    print(
        "| mode | pages | rendered | s | rendered/s | CPU s per rendered page | "
        "browser peak RSS MB | peak RSS MB (all) | URLs found |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in runs:
        rate = f"{r.rendered / r.wall:.1f}" if r.rendered else "-"
        cpu = f"{r.cpu / r.rendered:.3f}" if r.rendered else "-"
        print(
            f"| {r.mode} | {r.pages} | {r.rendered} | {r.wall:.1f} | {rate} | {cpu} | "
            f"{r.browser_peak_mb} | {r.peak_mb} | {len(r.urls)} |"
        )
    never, auto, always = runs
    same = auto.urls == always.urls
    needed = sum("/app/" in url for url in always.urls)  # the JS-only pages
    print(
        f"auto rendered {auto.rendered / max(1, auto.pages):.0%} of its pages ({auto.rendered} "
        f"of {auto.pages}; {needed} need it) and found {len(auto.urls)} URLs, always "
        f"{len(always.urls)} ({'the same' if same else 'not the same'}), never {len(never.urls)}"
    )
    ok = same and auto.rendered <= needed
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
