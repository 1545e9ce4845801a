"""A rule document's sample pages are read bounded when it is opened: the first
``MAX_SAMPLE_BYTES`` of a huge (sparse) file, nothing of a FIFO nor of a device."""

from __future__ import annotations

import os
import time
import tracemalloc
from pathlib import Path

from gossamer.ui.editor.documents import MAX_SAMPLE_BYTES, Rules

DOCUMENT = """
[[rule]]
name = "r"
url = "/x"
[[rule.field]]
name = "title"
css = "h1"
[[rule.sample]]
url = "http://s.test/huge"
html = "samples/huge.html"
[[rule.sample]]
url = "http://s.test/fifo"
html = "samples/fifo.html"
[[rule.sample]]
url = "http://s.test/small"
html = "samples/small.html"
"""


def test_a_huge_sample_is_read_up_to_the_bound_and_a_fifo_not_at_all(tmp_path: Path) -> None:
    samples = tmp_path / "samples"
    samples.mkdir()
    (tmp_path / "doc.toml").write_text(DOCUMENT)
    with (samples / "huge.html").open("wb") as huge:
        huge.truncate(1 << 40)  # 1 TiB, sparse: read whole, it would not fit in memory
    os.mkfifo(samples / "fifo.html")  # opened and read, it would wait for a writer forever
    (samples / "small.html").write_bytes(b"<h1>T</h1>")
    tracemalloc.start()
    started = time.monotonic()
    try:
        _, pages = Rules(tmp_path).open("doc.toml")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert time.monotonic() - started < 10
    assert [(p.url, len(p.body)) for p in pages["r"]] == [
        ("http://s.test/huge", MAX_SAMPLE_BYTES),
        ("http://s.test/small", 10),
    ]
    assert peak < 3 * MAX_SAMPLE_BYTES  # the read and its copy
