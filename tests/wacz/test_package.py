"""WACZ packaging of crawl directories written by gossamer's WARC writer: the hard cases
(revisit, withheld noindex page, odd Unicode title, torn pages.jsonl line, no WARC, two
crawls merged, a huge record), each WACZ read back by the spec reader in ``reader``."""

from __future__ import annotations

import gzip
import random
import tracemalloc
import zipfile
from pathlib import Path

import pytest

from gossamer.cli import main
from gossamer.errors import CommandError
from gossamer.sinks.warc import WarcWriter
from gossamer.wacz import write_wacz
from gossamer.wacz.index import SortedLines

from .archives import ORIGIN, T0, TITLE, _Fetch, exchange, write_crawl
from .reader import read_wacz


async def test_hard_cases(tmp_path: Path) -> None:
    await write_crawl(tmp_path / "out")
    summary = write_wacz([tmp_path / "out"], tmp_path / "crawl.wacz")
    wacz = read_wacz(tmp_path / "crawl.wacz")
    assert [(p["url"], p.get("title")) for p in wacz.pages] == [
        (ORIGIN + "/", "Home"),
        (ORIGIN + "/odd", TITLE.replace("\ud800", "\ufffd")),
        (ORIGIN + "/", "Home"),  # the revisit: the page as it was a minute later
    ]
    assert wacz.pages[0]["ts"] == "2027-01-15T08:00:00.250000Z"
    assert wacz.pages[2]["ts"] == "2027-01-15T08:01:00.250000Z"
    indexed = {(f["url"].removeprefix(ORIGIN), f["mime"]) for _, _, f in wacz.index}
    assert indexed == {
        ("/", "text/html"),
        ("/", "warc/revisit"),
        ("/odd", "text/html"),
        ("/old", "text/html"),
        ("/logo.png", "image/png"),
    }  # not /secret: its payload was withheld (noindex)
    keys = {key for key, _, _ in wacz.index}
    assert keys == {"test,site0:8000)/", "test,site0:8000)/odd", "test,site0:8000)/old"} | {
        "test,site0:8000)/logo.png"
    }
    assert (summary.captures, summary.revisits, summary.pages, summary.withheld) == (5, 1, 3, 1)
    assert wacz.datapackage["mainPageURL"] == ORIGIN + "/"


def test_no_warc_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "out").mkdir()
    with pytest.raises(CommandError, match="no WARC files"):
        write_wacz([tmp_path / "out"], tmp_path / "crawl.wacz")
    assert main(["wacz", str(tmp_path / "out")]) == 1
    assert "no WARC files in" in capsys.readouterr().err
    assert not list(tmp_path.rglob("*.wacz*"))  # nothing half-written left behind


async def test_two_crawls_merged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    await write_crawl(one)
    await write_crawl(two)  # the same file names: renamed inside the WACZ
    assert main(["wacz", str(one), str(two)]) == 1
    assert "give --output" in capsys.readouterr().err
    assert main(["wacz", str(one), str(two), "-o", str(tmp_path / "job.wacz")]) == 0
    assert "10 captures (2 revisits) from 2 WARC file(s), 6 pages" in capsys.readouterr().out
    wacz = read_wacz(tmp_path / "job.wacz")
    files = {f["filename"] for _, _, f in wacz.index}
    name = next((one / "warc").iterdir()).name
    assert files == {f"1-{name}", f"2-{name}"}
    assert len(wacz.pages) == 6


async def test_packaging_a_huge_record_keeps_memory_bounded(tmp_path: Path) -> None:
    out = tmp_path / "out"
    writer = WarcWriter(out / "warc", clock=lambda: T0)
    body = random.Random(1).randbytes(24 << 20)  # incompressible: 24 MB in the WARC too
    await writer.write(_Fetch(ORIGIN + "/big", T0, exchange("/big", body, kind="video/mp4")))
    writer.close()
    del body
    tracemalloc.start()
    try:
        write_wacz([out], tmp_path / "big.wacz")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20, peak
    assert read_wacz(tmp_path / "big.wacz").index[0][2]["mime"] == "video/mp4"


def test_index_lines_sorted_on_disk_past_the_run(tmp_path: Path) -> None:
    lines = [f"test,site0)/{n:03d} 20270115080000 {{}}\n" for n in range(50)]
    shuffled = random.Random(2).sample(lines, len(lines))
    sorter = SortedLines(tmp_path, run=7)
    sorter.add(shuffled)
    assert len(list(tmp_path.iterdir())) == 7  # 49 lines in runs on disk, one in memory
    assert list(sorter.merged()) == lines


async def test_a_torn_last_record_is_left_out(tmp_path: Path) -> None:
    out = tmp_path / "out"
    revisit = (await write_crawl(out))[-1]
    warc = next((out / "warc").iterdir())
    with warc.open("r+b") as torn:  # a crash while the revisit record was written
        torn.truncate(revisit["warc_offset"] + revisit["warc_length"] // 2)
    summary = write_wacz([out], tmp_path / "torn.wacz")
    assert summary.torn == (warc.name,)
    assert (summary.captures, summary.revisits) == (4, 0)
    wacz = read_wacz(tmp_path / "torn.wacz")  # the file is packaged whole, torn tail and all
    assert "warc/revisit" not in {f["mime"] for _, _, f in wacz.index}
    assert len(wacz.pages) == 2  # nor is the page whose capture was torn


async def test_a_symlink_at_a_temporary_name_is_not_written_through(tmp_path: Path) -> None:
    out, outside = tmp_path / "out", tmp_path / "outside"
    await write_crawl(out)
    outside.mkdir()
    (outside / "victim.txt").write_text("KEEPME")
    for planted in ("crawl.wacz.part", ".crawl.wacz.part"):
        (out / planted).symlink_to(outside / "victim.txt")
    assert main(["wacz", str(out), "--quiet"]) == 0
    assert (outside / "victim.txt").read_text() == "KEEPME"
    assert read_wacz(out / "crawl.wacz").pages
    assert (out / "crawl.wacz").stat().st_mode & 0o777 == 0o644
    assert sorted(p.name for p in out.iterdir() if "part" in p.name) == [
        ".crawl.wacz.part",
        "crawl.wacz.part",
    ]  # only the planted links: no temporary file left


async def test_symlinked_warc_files_are_not_packaged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    out, outside = tmp_path / "out", tmp_path / "outside"
    await write_crawl(out)
    await write_crawl(outside)
    private = next((outside / "warc").iterdir())
    (out / "warc" / "zz.warc.gz").symlink_to(private)
    (out / "warc" / "pw.warc.gz").symlink_to("/etc/passwd")
    summary = write_wacz([out], tmp_path / "crawl.wacz")
    names = {f["filename"] for _, _, f in read_wacz(tmp_path / "crawl.wacz").index}
    assert "zz.warc.gz" not in names and summary.warc_files == 1
    assert "zz.warc.gz is not a regular file" in caplog.text
    assert "pw.warc.gz is not a regular file" in caplog.text
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "warc").symlink_to(outside / "warc", target_is_directory=True)
    with pytest.raises(CommandError, match="no WARC files"):
        write_wacz([linked], tmp_path / "linked.wacz")
    assert "warc is a symlink" in caplog.text


async def test_entry_names_keep_only_safe_characters(tmp_path: Path) -> None:
    out = tmp_path / "out"
    await write_crawl(out)
    warc = next((out / "warc").iterdir())
    odd_names = ("..\\..\\evil.warc.gz", "C:evil.warc.gz", "a\nb.warc.gz", "a b.warc.gz")
    for odd in (*odd_names, "z\u200bw.warc.gz"):
        (out / "warc" / odd).write_bytes(warc.read_bytes())
    write_wacz([out], tmp_path / "crawl.wacz")
    with zipfile.ZipFile(tmp_path / "crawl.wacz") as wacz:
        archived = sorted(n.removeprefix("archive/") for n in wacz.namelist() if "archive/" in n)
    safe = [".._.._evil.warc.gz", "C_evil.warc.gz", "1-a_b.warc.gz", "1-1-a_b.warc.gz"]
    assert archived == sorted([warc.name, *safe, "z_w.warc.gz"])


_BAD_LENGTH = gzip.compress(
    b"WARC/1.1\r\nWARC-Type: response\r\nWARC-Target-URI: http://x/\r\n"
    b"WARC-Date: 2027-01-01T00:00:00Z\r\nContent-Length: -5\r\n\r\nabc\r\n\r\n"
)


@pytest.mark.parametrize(
    ("tail", "whole"),
    [
        (random.Random(2).randbytes(3000), True),  # garbage after the records
        (gzip.compress(random.Random(3).randbytes(3000)), True),  # a member not a WARC record
        (_BAD_LENGTH, True),
        (b"hello world\n" * 100, False),  # not a WARC file at all
    ],
)
async def test_a_corrupt_warc_is_indexed_up_to_its_bad_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], tail: bytes, whole: bool
) -> None:
    out = tmp_path / "out"
    await write_crawl(out)
    warc = next((out / "warc").iterdir())
    warc.write_bytes((warc.read_bytes() if whole else b"") + tail)
    assert main(["wacz", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"{warc.name}: torn or corrupt, indexed up to its last readable record" in printed
    wacz = read_wacz(out / "crawl.wacz")
    assert len(wacz.index) == (5 if whole else 0)
    assert len(wacz.pages) == (3 if whole else 0)


async def test_an_output_that_cannot_be_written_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    await write_crawl(out)
    assert main(["wacz", str(out), "--output", str(out)]) == 2
    assert (
        capsys.readouterr()
        .err.strip()
        .endswith("is a directory: --output names the WACZ file to write")
    )
    (tmp_path / "file").write_text("")
    assert main(["wacz", str(out), "--output", str(tmp_path / "file" / "x.wacz")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot write" in err
