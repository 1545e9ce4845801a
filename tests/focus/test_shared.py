"""What a cluster's workers learn, shared through a real redis-server: one worker's examples
change another's link order; a page judged by one worker trains the link another queued to
it; malformed stream entries are skipped with a warning; the stream stays bounded; an
unreachable Redis only delays the sharing."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator

import msgspec
import numpy as np
import pytest
from redis.asyncio import Redis
from tests.focus.test_learning import Recorder, two_lists
from tests.focus.test_policy import ON, PHRASE, html, judge
from tests.redis_server import RedisServer

from gossamer.focus.config import FocusConfig
from gossamer.focus.learner import DIMENSIONS
from gossamer.focus.policy import FocusPolicy
from gossamer.focus.shared import (
    MAX_ENTRY_BYTES,
    MAX_RECEIVED,
    Learnt,
    SharedLearning,
    decode,
    encode,
    stream_key,
)
from gossamer.focus.topic import Topic

pytestmark = pytest.mark.timeout(60)
CONFIG = FocusConfig(rescore_every=5, share_every=1)


@pytest.fixture(scope="module")
def server() -> Iterator[RedisServer]:
    with RedisServer() as running:
        yield running


@pytest.fixture
async def redis(server: RedisServer) -> AsyncIterator[Redis]:
    client = Redis.from_url(server.url)
    await client.flushall()
    yield client
    await client.aclose()


def worker(redis: Redis, recorder: Recorder | None = None) -> FocusPolicy:
    """One worker's policy sharing through the job ``job``."""
    return FocusPolicy(
        Topic(PHRASE), CONFIG, reprioritize=recorder, shared=SharedLearning(redis, "job")
    )


def neutral_pages(policy: FocusPolicy, host: str, count: int) -> None:
    for i in range(count):
        judge(policy, f"http://{host}/n{i}.html", html("gardening", 70 + i, []))


def lists_by_anchor(good: list[str], bad: list[str]) -> bytes:
    """A page of neutral prose: links to ``good`` called "Chapter", to ``bad`` "Appendix"."""
    items = [f'<li><a href="{u}">Chapter</a></li>' for u in good]
    items += [f'<li><a href="{u}">Appendix</a></li>' for u in bad]
    body = f"<main><p>Contents.</p><ul>{''.join(items)}</ul></main>"
    return f"<html><body>{body}</body></html>".encode()


async def test_examples_learnt_by_one_worker_change_the_others_link_order(redis: Redis) -> None:
    """Worker A learns that "Chapter" links lead to on-topic pages and "Appendix" links do
    not; worker B, which judged none of them, re-scores its own waiting "Chapter" links above
    its "Appendix" links once it applied A's examples."""
    one, recorder = worker(redis), Recorder()
    two = worker(redis, recorder)
    good = [f"http://g{i}.test/p.html" for i in range(8)]
    bad = [f"http://b{i}.test/p.html" for i in range(8)]
    judge(one, "http://a.test/toc.html", lists_by_anchor(good, bad))
    for i in range(8):
        judge(one, good[i], html(ON, 10 + i, []))
        judge(one, bad[i], html("astronomy", 20 + i, []))
    await one.upkeep()
    mine = [f"http://x{i}.test/p.html" for i in range(4)]
    theirs = [f"http://y{i}.test/p.html" for i in range(4)]
    _, first = judge(two, "http://b.test/toc.html", lists_by_anchor(mine, theirs))
    assert first[mine[0]] == first[theirs[0]]
    neutral_pages(two, "b.test", 5)
    await two.upkeep()
    sent = {url: p for batch in recorder.sent for url, p in batch.items()}
    assert two.stats().shared_received > 0 and one.stats().shared_sent > 0
    assert min(sent[u] for u in mine) > max(sent.get(u, first[u]) for u in theirs), sent


async def test_a_page_judged_by_one_worker_trains_the_link_another_queued(redis: Redis) -> None:
    """Worker A queued two lists of links; worker B fetched and judged the first of each
    (on-topic in one list, not in the other). At A's next re-scoring the rest of the on-topic
    list rises above the rest of the other, as if A had judged them itself."""
    recorder = Recorder()
    one, two = worker(redis, recorder), worker(redis)
    good = [f"http://g{i}.test/page.html" for i in range(12)]
    bad = [f"http://b{i}.test/page.html" for i in range(12)]
    _, first = judge(one, "http://site.test/toc.html", two_lists(good, bad))
    for i in range(6):
        judge(two, good[i], html(ON, 10 + i, []))
        judge(two, bad[i], html("astronomy", 20 + i, []))
    await two.upkeep()
    neutral_pages(one, "site.test", 9)
    await one.upkeep()
    sent = {url: p for batch in recorder.sent for url, p in batch.items()}
    assert sent, "no re-scoring reached the frontier"
    assert min(sent[u] for u in good[6:]) > max(sent.get(u, first[u]) for u in bad[6:]), sent
    assert one.stats().waiting == 12  # the six judged by B left A's waiting links


async def test_malformed_entries_are_skipped_with_a_warning(
    redis: Redis, caplog: pytest.LogCaptureFixture
) -> None:
    key = stream_key("job")
    good = encode(Learnt([("http://a.test/x", True)], [(np.array([1, 2], np.int32), 1.0)]))[0]
    await redis.xadd(key, {b"s": b"other", b"b": b"\x93garbage"})
    await redis.xadd(key, {b"s": b"other"})
    out_of_range = encode(Learnt([], [(np.array([DIMENSIONS + 5], np.int32), 1.0)]))[0]
    await redis.xadd(key, {b"s": b"other", b"b": out_of_range})
    await redis.xadd(key, {b"s": b"other", b"b": good})
    sharing = SharedLearning(redis, "job")
    with caplog.at_level(logging.WARNING, logger="gossamer.focus.shared"):
        found = await sharing.exchange(Learnt())
    assert [learnt.judged for learnt in found] == [[("http://a.test/x", True)]]
    assert sharing.stats().bad == 3
    warnings = [r.getMessage() for r in caplog.records if "malformed entry" in r.getMessage()]
    assert len(warnings) == 3, warnings
    assert any("out of range" in w for w in warnings)


async def test_entries_of_many_short_urls_are_read_a_bounded_number_an_exchange(
    redis: Redis,
) -> None:
    """Entries of the largest size taken, each of 18,000 judged URLs as short as ``a://``
    (valid, not what a worker writes): an exchange reads ``MAX_RECEIVED`` of them (one entry
    more at most) and the next goes on from there (before: the 1,000 entries an exchange
    reads, 18 million URLs, 22 s and 2.3 GB)."""
    key = stream_key("job")
    entry = msgspec.msgpack.encode([[["a://", True]] * 18_000, b"", b"", b""])
    assert len(entry) <= 4 * MAX_ENTRY_BYTES
    entries = 2 * MAX_RECEIVED // 18_000 + 2
    for _ in range(entries):
        await redis.xadd(key, {b"s": b"other", b"b": entry})
    sharing = SharedLearning(redis, "job")
    first = sum(len(learnt) for learnt in await sharing.exchange(Learnt()))
    assert MAX_RECEIVED <= first < MAX_RECEIVED + 18_000
    second = sum(len(learnt) for learnt in await sharing.exchange(Learnt()))
    assert MAX_RECEIVED <= second < MAX_RECEIVED + 18_000
    third = sum(len(learnt) for learnt in await sharing.exchange(Learnt()))
    assert first + second + third == entries * 18_000
    assert sharing.stats().received == entries * 18_000


async def test_the_stream_and_its_entries_stay_bounded(redis: Redis) -> None:
    """A batch larger than an entry is split; the stream is trimmed near its cap."""
    sharing = SharedLearning(redis, "job", max_entries=20)
    features = np.arange(1000, dtype=np.int32)
    for _ in range(10):
        await sharing.exchange(Learnt([], [(features, 1.0)] * 40))  # 160 KB each
    key = stream_key("job")
    assert await redis.xlen(key) <= 20 + 100  # MAXLEN ~ trims whole nodes of 100 entries
    entries = await redis.xrange(key, count=500)
    assert len(entries) > 10
    assert all(len(fields[b"b"]) <= MAX_ENTRY_BYTES + 64 for _, fields in entries)
    reader = SharedLearning(redis, "job")
    found = await reader.exchange(Learnt())
    examples = [e for learnt in found for e in learnt.examples]
    assert examples and all((f == features).all() and label == 1.0 for f, label in examples)


def test_batches_round_trip() -> None:
    learnt = Learnt(
        [("http://a.test/", True), ("http://b.test/", False)],
        [(np.array([3, 9, 100], np.int32), 1.0), (np.array([7], np.int32), 0.0)],
    )
    (blob,) = encode(learnt)
    back = decode(blob)
    assert back.judged == learnt.judged
    assert [(f.tolist(), label) for f, label in back.examples] == [([3, 9, 100], 1.0), ([7], 0.0)]
    with pytest.raises(ValueError):
        decode(b"not msgpack")


def test_a_seed_s_password_stays_out_of_the_stream() -> None:
    """A page of a seed with a password is shared with the password masked, one of a seed
    with a user name alone (a token, maybe) with the user name masked."""
    judged = [("http://alice:pw-91@a.test/x", True), ("http://T0KEN@b.test/p@q", False)]
    (blob,) = encode(Learnt(judged, []))
    assert b"pw-91" not in blob and b"T0KEN" not in blob
    shown = [("http://alice:***@a.test/x", True), ("http://***@b.test/p@q", False)]
    assert decode(blob).judged == shown


async def test_an_unreachable_redis_delays_the_sharing(
    server: RedisServer, redis: Redis, caplog: pytest.LogCaptureFixture
) -> None:
    """While Redis refuses the worker (its user disabled), the exchange warns and keeps what
    it had to send; once Redis takes it again, what waited is sent."""
    rights = {"passwords": ["+secret"], "keys": ["*"], "commands": ["+@all"]}
    await redis.acl_setuser("worker", enabled=False, **rights)
    port = redis.connection_pool.connection_kwargs["port"]
    client = Redis(host="127.0.0.1", port=port, username="worker", password="secret")
    try:
        sharing = SharedLearning(client, "job")
        with caplog.at_level(logging.WARNING, logger="gossamer.focus.shared"):
            assert await sharing.exchange(Learnt([("http://a.test/", True)])) == []
        assert any("sharing what was learnt failed" in r.getMessage() for r in caplog.records)
        await redis.acl_setuser("worker", enabled=True, **rights)
        await sharing.exchange(Learnt([("http://b.test/", False)]))
    finally:
        await client.aclose()
        await redis.acl_deluser("worker")
    found = await SharedLearning(redis, "job").exchange(Learnt())
    assert [j for learnt in found for j in learnt.judged] == [
        ("http://a.test/", True),
        ("http://b.test/", False),
    ]
