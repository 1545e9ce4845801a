"""``gossamer crawl --warc`` of the generated test web, read back with warcio and FastWARC."""

from __future__ import annotations

import io
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from fastwarc.warc import ArchiveIterator as FastIterator
from fastwarc.warc import WarcRecordType
from warcio.archiveiterator import ArchiveIterator

from gossamer.testweb import QUICK_SPECIALS, TestWebServer, Web, generate

from .harness import load_records, run_crawl

pytestmark = [pytest.mark.slow, pytest.mark.timeout(150)]

ARGS = [
    "--warc",
    "--warc-max-bytes",
    "100000",
    "--max-body-bytes",
    "60000",
    "--robots-retry",
    "0.3",
    "--retry-backoff",
    "0.05",
    "--max-retry-after",
    "2",
    "--concurrency",
    "8",
]


def _web() -> Web:
    return generate(
        5, hosts=3, pages_per_host=20, crawl_delay=0.05, specials=QUICK_SPECIALS | {"huge"}
    )


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
        if response["truncated"] is not None:
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


async def test_warc_crawl_reads_back_one_to_one(tmp_path: Path) -> None:
    async with TestWebServer(_web(), flaky_failures=1) as server:
        code, output = await run_crawl(tmp_path, server, [server.url(0), *ARGS])
    assert code == 0, output
    records = load_records(tmp_path)
    files = check_archive(tmp_path / "out", records)
    assert len(files) > 3  # rotated at 100 kB
    for records_of_file in files.values():
        assert records_of_file[0]["type"] == "warcinfo"
        assert [r["type"] for r in records_of_file[1:]] == ["response", "request"] * (
            len(records_of_file) // 2
        )
    by_path = {r["url"].split("/", 3)[3]: r for r in records}
    huge = seek(tmp_path / "out" / "warc", by_path["huge"])
    assert huge.rec_headers.get_header("WARC-Truncated") == "length"
    gz = seek(tmp_path / "out" / "warc", by_path["encoded/gzip"])
    assert gz.http_headers.get_header("Content-Encoding") == "gzip"
    assert gz.body[:2] == b"\x1f\x8b"  # stored compressed, as received
    redirect = seek(tmp_path / "out" / "warc", by_path["redirect/301"])
    assert redirect.http_headers.get_statuscode() == "301"
    assert any(str(r["target"]).endswith("/robots.txt") for rs in files.values() for r in rs)


async def test_resume_opens_a_new_warc_file(tmp_path: Path) -> None:
    web = generate(9, hosts=2, pages_per_host=20, crawl_delay=0.02, specials=())
    warc = tmp_path / "out" / "warc"
    async with TestWebServer(web) as server:
        code, output = await run_crawl(tmp_path, server, [server.url(0), *ARGS, "--max-pages", "8"])
        assert code == 0, output
        first = {p.name: p.stat().st_size for p in warc.iterdir()}
        code, output = await run_crawl(tmp_path, server, ["--resume", *ARGS])
        assert code == 0, output
    after = {p.name: p.stat().st_size for p in warc.iterdir()}
    assert {name: after[name] for name in first} == first  # never appended to
    new = sorted(after.keys() - first.keys())
    assert new and min(int(n[-13:-8]) for n in new) > max(int(n[-13:-8]) for n in first)
    records = load_records(tmp_path)
    assert len(records) > 8
    check_archive(tmp_path / "out", records)
    assert {r["warc_file"] for r in records[8:] if r["warc_file"]} <= set(new)
