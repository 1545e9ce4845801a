"""`gossamer crawl --rules`: link rules choose what is followed, rule errors are recorded and
the crawl goes on, items land in items.jsonl and crawl.db once each, `kill -9` + `--resume`
included. Real crawls of the test web, the CLI as a subprocess."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from gossamer.testweb import TestWebServer, generate

from .harness import load_records, run_crawl, start_crawl, wait_for_records
from .test_resume_and_stop import ARGS as SLOW_ARGS
from .test_resume_and_stop import _web as resume_web

pytestmark = [pytest.mark.slow, pytest.mark.timeout(150)]

ROOT = Path(__file__).parents[2]
FAST = ["--robots-retry", "0.3", "--retry-backoff", "0.05", "--concurrency", "16"]
FAST += ["--sitemaps", "off"]  # records of pages only: the rules read pages

BLOG_ONLY = """
[[rule]]
name = "blog-only"
url = '.'

[[rule.field]]
name = "title"
css = "h1"
required = true

[[rule.link]]
allow = ['/blog/']
"""

FAILING = """
[[rule]]
name = "pages"
url = '^http://site\\d\\.test:\\d+/'

[[rule.field]]
name = "number"
css = "h1"
process = [{regex = '#(\\d+)\\)', group = 1}, "int"]

[[rule.field]]
name = "not_a_number"
css = "h1"
process = ["int"]

[[rule.field]]
name = "odd"
css = "h1"
process = [{regex = '#(\\d+)\\)', group = 1}, "int", {call = "odd_only"}]

[[rule.field]]
name = "next"
css = 'link[rel="next"]'
attr = "href"
required = true
"""

FUNCTIONS = """
def odd_only(value):
    if value is not None and value % 2 == 0:
        raise ValueError("an even page")
    return value
"""

ITEMS = """
[[rule]]
name = "page"
url = '.'

[rule.record]
css = "p"

[[rule.field]]
name = "words"
css = "p"
process = [{regex = '^(\\S+ \\S+)', group = 1}]

[[rule.field]]
name = "links"
css = "a"
attr = "href"
multiple = true
process = ["absolute_url"]
"""


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, "utf-8")
    return path


def _items(tmp_path: Path) -> list[dict[str, Any]]:
    text = (tmp_path / "out" / "items.jsonl").read_text("utf-8")
    return [json.loads(line) for line in text.splitlines()]


def _db_items(tmp_path: Path) -> list[dict[str, Any]]:
    """crawl.db's items, as items.jsonl's lines (in order), each with the URL of its page."""
    with sqlite3.connect(tmp_path / "out" / "crawl.db") as conn:
        rows = conn.execute(
            "SELECT i.url, i.rule, i.fetched_at, i.fields, p.url, i.idx "
            "FROM items i JOIN pages p ON p.id = i.page ORDER BY i.id"
        ).fetchall()
    found = []
    for url, rule, fetched_at, fields, page_url, index in rows:
        assert page_url == url
        found.append({"url": url, "rule": rule, "fetched_at": fetched_at,
                      "fields": json.loads(fields), "index": index})  # fmt: skip
    return found


def _assert_items_once(tmp_path: Path) -> list[dict[str, Any]]:
    """items.jsonl and crawl.db hold the same items, each page's once, as its record counts."""
    records = load_records(tmp_path)
    urls = [r["url"] for r in records]
    assert len(urls) == len(set(urls))
    items = _items(tmp_path)
    stored = _db_items(tmp_path)
    assert [{k: v for k, v in i.items() if k != "index"} for i in stored] == items
    per_page = Counter(i["url"] for i in items)
    assert per_page == Counter({r["url"]: r["items"] for r in records if r["items"]})
    for url in per_page:  # each page's items once, in their order
        assert [i["index"] for i in stored if i["url"] == url] == list(range(per_page[url]))
    return items


async def test_link_rules_change_what_the_crawl_follows(tmp_path: Path) -> None:
    rules = _write(tmp_path, "blog.toml", BLOG_ONLY)
    web = generate(3, hosts=3, pages_per_host=40, specials=(), crawl_delay=None)
    async with TestWebServer(web) as server:
        seed = server.url(0)
        (tmp_path / "plain").mkdir()
        code, log = await run_crawl(tmp_path / "plain", server, [seed, *FAST])
        assert code == 0, log
        code, log = await run_crawl(tmp_path, server, [seed, *FAST, "--rules", str(rules)])
        assert code == 0, log
    plain = {r["url"] for r in load_records(tmp_path / "plain") if r["status"] == 200}
    records = load_records(tmp_path)
    ruled = {r["url"] for r in records if r["status"] == 200}
    assert any("/blog/" not in u for u in plain - {seed})
    assert ruled - {seed}, "no blog page crawled"
    assert all("/blog/" in u for u in ruled - {seed}), sorted(ruled)[:5]
    # Every blog page the plain crawl reached through blog pages is reached again.
    assert ruled < plain
    assert all(r["rule"] == "blog-only" for r in records if r["status"] == 200)
    stats = json.loads((tmp_path / "out" / "stats.json").read_text())
    assert stats["rule_pages"] == len(ruled)
    assert stats["items"] == len(_items(tmp_path)) == len(ruled)
    _assert_items_once(tmp_path)


async def test_failing_fields_are_recorded_and_the_crawl_goes_on(tmp_path: Path) -> None:
    rules = _write(tmp_path, "failing.toml", FAILING)
    _write(tmp_path, "funcs.py", FUNCTIONS)
    web = generate(4, hosts=2, pages_per_host=30, specials=(), crawl_delay=None)
    async with TestWebServer(web) as server:
        seed = server.url(0)
        (tmp_path / "plain").mkdir()
        code, log = await run_crawl(tmp_path / "plain", server, [seed, *FAST])
        assert code == 0, log
        args = [seed, *FAST, "--rules", str(rules),
                "--rule-functions", f"odd_only={tmp_path / 'funcs.py'}:odd_only"]  # fmt: skip
        code, log = await run_crawl(tmp_path, server, args)
    assert code == 0, log
    plain = {r["url"] for r in load_records(tmp_path / "plain")}
    records = load_records(tmp_path)
    assert {r["url"] for r in records} == plain, "the rule's errors changed the crawl"
    ok = [r for r in records if r["status"] == 200]
    assert all(r["rule"] == "pages" and r["error"] is None for r in ok)
    assert all(any("not_a_number" in e for e in r["rule_errors"]) for r in ok)
    assert any(any("odd_only' raised ValueError" in e for e in r["rule_errors"]) for r in ok)
    dropped = [r for r in ok if any("item dropped" in e for e in r["rule_errors"])]
    kept = [r for r in ok if r["items"]]
    assert dropped and kept and len(dropped) + len(kept) == len(ok)
    items = _assert_items_once(tmp_path)
    assert all(i["fields"]["not_a_number"] is None for i in items)
    assert all(i["fields"]["next"] for i in items)
    odd = [i["fields"]["odd"] for i in items if i["fields"]["number"] % 2]
    assert odd and all(n % 2 for n in odd)
    stats = json.loads((tmp_path / "out" / "stats.json").read_text())
    assert stats["rule_pages"] == len(ok)
    assert stats["items"] == len(kept) and stats["items_dropped"] == len(dropped)
    assert stats["rule_errors"] == sum(len(r["rule_errors"]) for r in ok)


async def test_kill_9_then_resume_keeps_each_page_items_once(tmp_path: Path) -> None:
    rules = _write(tmp_path, "items.toml", ITEMS)
    args = [*SLOW_ARGS, "--rules", str(rules)]
    async with TestWebServer(resume_web()) as server:
        proc = await start_crawl(tmp_path, server, [server.url(0), *args])
        await wait_for_records(tmp_path, 60)
        proc.send_signal(signal.SIGKILL)
        await proc.wait()
        records = load_records(tmp_path)
        # As if the kill had come while items.jsonl was written: a torn last line, and the
        # items of the last checkpoint missing.
        path = tmp_path / "out" / "items.jsonl"
        lines = path.read_bytes().splitlines(keepends=True)
        assert len(lines) > 20
        path.write_bytes(b"".join(lines[: len(lines) // 2]) + lines[len(lines) // 2][:9])

        code, output = await run_crawl(tmp_path, server, ["--resume", *args])
        assert code == 0, output
    after = load_records(tmp_path)
    assert len(after) > len(records)
    items = _assert_items_once(tmp_path)
    assert len(items) > len(lines)
    stats = json.loads((tmp_path / "out" / "stats.json").read_text())
    assert stats["items"] == len(items)
    assert stats["rule_pages"] == sum(r["rule"] is not None for r in after)


async def test_bad_rules_fail_before_anything_is_written(tmp_path: Path) -> None:
    rules = _write(tmp_path, "bad.toml", BLOG_ONLY.replace('css = "h1"', 'css = "h1[["'))
    async with TestWebServer(generate(1, hosts=1, pages_per_host=3, specials=())) as server:
        code, log = await run_crawl(tmp_path, server, [server.url(0), "--rules", str(rules)])
    assert code == 2
    assert "invalid setting 'rules':" in log
    assert "bad.toml: rule 'blog-only': field 'title'" in log
    assert not (tmp_path / "out").exists()


def test_the_example_rules_pass_their_samples() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "gossamer.cli", "rules", "test", str(ROOT / "examples" / "rules")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "3 samples passed, 0 failed" in proc.stdout


async def test_the_example_rules_crawl_the_demo_web(tmp_path: Path) -> None:
    web = generate(1, hosts=6, pages_per_host=60, crawl_delay=None, specials=())
    rules = ROOT / "examples" / "rules"
    async with TestWebServer(web) as server:
        code, log = await run_crawl(tmp_path, server, [server.url(0), *FAST, "--rules", str(rules)])
    assert code == 0, log
    records = load_records(tmp_path)
    assert {r["rule"] for r in records if r["status"] == 200} == {"home", "page"}
    assert not any(r["rule_errors"] for r in records)
    items = _assert_items_once(tmp_path)
    pages = [i for i in items if i["rule"] == "page"]
    assert pages and all(i["fields"]["lang"] == "en" for i in pages)
