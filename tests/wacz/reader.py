"""A WACZ reader written against the WACZ 1.1.1 specification, independent of gossamer.wacz:
it checks what the specification asks (entries, stored compression, datapackage sizes and
digests, the digest file, the pages list, the ZipNum index and its blocks) and reads every
indexed record back with warcio from inside the ZIP, at the offset the index gives."""

from __future__ import annotations

import gzip
import hashlib
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from warcio.archiveiterator import ArchiveIterator

STORED_PREFIXES = ("archive/", "indexes/")


@dataclass
class Wacz:
    """What the reader found: the datapackage, the pages and the index lines (key, timestamp,
    fields) in file order."""

    datapackage: dict[str, Any]
    pages: list[dict[str, Any]]
    index: list[tuple[str, str, dict[str, Any]]]


def read_wacz(path: Path) -> Wacz:
    """Read and check the WACZ file at ``path``; AssertionError names the first problem."""
    with zipfile.ZipFile(path) as wacz:
        names = set(wacz.namelist())
        assert {"datapackage.json", "datapackage-digest.json", "pages/pages.jsonl"} <= names
        assert any(n.startswith("archive/") and n.endswith(".warc.gz") for n in names)
        for info in wacz.infolist():
            if info.filename.startswith(STORED_PREFIXES):
                assert info.compress_type == zipfile.ZIP_STORED, info.filename
        package = _check_datapackage(wacz, names)
        pages = _pages(wacz)
        index = _index(wacz)
        _check_records(wacz, index)
    return Wacz(package, pages, index)


def _check_datapackage(wacz: zipfile.ZipFile, names: set[str]) -> dict[str, Any]:
    data = wacz.read("datapackage.json")
    package = json.loads(data)
    assert package["profile"] == "data-package"
    assert package["wacz_version"] == "1.1.1"
    assert package["created"].endswith("Z")
    listed = {r["path"]: r for r in package["resources"]}
    assert set(listed) == names - {"datapackage.json", "datapackage-digest.json"}
    for name, resource in listed.items():
        body = wacz.read(name)
        assert resource["bytes"] == len(body), name
        assert resource["hash"] == "sha256:" + hashlib.sha256(body).hexdigest(), name
    digest = json.loads(wacz.read("datapackage-digest.json"))
    assert digest["path"] == "datapackage.json"
    assert digest["hash"] == "sha256:" + hashlib.sha256(data).hexdigest()
    return package  # type: ignore[no-any-return]


def _pages(wacz: zipfile.ZipFile) -> list[dict[str, Any]]:
    lines = wacz.read("pages/pages.jsonl").decode("utf-8").splitlines()
    header = json.loads(lines[0])
    assert header["format"] == "json-pages-1.0"
    pages = [json.loads(line) for line in lines[1:]]
    for page in pages:
        assert isinstance(page["id"], str) and page["id"]
        assert page["url"].startswith(("http://", "https://"))
        assert page["ts"].endswith("Z") and page["ts"][10] == "T"
    assert len({p["id"] for p in pages}) == len(pages)
    return pages


def _index(wacz: zipfile.ZipFile) -> list[tuple[str, str, dict[str, Any]]]:
    blocks = wacz.read("indexes/index.cdx.gz")
    idx = wacz.read("indexes/index.idx").decode().splitlines()
    meta = json.loads(idx[0].split(" ", 2)[2])
    assert idx[0].startswith("!meta 0 ") and meta["filename"] == "index.cdx.gz"
    lines: list[str] = []
    end = 0
    for entry in idx[1:]:
        prefix, fields = entry.split(" {", 1)
        block = json.loads("{" + fields)
        assert block["offset"] == end
        member = blocks[block["offset"] : block["offset"] + block["length"]]
        assert block["digest"] == "sha256:" + hashlib.sha256(member).hexdigest()
        text = gzip.decompress(member).decode()
        assert text.startswith(prefix + " {")
        lines += text.splitlines()
        end += block["length"]
    assert end == len(blocks)
    assert lines == sorted(lines)
    parsed = []
    for line in lines:
        key, stamp, fields = line.split(" ", 2)
        assert len(stamp) == 14 and stamp.isdigit()
        parsed.append((key, stamp, json.loads(fields)))
    return parsed


def _check_records(wacz: zipfile.ZipFile, index: list[tuple[str, str, dict[str, Any]]]) -> None:
    for _, stamp, fields in index:
        with wacz.open("archive/" + fields["filename"]) as warc:
            warc.seek(int(fields["offset"]))
            member = warc.read(int(fields["length"]))
        record = next(iter(ArchiveIterator(_Bytes(member))))
        headers = record.rec_headers
        assert headers.get_header("WARC-Target-URI") == fields["url"]
        date = headers.get_header("WARC-Date")
        assert "".join(c for c in date if c.isdigit())[:14] == stamp
        assert record.rec_type in ("response", "revisit", "resource")
        assert (record.rec_type == "revisit") == (fields["mime"] == "warc/revisit")


class _Bytes:
    """The smallest readable stream warcio takes."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._at = 0

    def read(self, size: int = -1) -> bytes:
        end = len(self._data) if size < 0 else self._at + size
        piece = self._data[self._at : end]
        self._at += len(piece)
        return piece
