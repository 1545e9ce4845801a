"""pages.jsonl: a checkpoint's records appended line for line, however many and long."""

from __future__ import annotations

import json
from pathlib import Path

from gossamer.sinks.base import PageRecord
from gossamer.sinks.jsonl import JsonlSink, repair_jsonl


async def test_a_big_checkpoint_is_written_whole_and_in_order(tmp_path: Path) -> None:
    path = tmp_path / "pages.jsonl"
    sink = JsonlSink(path)
    # 3 MB of text over 300 records: written a megabyte at a time, no line cut or lost
    records = [
        PageRecord(f"http://a.test/{i}", 200, 0, text=f"{i} " + "é" * 10_000) for i in range(300)
    ]
    await sink.write(records[:1])
    await sink.write([])
    await sink.write(records[1:])
    sink.close()
    lines = path.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["url"] for line in lines] == [r.url for r in records]
    assert json.loads(lines[-1])["text"] == records[-1].text
    assert repair_jsonl(path) == 300
