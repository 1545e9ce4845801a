"""`gossamer cluster submit --rules`: the rule documents travel with the job, every worker
reads the same version (checked by its digest), and each page's items are kept once across
the workers. Subprocesses against a real redis-server and the in-process test web."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis
from tests.cluster.harness import (
    FAST,
    WEB_ARGS,
    cluster_wait,
    output,
    read_records,
    run,
    small_web,
    start,
    wait_alive,
    worker_args,
    worker_logs,
)
from tests.redis_server import RedisServer

from gossamer.cluster import DEFAULT_JOB
from gossamer.cluster.control import Control
from gossamer.testweb import TestWebServer

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]

RULES = """
[[rule]]
name = "headings"
url = '.'

[[rule.field]]
name = "heading"
css = "h1"

[[rule.field]]
name = "links"
css = "p a"
attr = "href"
multiple = true
process = ["absolute_url"]

[[rule.link]]                 # the links in the text only: no <area>, no <link rel=next>
css = "p"
"""


def _items(out: Path) -> list[dict[str, Any]]:
    path = out / "items.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def _keys(items: list[dict[str, Any]]) -> Counter[str]:
    return Counter(json.dumps([i["url"], i["rule"], i["fields"]], sort_keys=True) for i in items)


async def test_three_workers_keep_each_page_items_once(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    rules = tmp_path / "rules" / "headings.toml"
    rules.parent.mkdir()
    rules.write_text(RULES, "utf-8")
    args = [*FAST, "--concurrency", "8", "--rules", str(rules.parent)]
    url = redis_server.url
    async with TestWebServer(small_web(), flaky_failures=0) as server:
        seed = server.url(0)
        reference = tmp_path / "reference"
        code = await run(tmp_path / "reference.log", "crawl", seed, *args, *WEB_ARGS,
                         "--out", str(reference))  # fmt: skip
        assert code == 0, (tmp_path / "reference.log").read_text()
        workers = [
            await start(tmp_path / f"w{i}.log", *worker_args(url, tmp_path, i)) for i in range(3)
        ]
        await wait_alive(url, 3)
        submit = ["cluster", "submit", "--redis", url, seed, *args, *WEB_ARGS, "--partitions", "64"]
        assert await run(tmp_path / "submit.log", *submit) == 0
        rules.unlink()  # the workers read the job's copy, not the file
        await cluster_wait(url, 45)
        codes = await asyncio.wait_for(asyncio.gather(*(w.wait() for w in workers)), 30)
        assert codes == [0, 0, 0], worker_logs(tmp_path, 3)

    expected = _keys(_items(reference))
    assert len(expected) > 50
    found = [_items(tmp_path / f"w{i}") for i in range(3)]
    assert sum(bool(items) for items in found) >= 2, "one worker crawled everything"
    assert _keys([i for items in found for i in items]) == expected
    records = [r for i in range(3) for r in read_records(tmp_path / f"w{i}")]
    assert {r["url"] for r in records} == {r["url"] for r in read_records(reference)}
    pages = [r for r in records if r["kind"] == "page"]  # not the hosts' sitemaps
    assert all(r["rule"] == "headings" for r in pages if r["status"] == 200)


async def test_a_worker_refuses_rules_that_do_not_match_their_digest(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    rules = tmp_path / "headings.toml"
    rules.write_text(RULES, "utf-8")
    url = redis_server.url
    code, _, err = await output("cluster", "submit", "--redis", url, "http://site0.test:1/",
                                *WEB_ARGS, "--rules", str(rules))  # fmt: skip
    assert code == 0, err
    client = Redis.from_url(url)
    control = Control(client, DEFAULT_JOB)
    try:
        job = json.loads(await control.load_job() or "{}")
        shipped = job["shipped_rules"]
        assert [d["name"] for d in shipped["documents"]] == ["headings.toml"]
        assert shipped["documents"][0]["text"] == RULES and job["rules"] == []
        shipped["documents"][0]["text"] = RULES.replace('css = "h1"', 'css = "h2"')
        await control.store_job(json.dumps(job))
    finally:
        await client.aclose()
    code, _, err = await output(*worker_args(url, tmp_path, 0))
    assert code == 2, err
    assert "do not match their digest" in err and err.count("\n") == 1, err
    assert not (tmp_path / "w0" / "crawl.db").exists()


async def test_submit_refuses_bad_rules_with_every_problem(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    rules = tmp_path / "bad.toml"
    rules.write_text(RULES.replace('css = "h1"', 'css = "h1[["').replace("'.'", "'(a+)+'"))
    submit = ["cluster", "submit", "--redis", redis_server.url, "http://site0.test:1/"]
    code, _, err = await output(*submit, *WEB_ARGS, "--rules", str(rules))
    assert code == 2
    assert err.startswith("gossamer: invalid setting 'rules':\n")
    assert "bad.toml: rule 'headings': field 'heading'" in err
