"""What Redis holds is hostile input: malformed queue entries are set aside (never a crash,
never claimed forever), and garbled control values are skipped or one clear error."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
import redis as sync_redis
from redis.asyncio import Redis
from tests.cluster.harness import FAST, WEB_ARGS, output, run, small_web, worker_args
from tests.redis_server import RedisServer

import gossamer.frontier.redis.claims as claims
from gossamer.cli import main
from gossamer.cluster import DEFAULT_JOB
from gossamer.cluster.balancer import KEYS as BALANCE_KEYS
from gossamer.cluster.balancer import load_model, observations
from gossamer.cluster.control import Control, MalformedReply, job_keys, parse_ranges
from gossamer.cluster.jobs import format_status, status, submit
from gossamer.frontier.base import Candidate
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.frontier.redis import RedisFrontier, RedisFrontierConfig, bad_keys, partition_keys
from gossamer.settings import JobSettings
from gossamer.testweb import TestWebServer
from gossamer.urls import Scope

GOOD = "http://a.test/fine"
BAD: list[bytes] = [  # as a partition stores them: host number 1 is http://a.test
    b"garbage",
    b"1|2|3",
    b"1|x|/x",
    b"1|0,0|/x",
    b"1|0,0,99999999999999999999999,,|/x",
    b"1|0,0,0,nan,|/x",
    b"1|0,0,0,inf,|/x",
    b"1|0,0,0,soon,|/x",
    b"1|0,0,0,,high|/x",
    b"1|0,0,0,,nan|/x",
    b"9|0|/x",
    b"1|0|/ x",
    b"1|0|/\x00",
    b"1|0|/\xff",
    "1|0|/\ud800".encode("utf-8", "surrogatepass"),
    b"1|0|/" + b"a" * (2 << 20),
]


async def _queue_raw(redis: Redis, job: str, part: int, entries: list[bytes]) -> None:
    """Entries written behind gossamer's back, counted as queued like add.lua does."""
    keys = partition_keys(job, part)
    if await redis.hsetnx(keys["hosts"], "1", "http://a.test"):  # else: the job's own host 1
        await redis.hset(keys["hosts"], "http://a.test", "1")
    await redis.rpush(keys["queue"], *entries)
    await redis.hincrby(keys["counts"], "queued", len(entries))


async def test_malformed_entries_are_set_aside_and_leave_the_claims(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(claims, "BAD_KEPT", 5)
    redis = Redis.from_url(redis_server.url)
    scope = Scope.for_seeds([], ["test"], max_depth=5)
    frontier = RedisFrontier(
        redis,
        "j",
        scope,
        PolitenessPolicy(),
        config=RedisFrontierConfig(partitions=1, refresh_interval=0.0),
    )
    try:
        await _queue_raw(redis, "j", 0, BAD[:8])
        assert (await frontier.add([Candidate(GOOD)])).added == 1
        await _queue_raw(redis, "j", 0, BAD[8:])
        leased = []
        with caplog.at_level(logging.WARNING, logger="gossamer.frontier.redis"):
            for _ in range(50):
                for lease in await frontier.lease(10):
                    leased.append(lease.url)
                    await frontier.ack(lease, None)
                if await frontier.done():
                    break
        assert leased == [GOOD]
        assert await frontier.done()
        keys = partition_keys("j", 0)
        assert await redis.hlen(keys["claimed"]) == 0
        assert await redis.zcard(keys["deadlines"]) == 0
        counts = await redis.hgetall(keys["counts"])
        assert int(counts[b"queued"]) == int(counts[b"claimed"]) == 0
        assert int(counts[b"finished"]) == 1
        assert frontier.stats().set_aside == len(BAD)
        assert int(await redis.get(bad_keys("j")["count"]) or 0) == len(BAD)
        kept = [json.loads(item) for item in await redis.lrange(bad_keys("j")["entries"], 0, -1)]
        assert len(kept) == 5  # bounded
        assert all(k["partition"] == 0 and k["reason"] for k in kept)
        assert max(len(k["entry"]) for k in kept) <= 8192
        assert sum("set aside a malformed entry" in r.message for r in caplog.records) == len(BAD)
        assert (await Control(redis, "j").totals(1)).set_aside == len(BAD)
    finally:
        await redis.flushall()
        await redis.aclose()


def test_parse_ranges_refuses_garbage_and_huge_ranges() -> None:
    assert parse_ranges("0-2,7") == {0, 1, 2, 7}
    for text in ("a-b", "0-99999999999", "5-2", "0-65536", "-3", "1,,x", "0-1-2"):
        with pytest.raises(ValueError):
            parse_ranges(text)


async def test_garbled_control_values_are_skipped(redis_server: RedisServer) -> None:
    settings = JobSettings(seeds=["http://a.test/"], partitions=8)
    await submit(settings, redis_server.url, DEFAULT_JOB)
    keys = job_keys(DEFAULT_JOB)
    redis = Redis.from_url(redis_server.url)
    try:
        await redis.hset(keys["figures"], b"bad-\xff", b"{}")
        await redis.hset(keys["figures"], "not-an-object", "[1, 2]")
        await redis.hset(keys["figures"], "not-json", b"{\xff")
        weird = {"partitions": {"a": 1}, "pages": "x", "capability": 5, "live": {"pages": []}}
        await redis.hset(keys["figures"], "weird", json.dumps(weird))
        await redis.hset(keys["assignment"], mapping={"w1": "0-99999999999", "w2": "a-b"})
        await redis.hset(keys["assignment"], "w3", "0-3")
        await redis.set(keys["leader"], b"\xffboss")
        await redis.set(BALANCE_KEYS["report"], b"{not json")
        await redis.sadd(keys["wake"] + "w3", "5", "x", "-")
        await redis.set(bad_keys(DEFAULT_JOB)["count"], "lots")
        observed = ['{"n": 3, "seconds": 2.0, "capability": {"cores": "x"}}', "[]", b"\xff",
                    '{"n": 1e400, "seconds": 1, "capability": {}}',
                    '{"n": 3, "seconds": NaN, "capability": {}}']  # fmt: skip
        await redis.rpush(BALANCE_KEYS["observations"], *observed)
        await redis.set(BALANCE_KEYS["model"], '{"kind": "linear", "a": "x"}')
        control = Control(redis, DEFAULT_JOB)
        assert [o.n for o in await observations(control)] == [3]
        assert await load_model(control) is None
        assert await control.assignment() == {"w3": frozenset(range(4))}
        assert await control.owned_by("w1") == (0, frozenset())
        assert await control.woken("w3") == {5}
        state = await status(redis_server.url, DEFAULT_JOB)
        assert [w["name"] for w in state["workers"]] == ["weird"]
        assert state["workers"][0]["partitions"] == state["workers"][0]["pages"] == 0
        assert state["runtime_model"] is None and state["totals"]["set_aside"] == 0
        assert "weird" in format_status(state)
        await redis.set(keys["assignment:version"], "v2")
        with pytest.raises(MalformedReply, match="assignment version"):
            await control.version()
    finally:
        await redis.aclose()


def test_status_of_a_garbled_job_is_one_line(
    redis_server: RedisServer, capsys: pytest.CaptureFixture[str]
) -> None:
    client = sync_redis.Redis.from_url(redis_server.url)
    try:
        client.set(job_keys(DEFAULT_JOB)["job"], b"\xff{")
        assert main(["cluster", "status", "--redis", redis_server.url]) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "not UTF-8" in err, err
        client.set(job_keys(DEFAULT_JOB)["job"], b'{"seeds": 5}')
        assert main(["cluster", "status", "--redis", redis_server.url]) != 0
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "malformed" in err, err
    finally:
        client.close()


@pytest.mark.slow
@pytest.mark.timeout(90)
async def test_a_worker_sets_a_bad_entry_aside_and_finishes(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    url = redis_server.url
    async with TestWebServer(small_web(hosts=2, pages_per_host=5), flaky_failures=0) as web:
        submit_args = ["cluster", "submit", "--redis", url, web.url(0), *FAST, *WEB_ARGS]
        assert await run(tmp_path / "submit.log", *submit_args, "--partitions", "4") == 0
        redis = Redis.from_url(url)
        try:
            await _queue_raw(redis, DEFAULT_JOB, 3, [b"1|0|0|0|nan|http://a.test/"])
        finally:
            await redis.aclose()
        code = await run(tmp_path / "w0.log", *worker_args(url, tmp_path, 0), limit=60)
        log = (tmp_path / "w0.log").read_text()
        assert code == 0, log
        assert "set aside a malformed entry of partition 3" in log and "Traceback" not in log
    stats = json.loads((tmp_path / "w0" / "stats.json").read_text())
    assert stats["set_aside"] == 1 and stats["pages"] >= 5
    code, said, err = await output("cluster", "status", "--redis", url)
    assert code == 0 and "1 malformed entries set aside" in said, (said, err)
