"""The crawl's records on their way out, and the counts of their outcomes.

A record is staged in the journal (crawl.db) the moment its URL is done, before its lease is acked.
A checkpoint flushes the archive (WARC), commits the journal (frontier state and records in one
transaction) and then hands the same records to each record sink in turn (pages.jsonl, then the
store) before the commit hook's follow-up (a cluster frontier's acks) and the steps waiting for
those records (:meth:`Ledger.after_checkpoint`) run. The ledger knows its sinks by their protocols
(:mod:`gossamer.sinks.base`) only.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from typing import NamedTuple, Protocol

from msgspec.structs import replace

from gossamer.outcomes import Outcome
from gossamer.sinks.base import Archive, Journal, PageRecord, RecordSink, WarcLocation

CommitHook = Callable[[], Callable[[], Awaitable[None]]]
"""Called as a checkpoint starts; what it returns is awaited once the checkpoint is durable
(e.g. sending a cluster frontier's acks only after their records are committed)."""

_COUNTERS = {
    Outcome.FETCHED: (),
    Outcome.FAILED: ("errors",),
    Outcome.ROBOTS: ("robots_blocked",),
    Outcome.BUDGET: ("budget",),
    Outcome.INTERNAL_ERROR: ("internal_errors", "errors"),
    Outcome.HOOK_ERROR: ("hook_errors", "errors"),
}
"""The counters each outcome adds to (besides ``pages``, its status and ``ok``)."""
_FETCHED = Outcome.FETCHED


class Aside(Protocol):
    """Work outside the leases that records what it fetches (the sitemap stage): it gets
    the ledger to record through (`Ledger.note`), and the crawl does not end while it is
    ``busy`` (it may still queue URLs)."""

    def bind(self, ledger: Ledger) -> None: ...
    def busy(self) -> bool: ...


class Outputs(NamedTuple):
    """Where records go: the journal (crawl.db) first, then each sink in turn after every
    commit; the archive (WARC) of every answer; the commit hook, if any; and the work
    outside the leases that records through the ledger too, if any."""

    journal: Journal
    sinks: Sequence[RecordSink] = ()
    archive: Archive | None = None
    on_commit: CommitHook | None = None
    aside: Aside | None = None


class Ledger:
    """Stages records, counts their outcomes (``counts``: pages, ok, errors, robots_blocked,
    internal_errors, hook_errors; ``statuses``: records by status) and checkpoints them."""

    def __init__(self, outputs: Outputs) -> None:
        self.journal = outputs.journal
        self._sinks = tuple(outputs.sinks)
        self._archive = outputs.archive
        self._on_commit = outputs.on_commit
        self._aside = outputs.aside
        if self._aside is not None:
            self._aside.bind(self)
        self.pending: list[PageRecord] = []
        """Records staged since the last checkpoint began."""
        self.committing = 0
        """Records of the checkpoint under way, not yet in every sink."""
        self._steps: list[Callable[[], Awaitable[None]]] = []
        self.counts: Counter[str] = Counter()
        self.statuses: Counter[str] = Counter()

    def restore(self) -> None:
        """Start the counts from the records of a previous run (``--resume``)."""
        for status, error, count in self.journal.outcome_counts():
            self._tally(status, Outcome.of(status, error), count)

    def record(
        self, record: PageRecord, outcome: Outcome, archived: WarcLocation | None = None
    ) -> None:
        """Stage a record in the journal; the caller acks its lease after this (with no await
        between), so whichever commit makes the ack durable makes the record durable too. The
        sinks get the record after the next checkpoint's commit."""
        if archived is not None:
            record = replace(
                record,
                warc_file=archived.file,
                warc_offset=archived.offset,
                warc_length=archived.length,
            )
        self.journal.stage([record])
        self.pending.append(record)
        self._tally(record.status, outcome, 1)

    def awaiting(self) -> bool:
        """Whether work outside the leases is under way (it may queue URLs and record)."""
        return self._aside is not None and self._aside.busy()

    def note(self, record: PageRecord, archived: WarcLocation | None = None) -> None:
        """Stage a record of a request outside the leases (a sitemap's, kind ``sitemap``)
        like :meth:`record`, in the same order in every sink, without counting it as a page
        (``--max-pages`` and the page counts are about pages)."""
        if archived is not None:
            record = replace(
                record,
                warc_file=archived.file,
                warc_offset=archived.offset,
                warc_length=archived.length,
            )
        self.journal.stage([record])
        self.pending.append(record)

    def after_checkpoint(self, step: Callable[[], Awaitable[None]]) -> None:
        """Await ``step`` once the records staged so far are in every sink (after the next
        checkpoint's follow-up): a cluster worker marks a sitemap read only when its records
        are, so a worker killed before loses no record, the claim expiring and another
        worker reading the sitemap again."""
        self._steps.append(step)

    def _tally(self, status: int | None, outcome: Outcome, count: int) -> None:
        counts = self.counts
        counts["pages"] += count
        self.statuses[str(status) if status is not None else "none"] += count
        if outcome is not _FETCHED:  # most pages: no enum hash (a Python call) for them
            for name in _COUNTERS[outcome]:
                counts[name] += count
        if status is not None and 200 <= status < 300:
            counts["ok"] += count

    async def checkpoint(self) -> None:
        """Commit the journal (state and records together), hand the records to each sink in
        turn, then run the commit hook's follow-up (the acks).

        A sink's records are always a prefix of the journal's; ``--resume`` sends it the rest.
        """
        records, self.pending = self.pending, []
        steps, self._steps = self._steps, []
        self.committing = len(records)
        try:
            after = self._on_commit() if self._on_commit is not None else None
            if self._archive is not None:
                self._archive.flush()  # before the commit: a committed record's response is on disk
            await self.journal.commit()
            for sink in self._sinks:
                await sink.write(records)
        finally:
            self.committing = 0
        if after is not None:
            await after()
        for step in steps:
            await step()


__all__ = ["Aside", "CommitHook", "Ledger", "Outputs"]
