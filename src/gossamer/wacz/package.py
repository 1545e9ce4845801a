"""Writing the WACZ file: the ZIP (WARCs and index stored, not deflated, so a replay tool
reads a record or an index block with one ranged read), ``datapackage.json`` with each
file's size and SHA-256, and ``datapackage-digest.json`` with the SHA-256 of that.

Everything streams: a WARC is copied into the ZIP in 1 MiB pieces while its digest is taken,
then read once more to index it. The file is written to a fresh temporary file beside it
(never a predictable name a symlink could stand in for) and renamed when complete, so a
WACZ that exists is whole. Only regular files inside a crawl's directory are packaged: a
symlink in ``warc/`` (or ``warc/`` itself a symlink) is skipped with a warning, and entry
names keep only ``[A-Za-z0-9._-]``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import re
import stat
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from gossamer import __version__
from gossamer.errors import CommandError
from gossamer.wacz.index import IndexCounts, SortedLines, index_warc, write_zipnum
from gossamer.wacz.pages import HEADER, page_lines

__all__ = ["WACZ_VERSION", "WaczSummary", "archive_names", "package_crawl", "write_wacz"]

log = logging.getLogger(__name__)

WACZ_VERSION = "1.1.1"
_CHUNK = 1 << 20
_ZIP64_HINT = 1 << 30
"""Archives past this many WARC bytes write their other entries with ZIP64 sizes."""


@dataclass(frozen=True, slots=True)
class WaczSummary:
    """What a WACZ holds: its path, WARC files, indexed captures, listed pages, and the
    captures left out (payload withheld) or files cut short (a torn last record)."""

    path: Path
    warc_files: int
    captures: int
    revisits: int
    pages: int
    withheld: int
    torn: tuple[str, ...]
    bytes: int


def archive_names(outs: Sequence[Path]) -> list[tuple[Path, str, Path]]:
    """Every WARC file of the crawls in ``outs`` as (crawl directory, name inside the WACZ,
    path): its own name, or ``N-name`` (N the crawl's place) when two crawls' files share one.
    Raises CommandError when there is none."""
    found = [(out, path) for out in outs for path in _warc_files(out)]
    if not found:
        where = ", ".join(str(out / "warc") for out in outs)
        raise CommandError(f"no WARC files in {where}: crawl with --warc (or --wacz) first")
    names = [_entry_name(path.name) for _, path in found]
    place = {out: n for n, out in enumerate(outs, 1)}
    named: list[tuple[Path, str, Path]] = []
    taken: set[str] = set()
    for (out, path), name in zip(found, names, strict=True):
        entry = name if names.count(name) == 1 else f"{place[out]}-{name}"
        while entry in taken:  # two names of one crawl made alike by _entry_name
            entry = f"{place[out]}-{entry}"
        taken.add(entry)
        named.append((out, entry, path))
    return named


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def _entry_name(name: str) -> str:
    """A file name as a ZIP entry name: any character but ``[A-Za-z0-9._-]`` (a backslash,
    a drive colon, a newline, a zero-width space) becomes ``_``, so no reader sees a path."""
    return _UNSAFE.sub("_", name)


def _warc_files(out: Path) -> list[Path]:
    """``out/warc/*.warc.gz`` that are regular files, not symlinks, and inside ``out``;
    each other one is skipped with a warning naming it (it could be any file of the host)."""
    warc = out / "warc"
    if warc.is_symlink():
        log.warning("%s is a symlink: its files are not packaged", warc)
        return []
    root = out.resolve()
    kept = []
    for path in sorted(warc.glob("*.warc.gz")):
        mode = path.lstat().st_mode
        if stat.S_ISREG(mode) and path.resolve().is_relative_to(root):
            kept.append(path)
        else:
            log.warning("%s is not a regular file inside %s: not packaged", path, out)
    return kept


def write_wacz(
    outs: Sequence[Path], target: Path, *, clock: Callable[[], float] = time.time
) -> WaczSummary:
    """Package the WARC files, index and pages of the crawls in ``outs`` (each a crawl's
    ``--out``) into the WACZ file ``target``, replacing it. Raises CommandError when the
    crawls have no WARC file."""
    archives = archive_names(outs)
    target.parent.mkdir(parents=True, exist_ok=True)
    # mkstemp creates the file new (O_EXCL), so a symlink planted at a known name is never
    # written through
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    part = Path(name)
    try:
        with (
            os.fdopen(fd, "w+b") as raw,
            zipfile.ZipFile(raw, "w", zipfile.ZIP_STORED, allowZip64=True) as wacz,
        ):
            writer = _Writer(wacz, clock)
            summary = writer.write(outs, archives)
        os.chmod(part, 0o644)  # mkstemp's 0600 would hide the archive from a replay server
        os.replace(part, target)
    finally:
        part.unlink(missing_ok=True)
    size = target.stat().st_size
    log.info(
        "WACZ %s: %d WARC file(s), %d captures, %d pages, %d bytes",
        target,
        len(archives),
        summary["captures"],
        summary["pages"],
        size,
        extra={"event": "wacz-written", **summary},
    )
    return WaczSummary(path=target, warc_files=len(archives), bytes=size, **summary)


class _Writer:
    """Adds the entries of one WACZ, noting each one's size and digest for the datapackage."""

    def __init__(self, wacz: zipfile.ZipFile, clock: Callable[[], float]) -> None:
        self._wacz = wacz
        self._now = clock()
        self._resources: list[dict[str, Any]] = []
        self._pages_written = 0
        self._warc_bytes = 0

    def write(self, outs: Sequence[Path], archives: list[tuple[Path, str, Path]]) -> dict[str, Any]:
        """Write every entry; the summary's figures."""
        counts = IndexCounts()
        self._warc_bytes = sum(path.stat().st_size for _, _, path in archives)
        with tempfile.TemporaryDirectory(prefix="gossamer-wacz-") as scratch:
            lines = SortedLines(Path(scratch))
            for _, name, path in archives:
                with (
                    path.open("rb") as warc,
                    self._open(f"archive/{name}", size=_size(warc)) as out,
                ):
                    for piece in _pieces(warc):
                        out.write(piece)
                lines.add(index_warc(path, name, counts))
            first = self._pages(outs, archives, counts)
            with self._open("indexes/index.cdx.gz") as out:
                idx = write_zipnum(lines.merged(), out, "index.cdx.gz")
        with self._open("indexes/index.idx") as out:
            out.write("".join(idx).encode())
        self._datapackage(first)
        return {
            "captures": counts.indexed,
            "revisits": counts.revisits,
            "pages": self._pages_written,
            "withheld": len(counts.withheld),
            "torn": tuple(counts.torn),
        }

    def _pages(
        self, outs: Sequence[Path], archives: list[tuple[Path, str, Path]], counts: IndexCounts
    ) -> dict[str, Any] | None:
        """Write pages/pages.jsonl; the first page (the WACZ's main page)."""
        first: dict[str, Any] | None = None
        with self._open("pages/pages.jsonl", zipfile.ZIP_DEFLATED) as out:
            out.write(_json_line(HEADER))
            for out_dir in outs:
                files = {path.name: name for o, name, path in archives if o == out_dir}
                for page in page_lines(out_dir / "pages.jsonl", files, counts):
                    out.write(_json_line(page))
                    self._pages_written += 1
                    first = first or page
        return first

    def _datapackage(self, main: dict[str, Any] | None) -> None:
        package: dict[str, Any] = {
            "profile": "data-package",
            "wacz_version": WACZ_VERSION,
            "software": f"gossamer {__version__}",
            "created": datetime.fromtimestamp(self._now, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "title": "gossamer crawl",
            "resources": self._resources,
        }
        if main is not None:
            package |= {"mainPageURL": main["url"], "mainPageDate": main["ts"]}
        data = json.dumps(package, indent=2, ensure_ascii=False).encode()
        self._add("datapackage.json", data, zipfile.ZIP_DEFLATED)
        digest = {"path": "datapackage.json", "hash": "sha256:" + hashlib.sha256(data).hexdigest()}
        self._add("datapackage-digest.json", json.dumps(digest, indent=2).encode())

    def _add(self, path: str, data: bytes, method: int = zipfile.ZIP_STORED) -> None:
        self._wacz.writestr(self._info(path, method), data)

    def _open(
        self, path: str, method: int = zipfile.ZIP_STORED, size: int | None = None
    ) -> _Digesting:
        """A new entry; ``size`` when known (a WARC file), else the entry is written with
        ZIP64 sizes once the archive is large enough that it might pass 2 GiB (an index of
        tens of millions of captures): only those entries carry ZIP64 fields."""
        info = self._info(path, method)
        if size is not None:
            info.file_size = size  # zipfile picks ZIP64 from it
        large = size is None and self._warc_bytes > _ZIP64_HINT
        entry = self._wacz.open(info, "w", force_zip64=large)
        return _Digesting(entry, path, self._resources)

    def _info(self, path: str, method: int) -> zipfile.ZipInfo:
        stamp = time.gmtime(max(self._now, 315_532_800))[:6]  # ZIP dates start in 1980
        info = zipfile.ZipInfo(path, date_time=stamp)
        info.compress_type = method
        return info


class _Digesting:
    """A ZIP entry being written, its bytes counted and hashed; closing it adds its
    resource (name, path, size, SHA-256) to ``resources``."""

    def __init__(self, entry: IO[bytes], path: str, resources: list[dict[str, Any]]) -> None:
        self._entry = entry
        self._path = path
        self._resources = resources
        self._sha256 = hashlib.sha256()
        self._size = 0

    def write(self, data: bytes) -> int:
        self._sha256.update(data)
        self._size += len(data)
        return self._entry.write(data)

    def __enter__(self) -> _Digesting:
        return self

    def __exit__(self, *exc: object) -> None:
        self._entry.close()
        self._resources.append(
            {
                "name": os.path.basename(self._path).lower(),
                "path": self._path,
                "hash": "sha256:" + self._sha256.hexdigest(),
                "bytes": self._size,
            }
        )


def _size(stream: IO[bytes]) -> int:
    return os.fstat(stream.fileno()).st_size


def _pieces(stream: IO[bytes]) -> Iterable[bytes]:
    while piece := stream.read(_CHUNK):
        yield piece


def _json_line(value: dict[str, Any]) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode() + b"\n"


async def package_crawl(out: Path, target: Path) -> WaczSummary | None:
    """``--wacz`` at the end of a crawl: ``out``'s WARC files packaged as ``target`` (in a
    thread: the event loop keeps serving metrics); None, with a warning, when the crawl
    archived nothing."""
    try:
        return await asyncio.to_thread(write_wacz, [out], target)
    except CommandError as exc:
        log.warning("no WACZ written: %s", exc)
        return None
