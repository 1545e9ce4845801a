"""Instructions of the parse sandbox's round trip per page, in both processes, on real pages.

The pages the crawler sends to its parse sandbox (:func:`gossamer.page.sandboxed.weigh`: more
than 64 KiB or 4,096 ``<``) of the documentation sets of ``realweb.py`` (every ``--step``-th
one), read three ways under ``valgrind --tool=callgrind``, each in its own process, the first two
counted from the first page to the last (``sys.call_tracing``):

- ``guarded``: in-process as a crawl without a sandbox reads them (``parse`` of
  :mod:`gossamer.page.read` behind the markup guard, the robots meta tags, the canonical tag);
- ``job``: the sandbox worker's job run in-process (:func:`gossamer.page.sandboxed.answer`,
  the page parsed as it is) and its answer decoded, as if the crawler did the worker's work;
- ``sandbox``: :meth:`gossamer.parse.sandbox.Sandbox.ask` for each page and its answer decoded:
  the crawler's side (the request, the body copied to the shared memory, the event loop's
  wake-ups, the decoding) and, traced as a child, the worker's. Both processes are counted
  whole, so the same run asking one small page instead (``start``: the imports, the pages
  read, a worker started and stopped) is subtracted.

It prints the instructions per page of each way and of each side of the sandbox, and the
worker's start-up (paid once per crawl, again after a worker dies on a page). callgrind counts
each byte of a large copy (``rep movsb``) as an instruction: of the crawler's side, some
210,000 a page (2026-11-30) are copies, most of them the body's to the shared memory.
The worker's budget is scaled for valgrind's slowness (``GOSSAMER_PARSE_BUDGET_SCALE=100``).

Usage: ``PYTHONPATH=src .venv/bin/python benchmarks/callgrind_sandbox.py [--step 4]
[--out bench-out/sandbox-cost]`` (valgrind; the gossamer measured is the one this Python
imports).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import realweb

ROOT = Path(__file__).resolve().parent.parent
WAYS = ("guarded", "job", "sandbox", "start")
_SMALL = b"<html><head><title>t</title></head><body><a href=/a>a</a></body></html>"


def big_pages(step: int) -> list[tuple[str, bytes]]:
    """(URL, body) of every ``step``-th page the crawler would send to its sandbox."""
    from gossamer.page import sandboxed

    pages = []
    for doc in realweb.DOCS:
        root = doc.root()
        if root is None:
            continue
        for file in sorted(root.rglob("*.html")):
            body = file.read_bytes()
            if sandboxed.weigh(body).big:
                pages.append((f"http://127.0.0.1:1/{file.relative_to(root).as_posix()}", body))
    return pages[::step]


def _request(url: str) -> bytes:
    from gossamer.page import sandboxed

    return sandboxed.request(url, None, False, None, None, "gossamer", 0.0)


def _guarded(pages: Sequence[tuple[str, bytes]]) -> None:
    from gossamer.page import read
    from gossamer.page.canonical import tag_canonical
    from gossamer.page.directives import meta_directives

    for url, body in pages:
        parsed, _ = read.parse(url, body, None, False, None)
        if parsed.tree is not None:
            meta_directives(parsed.tree, "gossamer", 0.0, parsed.metas)
            if parsed.names_canonical is not False:
                tag_canonical(parsed.tree, parsed.base_url, parsed.canonical_link)


def _job(pages: Sequence[tuple[str, bytes]]) -> None:
    from gossamer.page import sandboxed

    for url, body in pages:
        sandboxed.reading(sandboxed.answer(_request(url), body))


async def _asked(pages: Sequence[tuple[str, bytes]]) -> None:
    from gossamer.page import sandboxed
    from gossamer.parse.sandbox import Sandbox

    sandbox = Sandbox("gossamer.page.sandboxed", workers=1)
    try:
        for url, body in pages:
            answer = await sandbox.ask(_request(url), body)
            if answer is None:
                raise SystemExit(f"the worker died on {url}")
            sandboxed.reading(answer)
    finally:
        await sandbox.close()


def inner(way: str, step: int) -> None:
    """One way (see the module docstring). ``start`` loads the pages as ``sandbox`` does but
    asks one small page: the difference of the two is the big pages' asks alone."""
    pages = big_pages(step)
    if way == "guarded":
        sys.call_tracing(_guarded, (pages,))
    elif way == "job":
        sys.call_tracing(_job, (pages,))
    else:
        asyncio.run(_asked(pages if way == "sandbox" else [("http://127.0.0.1:1/", _SMALL)]))
    print(f"pages: {len(pages)}", flush=True)


def _totals(out: Path) -> dict[str, int]:
    """Instructions by command line (the crawler's side, the worker's) of one way's files."""
    totals = {}
    for path in sorted(out.parent.glob(f"{out.name}.*")):
        text = path.read_text(encoding="utf-8", errors="replace")
        command = next(line for line in text.splitlines() if line.startswith("cmd:"))
        total = next(line for line in text.splitlines() if line.startswith(("summary:", "totals:")))
        side = "worker" if "gossamer.page.sandboxed" in command else "crawler"
        totals[side] = totals.get(side, 0) + int(total.split()[1])
    return totals


def run(way: str, step: int, out: Path) -> tuple[int, dict[str, int]]:
    """Run one way under callgrind: its pages and instructions by side."""
    for old in out.parent.glob(f"{out.name}.*"):
        old.unlink()
    command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}.%p"]
    if way in ("guarded", "job"):  # counted from the first page to the last
        command += ["--collect-atstart=no", "--toggle-collect=sys_call_tracing"]
    else:  # both processes whole (a child is counted with its parent's options)
        command.append("--trace-children=yes")
    command += [sys.executable, __file__, "--inner", way]
    command += ["--step", str(step)]
    env = dict(os.environ, GOSSAMER_PARSE_BUDGET_SCALE="100")
    done = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
    pages = int(done.stdout.split("pages:")[1].split()[0])
    return pages, _totals(out)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ways, print instructions per page."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--step", type=int, default=4, help="every step-th big page (4)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench-out" / "sandbox-cost")
    parser.add_argument("--inner", choices=WAYS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.inner:
        inner(args.inner, args.step)
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    counted = {way: run(way, args.step, args.out / way) for way in WAYS}
    pages = counted["job"][0]
    start = counted["start"][1]
    per = {way: counted[way][1].get("crawler", 0) / pages for way in ("guarded", "job")}
    crawler = (counted["sandbox"][1]["crawler"] - start["crawler"]) / pages
    worker = (counted["sandbox"][1]["worker"] - start["worker"]) / pages
    print(f"{pages} big pages (every {args.step}th), instructions per page:")
    print(f"  in-process, guarded       {per['guarded']:>14,.0f}")
    print(f"  in-process, the job       {per['job']:>14,.0f}")
    print(f"  sandbox, crawler's side   {crawler:>14,.0f}")
    print(f"  sandbox, worker's side    {worker:>14,.0f}")
    print(f"  sandbox, both             {crawler + worker:>14,.0f}")
    print(f"  sandbox over the job      {crawler + worker - per['job']:>+14,.0f}")
    print(f"worker start-up (and one small page): {start['worker']:,} instructions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
