"""Tables, summary, count checks, text agreement and the JSON record of the crawl benchmark."""

from __future__ import annotations

import multiprocessing
import statistics
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench_extract import prf
from crawlers import Counts, Crawler
from measure import Measurement
from parsefloor import Floor

TOLERANCE = 0.01
"""Page counts further apart than this fraction are flagged."""
NAME = 13
"""Width of a crawler's name in the tables."""


@dataclass(frozen=True)
class Run:
    """One crawler's run in one round."""

    crawler: str
    round: int
    cost: Measurement
    counts: Counts
    nginx_cpu: float | None = None
    """CPU seconds nginx spent serving this run."""
    server_others: float | None = None
    """CPU seconds other processes took on nginx's core during this run."""
    comparison: str = ""
    """The comparison the run belongs to (``content``, ``links``, ``reference``)."""

    @property
    def pages_per_second(self) -> float:
        """Pages answered 200 per second of wall time, start-up included."""
        return self.counts.ok / self.cost.wall if self.cost.wall else 0.0

    @property
    def pages_per_cpu_second(self) -> float:
        """Pages answered 200 per CPU-second (user + system) of the crawler process."""
        return self.counts.ok / self.cost.cpu if self.cost.cpu else 0.0

    @property
    def crawl_pages_per_second(self) -> float | None:
        """Pages per second of the crawler's own crawl clock (no interpreter start-up)."""
        elapsed = self.counts.elapsed
        return self.counts.ok / elapsed if elapsed else None

    def as_dict(self) -> dict[str, Any]:
        """For the JSON record."""
        counts = asdict(self.counts)
        return {
            "crawler": self.crawler,
            "comparison": self.comparison,
            "round": self.round,
            **asdict(self.cost),
            "cpu": self.cost.cpu,
            "others": self.cost.others,
            "nginx_cpu": self.nginx_cpu,
            "server_others": self.server_others,
            "self_elapsed": counts.pop("elapsed"),
            **{f"pages_{k}": v for k, v in counts.items()},
            "pages_per_second": self.pages_per_second,
            "pages_per_cpu_second": self.pages_per_cpu_second,
            "crawl_pages_per_second": self.crawl_pages_per_second,
        }


_HEADER = (
    f"  {'crawler':<{NAME}} {'ok':>6} {'404':>5} {'robots':>6} {'wall s':>7} {'CPU s':>7} "
    f"{'pages/s':>8} {'pages/CPU-s':>11} {'crawl pages/s':>13} {'peak RSS MB':>11} "
    f"{'nginx s':>7} {'others s':>8}"
)


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def run_line(run: Run) -> str:
    """One row of a round's table."""
    crawl = run.crawl_pages_per_second
    others = run.cost.others
    return (
        f"  {run.crawler:<{NAME}} {run.counts.ok:>6} {run.counts.not_found:>5} "
        f"{run.counts.robots_blocked:>6} {run.cost.wall:>7.2f} {run.cost.cpu:>7.2f} "
        f"{run.pages_per_second:>8.1f} {run.pages_per_cpu_second:>11.1f} "
        f"{(f'{crawl:.1f}' if crawl else '-'):>13} {run.cost.peak_rss_mb:>11.1f} "
        f"{_seconds(run.nginx_cpu):>7} {_seconds(others):>8}"
        + ("  TIMED OUT" if run.cost.timed_out else "")
        + (f"  exit {run.cost.returncode}" if run.cost.returncode else "")
    )


def round_table(number: int, rounds: int, mode: str, runs: Sequence[Run]) -> str:
    """The table of one comparison in one round."""
    title = f"round {number}/{rounds}, {mode}"
    return "\n".join([title, _HEADER, *(run_line(r) for r in runs)])


def round_ratio(runs: Sequence[Run], ours: str, theirs: str) -> str:
    """The round's ratio of pages per CPU-second, ours over theirs."""
    by_name = {r.crawler: r.pages_per_cpu_second for r in runs}
    a, b = by_name[ours], by_name[theirs]
    ratio = f"{a / b:.2f}x" if b else "-"
    return f"  pages per CPU-second: {ours} {a:.1f} / {theirs} {b:.1f} = {ratio}"


@dataclass(frozen=True)
class Agreement:
    """How close gossamer's main text is to the reference's (trafilatura's) over the pages
    both kept, token bags per page, averaged over pages."""

    pages: int
    """Pages both outputs hold."""
    only_ours: int
    only_theirs: int
    empty_ours: int
    empty_theirs: int
    precision: float
    recall: float
    f1: float
    f1_under_0_8: int
    """Pages whose F1 is under 0.8."""


def text_agreement(ours: dict[str, str], theirs: dict[str, str]) -> Agreement:
    """Score ``ours`` against ``theirs`` (URL -> text) on the URLs both have."""
    shared = sorted(ours.keys() & theirs.keys())
    scores = [prf(ours[url], theirs[url]) for url in shared]
    return Agreement(
        pages=len(shared),
        only_ours=len(ours.keys() - theirs.keys()),
        only_theirs=len(theirs.keys() - ours.keys()),
        empty_ours=sum(not ours[url].strip() for url in shared),
        empty_theirs=sum(not theirs[url].strip() for url in shared),
        precision=statistics.fmean(s[0] for s in scores) if scores else 0.0,
        recall=statistics.fmean(s[1] for s in scores) if scores else 0.0,
        f1=statistics.fmean(s[2] for s in scores) if scores else 0.0,
        f1_under_0_8=sum(s[2] < 0.8 for s in scores),
    )


def score_apart(pair: tuple[Crawler, Crawler], runs: Path) -> Agreement:
    """`text_agreement` of the pair's last runs (under ``runs/<name>``), in a fresh process.

    The texts of a few thousand pages take a few hundred MB, which this process's heap keeps
    once freed; Linux carries a parent's RSS into the peak RSS (``ru_maxrss``) of every child
    forked from it after, so each crawler measured later would report at least that much.
    """
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(_score, (pair, runs))


def _score(pair: tuple[Crawler, Crawler], runs: Path) -> Agreement:
    ours, theirs = (crawler.texts(runs / crawler.name) for crawler in pair)
    return text_agreement(ours, theirs)


def median_agreement(rounds: Sequence[Agreement]) -> Agreement:
    """Field by field median over rounds."""
    fields = asdict(rounds[0]).keys()
    values = {k: statistics.median(asdict(a)[k] for a in rounds) for k in fields}
    ints = {k: int(v) for k, v in values.items() if isinstance(getattr(rounds[0], k), int)}
    return Agreement(**(values | ints))


def agreement_text(agreement: Agreement, label: str = "this round") -> str:
    """One paragraph on the main texts' agreement."""
    a = agreement
    return (
        f"  main text, gossamer vs trafilatura in Scrapy ({label}): {a.pages} pages in both, "
        f"token-bag P {a.precision:.3f} R {a.recall:.3f} F1 {a.f1:.3f} (macro), "
        f"{a.f1_under_0_8} pages under F1 0.8; empty: gossamer {a.empty_ours}, "
        f"trafilatura {a.empty_theirs}; text from one side only: gossamer {a.only_ours}, "
        f"Scrapy {a.only_theirs}"
    )


def _median(values: Sequence[float | None]) -> float:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else 0.0


def summarise(runs: Sequence[Run], names: Sequence[str]) -> dict[str, dict[str, float]]:
    """Medians over rounds per crawler."""
    summary = {}
    for name in names:
        mine = [r for r in runs if r.crawler == name]
        summary[name] = {
            "pages_ok": _median([r.counts.ok for r in mine]),
            "pages_per_second": _median([r.pages_per_second for r in mine]),
            "pages_per_cpu_second": _median([r.pages_per_cpu_second for r in mine]),
            "crawl_pages_per_second": _median([r.crawl_pages_per_second for r in mine]),
            "peak_rss_mb": _median([r.cost.peak_rss_mb for r in mine]),
            "wall": _median([r.cost.wall for r in mine]),
            "cpu": _median([r.cost.cpu for r in mine]),
        }
    return summary


def ratios(summary: dict[str, dict[str, float]], ours: str, theirs: str) -> dict[str, float]:
    """``ours / theirs`` for every summary figure."""
    a, b = summary[ours], summary[theirs]
    return {k: a[k] / b[k] if b[k] else 0.0 for k in a}


def contention_flags(runs: Sequence[Run], limit: float = 0.05) -> list[str]:
    """Runs during which other processes used a benchmark core for over ``limit`` of the time."""
    flags = []
    for run in runs:
        for core, taken in (("the crawler's", run.cost.others), ("nginx's", run.server_others)):
            if taken is not None and taken > limit * run.cost.wall:
                flags.append(
                    f"round {run.round} {run.crawler}: other processes took {taken:.1f} s of "
                    f"{core} core during its {run.cost.wall:.1f} s: figures are disturbed"
                )
    return flags


def count_flags(runs: Sequence[Run], expected_ok: int) -> list[str]:
    """Runs whose page count is off the expected count, or off the other crawler's."""
    flags = []
    for run in runs:
        if run.cost.timed_out or run.cost.returncode:
            flags.append(f"round {run.round} {run.crawler}: did not finish cleanly")
        if abs(run.counts.ok - expected_ok) > TOLERANCE * expected_ok:
            flags.append(
                f"round {run.round} {run.crawler}: {run.counts.ok} pages, expected {expected_ok}"
            )
    for number in sorted({r.round for r in runs}):
        pair = [r for r in runs if r.round == number]
        if len(pair) == 2 and abs(pair[0].counts.ok - pair[1].counts.ok) > TOLERANCE * max(
            pair[0].counts.ok, pair[1].counts.ok, 1
        ):
            flags.append(
                f"round {number}: {pair[0].crawler} {pair[0].counts.ok} pages vs "
                f"{pair[1].crawler} {pair[1].counts.ok} (more than 1% apart)"
            )
    return flags


def url_notes(
    number: int,
    urls: dict[str, set[str]],
    allowed: Callable[[str], bool],
    mode: str = "",
    limit: int = 5,
) -> list[str]:
    """Pages only one crawler fetched in a round, and whether robots.txt allows them."""
    (first, mine), (second, theirs) = urls.items()
    notes = []
    for name, only in ((first, mine - theirs), (second, theirs - mine)):
        if only:
            shown = ", ".join(
                f"{url} ({'allowed' if allowed(url) else 'robots.txt disallows it'})"
                for url in sorted(only)[:limit]
            )
            more = f" and {len(only) - limit} more" if len(only) > limit else ""
            where = f"round {number}" + (f" {mode}" if mode else "")
            notes.append(f"{where}: {len(only)} page(s) only {name} fetched: {shown}{more}")
    return notes


def summary_text(summary: dict[str, dict[str, float]], ours: str, theirs: str, rounds: int) -> str:
    """The summary table: medians of both crawlers and their ratio."""
    ratio = ratios(summary, ours, theirs)
    rows = [
        ("pages fetched (200)", "pages_ok", ".0f", ".3f"),
        ("pages/s (wall)", "pages_per_second", ".1f", ".2f"),
        ("pages per CPU-second", "pages_per_cpu_second", ".1f", ".2f"),
        ("crawl-only pages/s", "crawl_pages_per_second", ".1f", ".2f"),
        ("peak RSS MB", "peak_rss_mb", ".1f", ".2f"),
        ("wall s", "wall", ".2f", ".2f"),
        ("CPU s", "cpu", ".2f", ".2f"),
    ]
    lines = [
        f"summary: median of {rounds} round(s)",
        f"  {'':<22} {ours:>{NAME}} {theirs:>{NAME}} {'ratio':>8}",
    ]
    for label, key, fmt, rfmt in rows:
        lines.append(
            f"  {label:<22} {summary[ours][key]:>{NAME}{fmt}} {summary[theirs][key]:>{NAME}{fmt}} "
            f"{format(ratio[key], rfmt) + 'x':>8}"
        )
    return "\n".join(lines)


def floor_text(
    floors: dict[str, Floor], pages: int, cpu_per_page_ms: float, mode: str = "links"
) -> str:
    """The parse floor table and how far gossamer's CPU per page (in the ``mode`` comparison)
    is above each floor."""
    labels = {
        "lexbor_hrefs": "lexbor parse + hrefs",
        "lexbor_hrefs_urljoin": "lexbor parse + hrefs + urljoin",
    }
    lines = [
        f"parse floor: {pages} pages, one core, fastest of the passes per page; "
        f"gossamer ({mode}) spends {cpu_per_page_ms:.3f} ms CPU per page",
        f"  {'':<48} {'median ms':>9} {'mean ms':>8} {'pages/CPU-s':>11} {'gossamer/floor':>14}",
    ]
    for key, floor in floors.items():
        padded = key.endswith("_top_pad")
        label = labels[key.removesuffix("_top_pad")]
        label += " (MALLOC_TOP_PAD_)" if padded else " (default malloc)"
        lines.append(
            f"  {label:<48} {floor.median_ms:>9.3f} {floor.mean_ms:>8.3f} "
            f"{floor.pages_per_second:>11,.0f} {cpu_per_page_ms / floor.mean_ms:>13.1f}x"
        )
    return "\n".join(lines)
