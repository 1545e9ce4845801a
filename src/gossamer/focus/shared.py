"""What a cluster's workers learn, shared through the job's Redis, so that every worker scores
links with the same knowledge.

Each worker appends what it learnt since its last exchange to one stream of the job and reads
what the others appended, before it scores the links waiting in its frontier again::

    gs:{J}:focus:learnt   STREAM   entries {s: sender, b: batch}; MAXLEN ~ ``max_entries``

A batch (msgpack, at most :data:`MAX_ENTRY_BYTES`; a larger one is split) holds

* the pages the worker judged: URL (its user info masked as :mod:`gossamer.redact` masks it:
  ``user:***@``, a user name alone ``***@``; a worker that queued such a link learns nothing of
  its page) and whether it was on-topic. A
  worker that queued a link to one of them learns from it as from a page it judged itself (a
  link found by one worker is often fetched by another, whose partition holds its host): the
  link's features become a training example, its path counts in the places where on-topic pages
  live, and links to it are known;
* the link scorer's training examples: the link's hashed feature indices (``u32``, below
  :data:`~gossamer.focus.learner.DIMENSIONS`) and its label (a byte, 0..255 for 0..1).

The sender is a random id drawn per process, so a worker restarted under its name applies
what it sent before its restart too. A new worker reads the stream from its start (what the
cap kept). An entry that does not decode, or holds an index out of range, a label or URL out of
bounds, is skipped with a warning and counted; while Redis cannot be reached the batches wait
(at most ``MAX_PENDING`` examples and judged pages, the oldest dropped) and the crawl goes on.
An exchange reads at most ``MAX_RECEIVED`` examples and judged pages (and one entry more).
Memory in Redis is bounded by ``max_entries`` entries of at most ``MAX_ENTRY_BYTES`` each.
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np
from redis.exceptions import RedisError

from gossamer.focus.learner import DIMENSIONS, Features
from gossamer.redact import redact_authority

if TYPE_CHECKING:
    from redis.asyncio import Redis
    from redis.asyncio.cluster import RedisCluster

log = logging.getLogger(__name__)
MAX_ENTRY_BYTES = 32 * 1024
"""Bytes of one stream entry's batch at most."""
DEFAULT_MAX_ENTRIES = 1_000
"""Stream entries kept (trimmed approximately): with ``MAX_ENTRY_BYTES``, 32 MiB a job."""
MAX_URL_CHARS = 2_048
MAX_FEATURES = 4_096
"""Indices of one example at most."""
MAX_PENDING = 20_000
"""Examples (and judged pages) waiting to be sent while Redis cannot be reached."""
_READ_COUNT = 200
_READS = 5
"""Reads of ``_READ_COUNT`` entries at most an exchange: a late worker catches up in a few."""
MAX_RECEIVED = 100_000
"""Examples and judged pages read an exchange (past it, the rest wait for the next): an entry
of ``4 * MAX_ENTRY_BYTES`` holds 18,000 judged URLs as short as ``a://``: 200 such entries
took 4.4 s and 468 MB to decode, the 1,000 an exchange reads some 22 s and 2.3 GB."""


@dataclass(slots=True)
class Learnt:
    """What a worker learnt: pages judged (URL, on-topic) and the scorer's examples."""

    judged: list[tuple[str, bool]] = field(default_factory=list)
    examples: list[tuple[Features, float]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.judged or self.examples)

    def __len__(self) -> int:
        return len(self.judged) + len(self.examples)


@dataclass(frozen=True, slots=True)
class SharingStats:
    """Frozen snapshot of the exchange."""

    sent: int
    """Examples and judged pages appended to the stream."""
    received: int
    """Examples and judged pages read from the other workers' entries."""
    bad: int
    """Entries skipped as malformed."""


class _Wire(msgspec.Struct, array_like=True):
    judged: list[tuple[str, bool]]
    labels: bytes
    """One byte per example."""
    lengths: bytes
    """Indices per example, ``u16`` little-endian."""
    indices: bytes
    """Every example's indices, ``u32`` little-endian."""


_ENCODER = msgspec.msgpack.Encoder()
_DECODER = msgspec.msgpack.Decoder(_Wire)


def stream_key(job: str) -> str:
    """The job's stream of what its workers learnt."""
    return f"gs:{{{job}}}:focus:learnt"


def encode(learnt: Learnt) -> list[bytes]:
    """``learnt`` as batches of at most about ``MAX_ENTRY_BYTES`` each (an example with more than
    ``MAX_FEATURES`` indices is cut)."""
    out: list[bytes] = []
    judged: list[tuple[str, bool]] = []
    examples: list[tuple[Features, float]] = []
    size = 0
    for url, relevant in learnt.judged:
        if len(url) > MAX_URL_CHARS:
            continue
        url = redact_authority(url)  # a seed's user info: the stream is no place for it
        judged.append((url, relevant))
        size += len(url) + 4
        if size >= MAX_ENTRY_BYTES:
            out.append(_pack(judged, []))
            judged, size = [], 0
    for features, label in learnt.examples:
        features = features[:MAX_FEATURES]
        if size + 4 * len(features) + 3 > MAX_ENTRY_BYTES:
            out.append(_pack(judged, examples))
            judged, examples, size = [], [], 0
        examples.append((features, label))
        size += 4 * len(features) + 3
    if judged or examples:
        out.append(_pack(judged, examples))
    return out


def _pack(judged: list[tuple[str, bool]], examples: list[tuple[Features, float]]) -> bytes:
    labels = bytes(round(min(max(label, 0.0), 1.0) * 255) for _, label in examples)
    lengths = np.fromiter((len(f) for f, _ in examples), dtype="<u2", count=len(examples))
    indices = (
        np.concatenate([f for f, _ in examples]).astype("<u4")
        if examples
        else np.zeros(0, dtype="<u4")
    )
    wire = _Wire(judged, labels, lengths.tobytes(), indices.tobytes())
    return _ENCODER.encode(wire)


def decode(blob: bytes) -> Learnt:
    """A batch back; ValueError when it is malformed (see the module docstring)."""
    try:
        wire = _DECODER.decode(blob)
    except msgspec.DecodeError as exc:
        raise ValueError(f"undecodable batch: {exc}") from None
    count = len(wire.labels)
    if len(wire.lengths) != 2 * count or len(wire.indices) % 4:
        raise ValueError("labels, lengths and indices disagree")
    lengths = np.frombuffer(wire.lengths, dtype="<u2").astype(np.int64)
    indices = np.frombuffer(wire.indices, dtype="<u4")
    if int(lengths.sum()) != len(indices) or (lengths > MAX_FEATURES).any():
        raise ValueError("lengths do not add up to the indices")
    if len(indices) and int(indices.max()) >= DIMENSIONS:
        raise ValueError("feature index out of range")
    if any(len(url) > MAX_URL_CHARS or "://" not in url for url, _ in wire.judged):
        raise ValueError("judged URL malformed")
    labels = [b / 255 for b in wire.labels]
    parts = np.split(indices.astype(np.int32), np.cumsum(lengths)[:-1]) if count else []
    return Learnt(list(wire.judged), list(zip(parts, labels, strict=True)))


class SharedLearning:
    """The exchange of one worker through ``gs:{J}:focus:learnt`` (see the module docstring)."""

    def __init__(
        self,
        redis: Redis | RedisCluster,
        job: str,
        *,
        max_entries: int = DEFAULT_MAX_ENTRIES,
    ) -> None:
        self._redis = redis
        self._key = stream_key(job)
        self._max_entries = max_entries
        self._sender = secrets.token_hex(8).encode()
        self._last = b"0-0"
        self._pending = Learnt()
        self._sent = self._received = self._bad = 0
        self._failing = False

    async def exchange(self, learnt: Learnt) -> list[Learnt]:
        """Append ``learnt`` (with what waited for Redis) and read what the other workers
        appended since the last exchange."""
        self._hold(learnt)
        try:
            await self._send()
            found = await self._read()
        except RedisError as exc:
            if not self._failing:
                log.warning("focus: sharing what was learnt failed, will retry: %s", exc)
            self._failing = True
            return []
        if self._failing:
            log.info("focus: sharing what was learnt works again")
            self._failing = False
        return found

    def stats(self) -> SharingStats:
        """A frozen snapshot."""
        return SharingStats(self._sent, self._received, self._bad)

    def _hold(self, learnt: Learnt) -> None:
        pending = self._pending
        pending.judged.extend(learnt.judged)
        pending.examples.extend(learnt.examples)
        del pending.judged[:-MAX_PENDING]
        del pending.examples[:-MAX_PENDING]

    async def _send(self) -> None:
        pending = self._pending
        if not pending:
            return
        for blob in encode(pending):
            await self._redis.xadd(
                self._key,
                {b"s": self._sender, b"b": blob},
                maxlen=self._max_entries,
                approximate=True,
            )
        self._sent += len(pending)
        self._pending = Learnt()

    async def _read(self) -> list[Learnt]:
        found: list[Learnt] = []
        received = 0
        for _ in range(_READS):
            reply: Any = await self._redis.xread({self._key: self._last}, count=_READ_COUNT)
            entries = _entries(reply)
            for entry_id, fields in entries:
                if received >= MAX_RECEIVED:  # the rest, from this entry on, next time
                    break
                self._last = entry_id
                learnt = self._entry(entry_id, fields)
                if learnt is not None:
                    found.append(learnt)
                    received += len(learnt)
            if len(entries) < _READ_COUNT or received >= MAX_RECEIVED:
                break
        self._received += received
        return found

    def _entry(self, entry_id: bytes, fields: Any) -> Learnt | None:
        if not isinstance(fields, dict):
            self._skip(entry_id, "not a mapping")
            return None
        sender, blob = fields.get(b"s"), fields.get(b"b")
        if sender == self._sender:
            return None
        if not isinstance(blob, bytes) or len(blob) > 4 * MAX_ENTRY_BYTES:
            self._skip(entry_id, "no batch, or too long")
            return None
        try:
            return decode(blob)
        except ValueError as exc:
            self._skip(entry_id, str(exc))
            return None

    def _skip(self, entry_id: bytes, why: str) -> None:
        self._bad += 1
        log.warning(
            "focus: skipped malformed entry %s of %s: %s",
            entry_id.decode("ascii", "replace")[:40],
            self._key,
            why,
        )


def _entries(reply: Any) -> list[tuple[bytes, Any]]:
    """The ``(id, fields)`` pairs of an XREAD reply of one stream (RESP2 or RESP3 shape)."""
    if not reply:
        return []
    if isinstance(reply, dict):
        streams = list(reply.values())
        entries = streams[0] if streams else []
        if isinstance(entries, list) and entries and isinstance(entries[0], list):
            entries = entries[0]
    else:
        entries = reply[0][1]
    out: list[tuple[bytes, Any]] = []
    for item in entries:
        if isinstance(item, list | tuple) and len(item) == 2 and isinstance(item[0], bytes):
            out.append((item[0], item[1]))
    return out
