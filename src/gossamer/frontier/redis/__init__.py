"""The Redis frontier: one crawl job's URLs in partitioned Redis queues shared by many workers.

Hosts map to ``P`` virtual partitions (``xxh3_64(host_key) % P``, stable across machines and
Python versions; with ``partition_by="url"`` a URL's fingerprint modulo ``P``, its host's
politeness then kept by a shared limiter). A worker leases only URLs of the partitions it owns
(an :class:`Ownership` its owner hands to :meth:`RedisFrontier.own`), so in host mode exactly
one worker enforces each host's politeness. It claims batches of entries from its partitions'
queues into memory and leases from there; a claim stays in Redis until the URL is acked, so a
kill -9 loses no URL. The frontier takes a client of one server or of a Redis Cluster; every
key of a partition shares one hash tag, so each script touches one slot.

One module per concern:

* ``keys``: the key layout, the queue entry's codec (hostile entries stop there), ``Ownership``
* ``scripts``: loading the Lua scripts (``lua/*.lua``) and running them in pipelines
* ``counts``: a look at every partition's counts
* ``adds``: new URLs sent to their partitions' queues, the job's seen sets deciding
* ``claims``: claims taken, renewed, ended, reclaimed, returned; malformed entries set aside
* ``limiter``: the shared per-host limiter of ``partition_by="url"``
* ``fences``: hand-over fences for a partition's new owner
* ``holders``: which worker may claim from a partition while it changes owner
* ``frontier``: :class:`RedisFrontier`, the contract's methods and the upkeep its owner calls
* ``acks``: a worker's acks held back until their records are durable (``defer_acks``)
* ``revisits``: a continuous crawl's revisit state and due times, kept with each partition
* ``continuous``: ``ContinuousFrontier``, the frontier of a continuous crawl (``--recrawl``)

Priorities: a partition queues FIFO while every entry has priority 0; its first other
priority turns it ranked (a sorted set, best first, see :mod:`.keys`), so claims take each
partition's best entries (once this worker has met a priority, a few of every partition when
the memory budget cannot hold a whole batch of each), and the worker's host scheduler serves
what it holds best first across hosts. Entries keep their priority through claims, retries,
reclaims and hand-over.

Known limits: a FIFO partition's one host's long backlog delays the other hosts of its
partition until it is claimed into memory (bounded by ``memory_budget``); a worker holds up to
``memory_budget`` claimed URLs, so a better URL added to its partition later waits until it
claims again (below half the budget); ``reprioritize`` does not reach URLs another worker
holds claimed.

This package may import ``gossamer.frontier.base``, ``admission``, ``hosts``, ``politeness``,
``dedup``, ``revisit``, ``revisits``, ``gossamer.urls``, redis-py, msgspec and xxhash; never
``gossamer.cluster`` (which builds on it), the engine, nor ``gossamer.frontier.local``.
"""

from gossamer.frontier.redis.config import RedisFrontierConfig
from gossamer.frontier.redis.counts import PartitionCounts, read_counts
from gossamer.frontier.redis.frontier import RedisFrontier
from gossamer.frontier.redis.holders import Peers
from gossamer.frontier.redis.keys import (
    BadEntry,
    Ownership,
    bad_keys,
    host_keys,
    partition_keys,
    partition_of,
)
from gossamer.frontier.redis.scripts import RedisClient, ScriptCall, run_scripts

__all__ = [
    "BadEntry",
    "Ownership",
    "PartitionCounts",
    "Peers",
    "RedisClient",
    "RedisFrontier",
    "RedisFrontierConfig",
    "ScriptCall",
    "bad_keys",
    "host_keys",
    "partition_keys",
    "partition_of",
    "read_counts",
    "run_scripts",
]
