"""Reading a crawl's WARC files back (warcio and FastWARC, digests checked) and checking that
its records point at their own responses."""

from __future__ import annotations

import gzip
import io
import sqlite3
import zlib
from pathlib import Path
from typing import Any

import brotli
from fastwarc.warc import ArchiveIterator as FastIterator
from fastwarc.warc import WarcRecordType
from warcio.archiveiterator import ArchiveIterator


def read_dir(directory: Path) -> dict[str, list[Any]]:
    """Every file's records (warcio, digests checked: a bad one raises), each with its
    ``offset``, ``target``, ``status`` and ``truncated``."""
    files = {}
    for path in sorted(directory.iterdir()):
        records = []
        with path.open("rb") as handle:
            iterator = ArchiveIterator(handle, check_digests="raise")
            for record in iterator:
                record.raw_stream.read()
                records.append(
                    {
                        "type": record.rec_type,
                        "offset": iterator.get_record_offset(),
                        "length": iterator.get_record_length(),
                        "target": record.rec_headers.get_header("WARC-Target-URI"),
                        "status": record.http_headers.get_statuscode()
                        if record.rec_type == "response"
                        else None,
                        "truncated": record.rec_headers.get_header("WARC-Truncated"),
                    }
                )
        files[path.name] = records
    return files


def fastwarc_digests_ok(directory: Path) -> bool:
    http = WarcRecordType.response | WarcRecordType.request
    for path in directory.iterdir():
        with path.open("rb") as handle:
            for record in FastIterator(handle, record_types=http, parse_http=False):
                if not record.verify_block_digest():
                    return False
        with path.open("rb") as handle:
            for record in FastIterator(handle, record_types=http):
                if not record.verify_payload_digest():
                    return False
    return True


def seek(directory: Path, record: dict[str, Any]) -> Any:
    with (directory / record["warc_file"]).open("rb") as handle:
        handle.seek(record["warc_offset"])
        member = handle.read(record["warc_length"])
    found = []
    for record in ArchiveIterator(io.BytesIO(member), check_digests="raise"):
        record.body = record.raw_stream.read()  # the payload as stored
        found.append(record)
    [only] = found
    return only


def check_archive(out: Path, records: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """Every record with a response points at its own response record; the rest at none."""
    warc = out / "warc"
    files = read_dir(warc)
    assert fastwarc_digests_ok(warc)
    responses = {
        (name, r["offset"]): r for name, rs in files.items() for r in rs if r["type"] == "response"
    }
    pointed = set()
    for record in records:
        if record["status"] is None:
            assert record["warc_file"] is None, record
            continue
        key = (record["warc_file"], record["warc_offset"])
        assert key not in pointed, "two records share a response"
        pointed.add(key)
        response = responses[key]
        assert response["target"] == record["url"]
        assert response["status"] == str(record["status"])
        assert response["length"] == record["warc_length"]
        found = seek(warc, record)
        assert found.rec_headers.get_header("WARC-Target-URI") == record["url"]
        if response["truncated"] not in (None, "noindex", "noarchive", "not-canonical"):
            assert record["truncated"], record
    # The responses no record points at: robots.txt, and answers that were retried.
    retried = {r["url"] for r in records if r["attempts"] > 1}
    for key in responses.keys() - pointed:
        target = responses[key]["target"]
        assert target.endswith("/robots.txt") or target in retried, target
    # crawl.db holds the same locations
    with sqlite3.connect(out / "crawl.db") as conn:
        rows = conn.execute("SELECT warc_file, warc_offset, warc_length FROM pages ORDER BY id")
        assert list(rows) == [(r["warc_file"], r["warc_offset"], r["warc_length"]) for r in records]
    return files


def payload(directory: Path, record: dict[str, Any]) -> bytes:
    """The body of the response ``record`` points at, its content coding (gzip, br) undone."""
    with (directory / record["warc_file"]).open("rb") as handle:
        handle.seek(record["warc_offset"])
        member = handle.read(record["warc_length"])
    [(coding, body)] = [
        (r.http_headers.get_header("Content-Encoding"), r.raw_stream.read())
        for r in ArchiveIterator(io.BytesIO(member))
    ]
    if coding in ("gzip", "x-gzip"):
        return gzip.decompress(body)
    if coding == "deflate":
        return zlib.decompress(body)
    if coding == "br":  # warcio's own brotli decoder does not run on brotli 1.2
        return bytes(brotli.decompress(body))
    return bytes(body)
