"""``gossamer crawl --warc`` of the generated test web, read back with warcio and FastWARC."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.warc_check import check_archive, seek

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
        seed = server.url(0)
        args = [*ARGS, "--sitemaps", "off"]
        code, output = await run_crawl(tmp_path, server, [seed, *args, "--max-pages", "8"])
        assert code == 0, output
        first = {p.name: p.stat().st_size for p in warc.iterdir()}
        # However many records the first run wrote, in whatever order (with --max-pages 8 it
        # has written a ninth, a robots-blocked URL's, among its pages), the resumed run
        # writes the rest, to files of its own.
        before = len(load_records(tmp_path))
        code, output = await run_crawl(tmp_path, server, ["--resume", *args])
        assert code == 0, output
        reachable = web.reachable([seed], port=server.port)
    after = {p.name: p.stat().st_size for p in warc.iterdir()}
    assert {name: after[name] for name in first} == first  # never appended to
    new = sorted(after.keys() - first.keys())
    assert new and min(int(n[-13:-8]) for n in new) > max(int(n[-13:-8]) for n in first)
    records = load_records(tmp_path)
    urls = [r["url"] for r in records]
    assert 0 < before < len(records)
    assert len(urls) == len(set(urls)), "a URL recorded by both runs"
    assert set(urls) >= reachable, "a URL neither run recorded"
    check_archive(tmp_path / "out", records)
    assert {r["warc_file"] for r in records[:before] if r["warc_file"]} <= set(first)
    assert {r["warc_file"] for r in records[before:] if r["warc_file"]} <= set(new)
