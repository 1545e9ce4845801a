"""The CDXJ index of a WACZ: one line per capture a replay tool can serve, sorted, written as
a ZipNum shared index (``index.cdx.gz``, gzip members of ``BLOCK_LINES`` lines, and
``index.idx``, the first key of each member with its offset and length).

Lines are ``SURT TIMESTAMP {json}`` with the fields pywb and ReplayWeb.page read (``url``,
``mime``, ``status``, ``digest``, ``length``, ``offset``, ``filename``), as cdxj-indexer
writes them. Indexed: ``response``, ``revisit`` and ``resource`` records; not a record whose
payload the crawl withheld (``WARC-Truncated: noindex`` or ``not-canonical``): it holds the
headers only, and replaying an empty page would misstate the site. The WARC files are read
as a stream (warcio: one record at a time), the lines sorted on disk past ``SORT_LINES``, so
memory stays bounded whatever the archive's size.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import logging
import tempfile
import zlib
from collections.abc import Iterable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed

from gossamer.wacz.surt import surt

__all__ = [
    "BLOCK_LINES",
    "SORT_LINES",
    "IndexCounts",
    "SortedLines",
    "Writable",
    "index_warc",
    "write_zipnum",
]

log = logging.getLogger(__name__)

BLOCK_LINES = 3000
"""Lines per gzip member of index.cdx.gz (what a replay tool fetches to find one URL)."""
SORT_LINES = 100_000
"""Lines held in memory before a sorted run goes to a temporary file."""
INDEXED = frozenset({"response", "revisit", "resource"})
WITHHELD = frozenset({"noindex", "not-canonical"})
"""``WARC-Truncated`` reasons of a record whose payload the crawl kept out on purpose."""


@dataclass
class IndexCounts:
    """What indexing the archive found; ``withheld`` names the responses left out by where
    they lie (file, offset), so the pages list leaves them out too."""

    records: int = 0
    indexed: int = 0
    revisits: int = 0
    withheld: set[tuple[str, int]] = field(default_factory=set)
    torn: list[str] = field(default_factory=list)
    """Files whose last record could not be read (a crash's torn tail): indexed up to it."""


def index_warc(path: Path, name: str, counts: IndexCounts) -> Iterator[str]:
    """The CDXJ lines of the WARC file at ``path``, to be named ``name`` in the WACZ."""
    with path.open("rb") as stream:
        records = ArchiveIterator(stream)
        try:
            for record in records:
                counts.records += 1
                fields = _fields(record)
                records.read_to_end(record)
                if fields is None:
                    continue
                offset = records.get_record_offset()
                if fields.pop("withheld", False):
                    counts.withheld.add((name, offset))
                    continue
                counts.indexed += 1
                counts.revisits += record.rec_type == "revisit"
                fields |= {
                    "length": str(records.get_record_length()),
                    "offset": str(offset),
                    "filename": name,
                }
                yield _line(record, fields)
        except (ArchiveLoadFailed, OSError, EOFError, zlib.error) as exc:
            log.warning("WARC file %s unreadable past record %d: %s", path, counts.records, exc)
            counts.torn.append(name)


def _fields(record: Any) -> dict[str, Any] | None:
    """The JSON fields of ``record``'s line (None: not indexed)."""
    if record.rec_type not in INDEXED:
        return None
    headers = record.rec_headers
    url = headers.get_header("WARC-Target-URI")
    if not url or not headers.get_header("WARC-Date"):
        return None
    fields: dict[str, Any] = {"url": url}
    if headers.get_header("WARC-Truncated") in WITHHELD:
        fields["withheld"] = True
    http = record.http_headers
    if record.rec_type == "revisit":
        fields["mime"] = "warc/revisit"
    elif http is not None:
        fields["mime"] = _mime(http.get_header("Content-Type"))
    else:
        fields["mime"] = _mime(headers.get_header("Content-Type"))
    if http is not None and http.get_statuscode():
        fields["status"] = http.get_statuscode()
    digest = headers.get_header("WARC-Payload-Digest")
    if digest:
        fields["digest"] = digest
    return fields


def _line(record: Any, fields: dict[str, Any]) -> str:
    date = record.rec_headers.get_header("WARC-Date")
    stamp = "".join(c for c in date if c.isdigit())[:14]
    return f"{surt(fields['url'])} {stamp} {json.dumps(fields)}\n"


def _mime(content_type: str | None) -> str:
    if not content_type:
        return "unk"
    return content_type.split(";", 1)[0].strip().lower() or "unk"


class SortedLines:
    """Lines sorted with bounded memory: every ``run`` lines are sorted and written to a
    temporary file in ``directory``; `merged` yields them all in order."""

    def __init__(self, directory: Path, run: int = SORT_LINES) -> None:
        self._directory = directory
        self._run = run
        self._lines: list[str] = []
        self._runs: list[Path] = []

    def add(self, lines: Iterable[str]) -> None:
        """Take ``lines`` (each ending in a newline)."""
        for line in lines:
            self._lines.append(line)
            if len(self._lines) >= self._run:
                self._spill()

    def _spill(self) -> None:
        self._lines.sort()
        with tempfile.NamedTemporaryFile(
            "w", encoding="utf-8", dir=self._directory, suffix=".cdxj", delete=False
        ) as run:
            run.writelines(self._lines)
        self._runs.append(Path(run.name))
        self._lines = []

    def merged(self) -> Iterator[str]:
        """Every line taken, in order."""
        self._lines.sort()
        with ExitStack() as stack:
            files = [stack.enter_context(p.open(encoding="utf-8")) for p in self._runs]
            yield from heapq.merge(*files, self._lines)


class Writable(Protocol):
    """Where bytes go (a file, a ZIP entry)."""

    def write(self, data: bytes, /) -> int: ...


def write_zipnum(lines: Iterable[str], out: Writable, name: str) -> list[str]:
    """Write sorted ``lines`` to ``out`` as gzip members of `BLOCK_LINES` lines; the lines of
    the ``.idx`` file that finds them (its ``!meta`` line first), ``name`` being the members'
    file name in the WACZ."""
    meta = json.dumps({"format": "cdxj-gzip-1.0", "filename": name})
    idx = [f"!meta 0 {meta}\n"]
    block: list[str] = []
    offset = 0

    def flush() -> None:
        nonlocal offset
        member = _gzip("".join(block).encode())
        out.write(member)
        prefix = block[0].split(" {", 1)[0]
        entry = {
            "offset": offset,
            "length": len(member),
            "digest": "sha256:" + hashlib.sha256(member).hexdigest(),
        }
        idx.append(f"{prefix} {json.dumps(entry)}\n")
        offset += len(member)
        block.clear()

    for line in lines:
        block.append(line)
        if len(block) == BLOCK_LINES:
            flush()
    if block:
        flush()
    return idx


def _gzip(data: bytes) -> bytes:
    packer = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return packer.compress(data) + packer.flush()
