"""Steps waiting for records (`Ledger.after_checkpoint`, a cluster worker marking a sitemap
read done): they run only once the records staged before them are committed and in every
sink, never before a checkpoint, and a step staged during a checkpoint waits for the next."""

from __future__ import annotations

from pathlib import Path

from gossamer.crawldb import CrawlDB
from gossamer.ledger import Ledger, Outputs
from gossamer.sinks.base import PageRecord
from gossamer.sinks.sqlite import SQLiteSink


class Sink:
    def __init__(self, log: list[str]) -> None:
        self.log = log

    async def write(self, records: list[PageRecord]) -> None:
        self.log.extend(f"sink {r.url}" for r in records)


async def test_a_step_runs_after_its_records_reach_every_sink(tmp_path: Path) -> None:
    log: list[str] = []
    db = CrawlDB(tmp_path / "crawl.db")
    ledger = Ledger(Outputs(SQLiteSink(db), sinks=[Sink(log)]))

    async def step(name: str) -> None:
        log.append(f"step {name}")
        if name == "first":  # staged while a checkpoint runs its steps: the next one's
            ledger.after_checkpoint(lambda: step("later"))

    ledger.note(PageRecord("http://a.test/sitemap.xml", 200, 0))
    ledger.after_checkpoint(lambda: step("first"))
    assert log == []  # not before the checkpoint
    await ledger.checkpoint()
    assert log == ["sink http://a.test/sitemap.xml", "step first"]
    await ledger.checkpoint()
    assert log[-1] == "step later"
    db.close()
