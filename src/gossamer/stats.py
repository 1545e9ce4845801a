"""The crawl's frozen statistics snapshot, as shown live and written to stats.json."""

from __future__ import annotations

import json
import resource
import sys
from pathlib import Path
from typing import Any

import msgspec


def peak_rss_mb() -> float:
    """Peak resident set size of this process, MiB: Linux's ``VmHWM``, the high-water mark
    of the process's own memory since it started. Not ``getrusage``'s ``ru_maxrss``: Linux
    keeps there the peak of the process that started this one (its memory as it was when
    this one was spawned), so a crawl started from a process that once held 2 GB would say
    2 GB. Elsewhere, ``ru_maxrss``."""
    try:
        with open("/proc/self/status", "rb") as status:
            for line in status:
                if line.startswith(b"VmHWM:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except (OSError, ValueError, IndexError):
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    divisor = 1024 * 1024 if sys.platform == "darwin" else 1024
    return round(peak / divisor, 1)


class CrawlStats(msgspec.Struct, frozen=True):
    """Counters of one crawl (cumulative over ``--resume`` runs for record counts). A frozen
    msgspec Struct (``msgspec.structs.asdict`` gives its fields): a dataclass's generated
    methods are compiled at every start."""

    pages: int
    """Records written: one per finished URL."""
    ok: int
    errors: int
    robots_blocked: int
    retries: int
    requests: int
    """HTTP requests made by this run, robots.txt included."""
    duplicates: int
    rejected: dict[str, int]
    status_counts: dict[str, int]
    queued: int
    in_flight: int
    elapsed: float
    pages_per_second: float
    """Records of this run per second of this run."""
    peak_rss_mb: float
    """Peak resident memory of this process, plus that of the browser's processes when
    rendering (``render.browser_peak_rss_mb``)."""
    hook_errors: int = 0
    """Pages whose ``--hook`` raised or returned what a record cannot hold."""
    internal_errors: int = 0
    """URLs ended by a failure inside gossamer while handling their answer (recorded with the
    error ``internal-error``; each one is a bug worth reporting)."""
    set_aside: int = 0
    """Malformed queue entries moved aside (cluster mode: see
    :mod:`gossamer.frontier.redis.claims`)."""
    rule_pages: int = 0
    """Pages a rule (``--rules``) matched."""
    items: int = 0
    """Items the rules read (the lines of items.jsonl)."""
    items_dropped: int = 0
    """Items left out because a required field was missing."""
    rule_errors: int = 0
    """Error lines the rules recorded in page records (at most 50 per page)."""
    proxies: dict[str, Any] | None = None
    """With a proxy pool: its live count, retries, and per proxy (``scheme://host:port``)
    requests, failures, mean latency, checked response time and state."""
    auth: dict[str, int] | None = None
    """With [[auth]] logins: logins, re-logins, token refreshes, failures, domains, cookies
    (counts only)."""
    render: dict[str, Any] | None = None
    """With ``--render``: pages rendered, failures, retries, deadline hits, browser restarts
    and crashes, render seconds, subrequests allowed and blocked (by why), ``auto``'s choices
    and the browser's memory (see gossamer.fetch.render.RenderStats)."""
    revisits: dict[str, Any] | None = None
    """With ``--recrawl``: revisits by result (``changed``, ``unchanged``, ``not-modified``,
    ``gone``), ``bytes_saved`` by 304 answers, the due ``backlog`` (due, not fetched yet) and
    the revisits ``loaded`` out of crawl.db (see gossamer.frontier.revisits.RevisitStats)."""
    focus: dict[str, Any] | None = None
    """With a focused crawl: mode, threshold, pages judged and relevant, the harvest rate
    overall and over the last ``window`` pages, links dropped (hard mode), the link scorer's
    updates and re-scorings (see :class:`gossamer.focus.policy.FocusStats`)."""

    sitemaps: dict[str, Any] | None = None
    """With ``--sitemaps on`` (the default): sitemap and feed files read, their entries
    found and admitted, files flagged, sitemaps robots.txt blocked, reads under way and
    waiting, files not fetched as out of the crawl's scope and invalid sitemap URLs (see
    :class:`gossamer.crawl.sitemapfiles.SitemapStats`)."""

    duplicates_exact: int = 0
    """Pages whose main text an earlier page had exactly (``duplicate_of`` in their record;
    duplicate content, unlike ``duplicates``, the URLs met again)."""
    duplicates_near: int = 0
    """Pages whose main text nearly repeats an earlier page's (SimHash within the threshold)."""
    budget: int = 0
    """URLs recorded with the ``budget`` outcome: queued when their host's page budget was
    spent, never fetched (``rejected["budget"]`` counts those turned away on arrival)."""
    page_signals: dict[str, int] = msgspec.field(default_factory=dict)
    """Pages by the site owner's signal: ``noindex``, ``nofollow``, ``canonical`` (naming
    another canonical URL) and what ``--canonical follow`` made of it (``canonical-followed``,
    ``-offsite``, ``-scheme``, ``-loop``, ``-error``; ``canonical-conflict``: header and tag
    disagree). See :data:`gossamer.page.stage.SIGNALS`."""
    parse_sandbox: dict[str, int] | None = None
    """Unless ``--parse-sandbox off``: pages parsed in its worker processes (``pages``),
    workers that died on a page, whose page was then parsed the guarded way and flagged
    ``html-sandbox-killed`` (``killed``), workers started (``started``)."""

    def write(self, path: Path) -> None:
        """Write as stats.json."""
        data = msgspec.structs.asdict(self)
        data["elapsed"] = round(self.elapsed, 3)
        data["pages_per_second"] = round(self.pages_per_second, 2)
        path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")

    def progress_line(self) -> str:
        """The one-line live summary."""
        line = (
            f"pages {self.pages}  {self.pages_per_second:.1f}/s  queued {self.queued}  "
            f"in flight {self.in_flight}  errors {self.errors}  blocked {self.robots_blocked}"
        )
        if self.proxies is not None and self.proxies.get("waiting"):
            line += "  no proxy live: waiting for the next check"
        if self.sitemaps is not None and self.sitemaps.get("files_total"):
            line += (
                f"  sitemaps {self.sitemaps['files_total']} "
                f"(+{self.sitemaps['admitted_total']} URLs)"
            )
        if self.focus is not None:
            line += (
                f"  harvest {self.focus['harvest_rate']:.2f} "
                f"(last {self.focus['window']}: {self.focus['recent_harvest_rate']:.2f})"
            )
        if self.revisits is not None:
            results = self.revisits["results"]
            line += "  revisits " + " ".join(
                f"{name} {results.get(name, 0)}"
                for name in ("changed", "unchanged", "not-modified", "gone")
            )
            line += f"  due {self.revisits['backlog']}"
            if self.revisits.get("spared"):
                line += f"  spare {self.revisits['spared']}"
            if self.revisits.get("bytes_saved"):
                line += f"  saved {_size(self.revisits['bytes_saved'])} by 304s"
        return line


def _size(count: int) -> str:
    """``count`` bytes for a reader: 512 B, 3.4 kB, 12.0 MB."""
    if count < 1000:
        return f"{count} B"
    value = count / 1000
    for unit in ("kB", "MB"):
        if value < 1000:
            return f"{value:.1f} {unit}"
        value /= 1000
    return f"{value:.1f} GB"
