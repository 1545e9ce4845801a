"""The whole job's own stages, in-process, page by page: what a crawl keeping text does per page
that a links-only crawl does not, besides the main-text walk.

Reads the pages of a whole-job crawl's WARC files (``--warc``: every 200 ``text/html``
response, its headers and wire body) and times, over those pages, each stage a crawl keeping
text runs per page: ``meta`` (the head's metadata: `gossamer.extract.meta`), ``lang`` (the
language detected, where the markup states none), ``digests`` (the exact hash and SimHash of
the main text and title), ``warc`` (a fetch's response and request records as gzip members),
``record`` (the page's record built and its JSON line encoded). The main text itself is
extracted once beforehand, untimed. Each stage's CPU time over all pages, the least of
``--runs`` runs, is printed in ms a page.

``--check FILE`` writes what every stage produced (the metadata, language, digests, the
records' lines and the WARC members with fixed record ids and dates) as one JSON file, to
compare two trees' outputs byte for byte.

Run: ``PYTHONPATH=src python benchmarks/bench_content_stages.py --warc DIR [--runs 5]``
(DIR: the ``warc`` directory of a crawl with ``--warc``, e.g. from ``profile_stages.py
--content``, ``bench-out/real-profile/content/out/warc``).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import sys
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastwarc.warc import ArchiveIterator, WarcRecordType

from gossamer.digests.base import digest
from gossamer.extract import Content, meta
from gossamer.extract.lang import detect_language
from gossamer.extract.text import EXTRACTORS
from gossamer.fetch.exchange import Exchange
from gossamer.frontier.base import Lease
from gossamer.page import read
from gossamer.page import stage as page_stage
from gossamer.page.state import PageState
from gossamer.parse.links import parse_html
from gossamer.sinks import warc

STAGES = ("meta", "lang", "digests", "warc", "record")


@dataclass
class Page:
    """One stored page and what the untimed steps read of it."""

    url: str
    exchange: Exchange
    body: bytes
    charset: str | None
    language: str | None
    tree: Any = None
    title: str | None = None
    links: int = 0
    text: str = ""
    images: Any = ()
    stated: str | None = None


class _Result:
    """The parts of a fetch result the record reads."""

    def __init__(self, page: Page) -> None:
        self.url = page.url
        self.status = 200
        self.body = page.body
        self.content_type = "text/html"
        self.charset = page.charset
        self.error = None
        self.fetched_at = 1_700_000_000.0
        self.elapsed = 0.001
        self.truncated = False
        self.flags = ()
        self.proxy = None
        self.rendered = False
        self.exchange = page.exchange


def load(directory: Path) -> list[Page]:
    """The 200 HTML responses of the WARC files in ``directory``, in file order."""
    pages = []
    for path in sorted(directory.glob("*.warc.gz")):
        with path.open("rb") as stream:
            for record in ArchiveIterator(stream, record_types=WarcRecordType.response):
                page = _page(record)
                if page is not None:
                    pages.append(page)
    return pages


def _page(record: Any) -> Page | None:
    head = record.http_headers
    if head is None or head.status_code != 200:
        return None
    raw = record.reader.read()
    headers = [(k.encode(), v.encode()) for k, v in head.items()]
    found = {k.lower(): v for k, v in head.items()}
    kind, _, params = found.get("content-type", "").partition(";")
    if kind.strip().lower() != "text/html":
        return None
    body = raw
    if found.get("content-encoding", "").lower() == "gzip":
        body = gzip.decompress(raw)
    charset = params.partition("charset=")[2].strip() or None
    url = record.headers["WARC-Target-URI"]
    exchange = Exchange(
        "GET",
        "/" + url.split("/", 3)[3],
        (("Host", url.split("/")[2]), ("Accept-Encoding", "gzip, deflate")),
        "HTTP/1.1",
        200,
        head.status_line.partition(" ")[2],
        tuple(headers),
        raw,
        record.headers.get("WARC-IP-Address"),
    )
    return Page(url, exchange, body, charset, found.get("content-language"))


def prepare(pages: list[Page]) -> None:
    """The untimed steps: each page parsed and its main text extracted."""
    walk = EXTRACTORS["tree"]
    for page in pages:
        parsed = parse_html(page.body, page.url, header_charset=page.charset)
        page.tree, page.title, page.links = parsed.tree, parsed.title, len(parsed.links)
        if page.tree is not None:
            page.text, page.images = walk(page.tree, None)
            page.stated = meta.language(meta.gather(page.tree), page.language)


def run_meta(page: Page) -> Any:
    marks = meta.gather(page.tree)
    return (
        meta.language(marks, page.language),
        meta.description(marks),
        meta.canonical(marks, page.url),
        meta.published(marks),
        meta.authors(marks),
        meta.images(page.images, page.url),
    )


def run_lang(page: Page) -> Any:
    return None if page.stated is not None else detect_language(page.text)


def run_digests(page: Page) -> Any:
    found = digest(page.text, True, page.title)
    return None if found is None else (found.exact, found.near)


_COMPRESSOR = warc._Compressor()
_STORED = warc._Compressor(warc._STORED)


def run_warc(page: Page) -> Any:
    return warc._members(page.url, 1_700_000_000.0, page.exchange, _COMPRESSOR, _STORED)


def run_record(page: Page) -> Any:
    lease = Lease(page.url, 0, "h", 1, 0, 0, 0.0, 0)
    state = PageState(lease, _Result(page), None, ())  # type: ignore[arg-type]
    state.title = page.title
    content = Content(text=page.text, lang=page.stated)
    state.text, _ = read.text_fields(content, 1_000_000)
    state.outlinks = page.links
    buffer = bytearray()
    page_stage._result(state).record.json_into(buffer)
    return bytes(buffer)


RUNS: dict[str, Callable[[Page], Any]] = {
    "meta": run_meta,
    "lang": run_lang,
    "digests": run_digests,
    "warc": run_warc,
    "record": run_record,
}


def time_stages(stages: Sequence[str], pages: Sequence[Page], churn: bool) -> dict[str, float]:
    """CPU seconds of each stage over ``pages``, the stages run one after the other on each
    page as a crawl runs them (with ``churn``, the page parsed again and its main text
    extracted before them, untimed, so that they find the caches as a crawl leaves them)."""
    spent = dict.fromkeys(stages, 0.0)
    runs = [(name, RUNS[name]) for name in stages]
    clock = time.process_time
    walk = EXTRACTORS["tree"]
    for page in pages:
        if churn:
            tree = parse_html(page.body, page.url, header_charset=page.charset).tree
            if tree is not None:
                walk(tree, None)
        for name, run in runs:
            start = clock()
            run(page)
            spent[name] += clock() - start
    return spent


def outputs(pages: Sequence[Page]) -> dict[str, Any]:
    """Every stage's output for every page (WARC ids fixed), as JSON values."""
    counter = iter(range(10**9))
    warc._new_id = lambda: f"<urn:uuid:{next(counter):032x}>"  # type: ignore[assignment]
    found: dict[str, Any] = {}
    for page in pages:
        response, request = run_warc(page)
        found[page.url] = {
            "meta": repr(run_meta(page)),
            "lang": run_lang(page),
            "digests": run_digests(page),
            "record": run_record(page).decode("utf-8", "replace"),
            "warc": [zlib.crc32(response), len(response), zlib.crc32(request), len(request)],
        }
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--warc", type=Path, required=True, help="a crawl's warc directory")
    parser.add_argument("--runs", type=int, default=5, help="runs of each stage (5)")
    parser.add_argument("--only", choices=STAGES, action="append", help="these stages only")
    parser.add_argument("--limit", type=int, help="the first LIMIT pages of the files only")
    parser.add_argument("--churn", action="store_true", help="parse and walk between pages")
    parser.add_argument("--check", type=Path, help="write every stage's output here")
    args = parser.parse_args(argv)
    pages = load(args.warc)[: args.limit]
    prepare(pages)
    pages = [page for page in pages if page.tree is not None]
    if args.check is not None:
        text = json.dumps(outputs(pages), sort_keys=True, indent=0)
        args.check.write_text(text)
        print(f"{len(pages)} pages, outputs sha1 {hashlib.sha1(text.encode()).hexdigest()}")
        return 0
    for page in pages:  # warm: imports, the language model, numpy
        for run in RUNS.values():
            run(page)
        break
    stages = args.only or list(STAGES)
    best = dict.fromkeys(stages, float("inf"))
    for _ in range(args.runs):
        for name, spent in time_stages(stages, pages, args.churn).items():
            best[name] = min(best[name], spent)
    if not args.runs:  # the untimed steps alone
        return 0
    print(f"{len(pages)} pages, ms a page (least of {args.runs} runs):")
    for name in stages:
        print(f"  {name:8} {1000 * best[name] / len(pages):.4f}")
    print(f"  {'total':8} {1000 * sum(best.values()) / len(pages):.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
