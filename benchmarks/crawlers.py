"""The two crawlers under test: how to start each, and how to read what it fetched.

Both get the same seeds (every host's ``/``), total concurrency, per-host limit, no delay and
robots.txt obeyed. gossamer's counts come from its ``pages.jsonl``, Scrapy's from the result
file written by ``scrapy_spider.py``.

Each crawler runs in one of two modes. ``content=True`` is the whole job: gossamer with its
defaults (main text and metadata of every page) plus ``--warc``; the Scrapy spider with
``trafilatura.extract`` in its callback and a JSON lines feed. ``content=False`` only follows
links: gossamer with ``--no-text``, the spider counting pages.
"""

from __future__ import annotations

import compileall
import json
import sys
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SCRAPY_PYTHON = HERE / ".venv-scrapy" / "bin" / "python"
GOSSAMER = Path(sys.executable).parent / "gossamer"


def compile_gossamer() -> None:
    """Byte-compile gossamer's sources, as installing a package does (pip compiles what it
    installs, the Scrapy virtualenv included). An editable install leaves them uncompiled,
    and where ``PYTHONDONTWRITEBYTECODE`` is set every start would compile about a hundred
    modules again: a fifth more instructions at start-up, which Scrapy never pays."""
    import gossamer

    compileall.compile_dir(Path(gossamer.__file__).parent, quiet=1)


@dataclass(frozen=True)
class Settings:
    """The crawl settings both crawlers are given."""

    concurrency: int
    per_host: int


@dataclass(frozen=True)
class Counts:
    """What a crawler reports having fetched."""

    ok: int
    not_found: int
    robots_blocked: int
    elapsed: float | None
    """The crawler's own measure of its crawl time (no interpreter start-up), if it has one."""


class Crawler(ABC):
    """One crawler: a command line for a run directory, and a reader of its results."""

    name = ""

    @abstractmethod
    def command(self, seeds: Path, work: Path, settings: Settings) -> list[str]:
        """The command that crawls the seeds, leaving its results in ``work``."""

    @abstractmethod
    def counts(self, work: Path) -> Counts:
        """What the run in ``work`` fetched."""

    @abstractmethod
    def ok_urls(self, work: Path) -> set[str]:
        """The URLs the run in ``work`` fetched with status 200, without fragments."""

    def missing(self) -> str | None:
        """Why this crawler cannot run here, or None."""
        return None

    def version(self, work: Path) -> str:
        """The crawler's version, as its run in ``work`` reported it."""
        return "unknown"

    def texts(self, work: Path) -> dict[str, str]:
        """Main text by URL (without fragment) of the pages the run in ``work`` kept text of."""
        return {}


def _jsonl(path: Path) -> Iterator[dict[str, Any]]:
    if path.exists():
        with path.open(encoding="utf-8") as lines:
            yield from (json.loads(line) for line in lines)


class Gossamer(Crawler):
    """``gossamer crawl`` from the gossamer virtualenv."""

    def __init__(self, content: bool = False) -> None:
        self.content = content
        self.name = "gossamer-text" if content else "gossamer"

    def command(self, seeds: Path, work: Path, settings: Settings) -> list[str]:
        """``gossamer crawl --seeds-file ... --delay 0 --quiet`` into ``work/out``; with
        content on, gossamer's default text extraction and ``--warc``, else ``--no-text``."""
        mode = ["--warc"] if self.content else ["--no-text"]
        return [
            str(GOSSAMER),
            "crawl",
            "--seeds-file",
            str(seeds),
            "--out",
            str(work / "out"),
            "--overwrite",
            "--concurrency",
            str(settings.concurrency),
            "--per-host",
            str(settings.per_host),
            "--delay",
            "0",
            "--quiet",
            *mode,
        ]

    def counts(self, work: Path) -> Counts:
        """Statuses of the records in ``pages.jsonl``; elapsed from ``stats.json``."""
        ok = not_found = blocked = 0
        for record in _jsonl(work / "out" / "pages.jsonl"):
            status = record.get("status")
            ok += status == 200
            not_found += status == 404
            blocked += record.get("error") == "robots"
        stats = work / "out" / "stats.json"
        elapsed = json.loads(stats.read_text())["elapsed"] if stats.exists() else None
        return Counts(ok, not_found, blocked, elapsed)

    def ok_urls(self, work: Path) -> set[str]:
        """URLs of the records with status 200."""
        records = _jsonl(work / "out" / "pages.jsonl")
        return {r["url"].partition("#")[0] for r in records if r.get("status") == 200}

    def fetched_urls(self, work: Path) -> list[str]:
        """The URL of every record with a status (a page, a 404, a redirect: every answer
        the crawl read), in the order fetched."""
        return [r["url"] for r in _jsonl(work / "out" / "pages.jsonl") if r.get("status")]

    def texts(self, work: Path) -> dict[str, str]:
        """``text`` of the records with status 200 that have one."""
        records = _jsonl(work / "out" / "pages.jsonl")
        return {
            r["url"].partition("#")[0]: r["text"]
            for r in records
            if r.get("status") == 200 and r.get("text") is not None
        }

    def version(self, work: Path) -> str:
        """The installed gossamer's version."""
        return metadata.version("gossamer")

    def missing(self) -> str | None:
        """Set when the gossamer virtualenv has no ``gossamer`` command."""
        return None if GOSSAMER.exists() else f"{GOSSAMER} is missing: run make install"


class Scrapy(Crawler):
    """``scrapy_spider.py`` in the Scrapy virtualenv."""

    def __init__(self, content: bool = False) -> None:
        self.content = content
        self.name = "scrapy-text" if content else "scrapy"

    def command(self, seeds: Path, work: Path, settings: Settings) -> list[str]:
        """The benchmark spider, writing ``work/scrapy.json``; with content on, its items
        (trafilatura's text of each page) go to ``work/items.jsonl``."""
        items = ["--items", str(work / "items.jsonl")] if self.content else []
        return [
            str(SCRAPY_PYTHON),
            str(HERE / "scrapy_spider.py"),
            "--seeds-file",
            str(seeds),
            "--concurrency",
            str(settings.concurrency),
            "--per-host",
            str(settings.per_host),
            "--out",
            str(work / "scrapy.json"),
            "--urls",
            str(work / "urls.txt"),
            *items,
        ]

    def counts(self, work: Path) -> Counts:
        """The spider's count of 200s; 404s and robots refusals from Scrapy's stats."""
        path = work / "scrapy.json"
        if not path.exists():
            return Counts(0, 0, 0, None)
        result = json.loads(path.read_text(encoding="utf-8"))
        stats = result["stats"]
        return Counts(
            ok=result["pages_200"],
            not_found=stats.get("downloader/response_status_count/404", 0)
            - stats.get("robotstxt/response_status_count/404", 0),
            robots_blocked=stats.get("robotstxt/forbidden", 0),
            elapsed=stats.get("elapsed_time_seconds"),
        )

    def ok_urls(self, work: Path) -> set[str]:
        """The URLs the spider listed in ``urls.txt``."""
        path = work / "urls.txt"
        lines = path.read_text(encoding="utf-8").split() if path.exists() else []
        return {url.partition("#")[0] for url in lines}

    def texts(self, work: Path) -> dict[str, str]:
        """The items' texts by URL."""
        return {
            item["url"].partition("#")[0]: item["text"] for item in _jsonl(work / "items.jsonl")
        }

    def version(self, work: Path) -> str:
        """The version ``scrapy_spider.py`` wrote into its result."""
        path = work / "scrapy.json"
        if not path.exists():
            return "unknown"
        return str(json.loads(path.read_text(encoding="utf-8")).get("scrapy_version"))

    def missing(self) -> str | None:
        """Set when the Scrapy virtualenv is absent."""
        if SCRAPY_PYTHON.exists():
            return None
        return f"{SCRAPY_PYTHON} is missing: run make bench (it creates the Scrapy virtualenv)"
