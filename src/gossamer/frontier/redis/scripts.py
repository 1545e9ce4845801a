"""The Redis frontier's atomic operations: Lua scripts in ``lua/*.lua``, loaded once
per client and run with EVALSHA in pipelines.

Each script touches the keys of one partition (or of one host of the shared limiter), that is
one Redis Cluster slot. A client of one server or of a Redis Cluster runs them alike: a cluster
client splits each pipeline per node.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster
from redis.commands.core import AsyncScript
from redis.exceptions import (
    AskError,
    ClusterError,
    NoScriptError,
    OutOfMemoryError,
    ReadOnlyError,
    ResponseError,
    TryAgainError,
)

RedisClient = Redis | RedisCluster
"""A client of one Redis server or of a Redis Cluster (see
:func:`gossamer.cluster.jobs.connect`); the frontier and control plane take either."""

ScriptCall = tuple[AsyncScript, list[str], list[Any]]
"""A script with its keys and arguments, for :func:`run_scripts`."""

SCRIPTS = (
    "add",
    "claim",
    "ack",
    "update",
    "unclaim",
    "reclaim",
    "fence",
    "host_acquire",
    "host_release",
    "set_aside",
    "reprioritize",
    "pages",
    "revisit_due",
    "revisit_sooner",
    "revisit_ack",
    "revisit_sample",
)
"""The scripts a frontier registers (``counts`` is read by :mod:`.counts` alone)."""
_REVISIT = frozenset({"revisit_due", "revisit_sooner"})
"""Scripts that queue revisits: ``_revisit.lua`` comes after ``_ranked.lua`` in their source."""
_RANKED = frozenset({"add", "claim", "unclaim", "reclaim", "reprioritize"}) | _REVISIT
"""Scripts that queue or take entries: ``_ranked.lua`` (a partition's ranked queue) comes
first in their source."""
_FINISH = frozenset({"ack", "revisit_ack"})
"""Scripts that finish a claim: ``_finish.lua`` comes before their source."""
_TYPED = frozenset({"claim", "reclaim", "unclaim"}) | _REVISIT
"""Scripts that move entries or revisits from key to key: ``_types.lua`` (their keys' types
checked before any write) comes first in their source. Not ``add``, the hot path (a check of
its keys cost 20% more Redis instructions a URL in batches of 5,000): the worker keeps the
URLs of an add Redis refuses with the job's bad entries (:mod:`.faults`). Nor
``revisit_ack``, once a page: it writes the state before it finishes the claim."""


def load_script(name: str) -> str:
    """The source of ``lua/<name>.lua`` (after ``_ranked.lua`` for the scripts that
    queue or take entries, ``_revisit.lua`` for those that queue revisits, ``_finish.lua``
    for those that finish a claim and ``_types.lua`` for those that move entries)."""
    lua = resources.files("gossamer.frontier.redis") / "lua"
    source = (lua / f"{name}.lua").read_text("utf-8")
    if name in _FINISH:
        source = (lua / "_finish.lua").read_text("utf-8") + source
    if name in _REVISIT:
        source = (lua / "_revisit.lua").read_text("utf-8") + source
    if name in _RANKED:
        source = (lua / "_ranked.lua").read_text("utf-8") + source
    if name in _TYPED:
        source = (lua / "_types.lua").read_text("utf-8") + source
    return source


def register(redis: RedisClient) -> dict[str, AsyncScript]:
    """Every script of :data:`SCRIPTS` registered on ``redis``, by name."""
    return {name: redis.register_script(load_script(name)) for name in SCRIPTS}


async def run_scripts(
    redis: RedisClient, calls: list[ScriptCall], *, check: int | None = None
) -> list[Any]:
    """Run script calls in one pipeline (a Redis Cluster client splits it per node); results
    in order, the first error raised (of the first ``check`` calls only, when given: the
    others' errors come back as results).

    A call answered NOSCRIPT (first use, a restarted server, a replica promoted by failover)
    ran nothing: its script is loaded (on every primary of a cluster) and only those calls
    run again.
    """
    if not calls:
        return []
    results = await _pipeline_scripts(redis, calls)
    missing = [i for i, result in enumerate(results) if isinstance(result, NoScriptError)]
    if missing:
        for script in {calls[i][0] for i in missing}:
            await redis.script_load(script.script)
        again = await _pipeline_scripts(redis, [calls[i] for i in missing])
        for i, result in zip(missing, again, strict=True):
            results[i] = result
    for result in results[:check]:
        if isinstance(result, Exception):
            raise result
    return results


def refused(error: BaseException) -> bool:
    """Redis ran the call and answered it with an error of its data (a key of another type,
    say): sending it again would fail again. A cluster mid-failover or moving slots, or a
    server out of memory for now, answers errors that go away: not refusals."""
    passing = (ClusterError, TryAgainError, AskError, ReadOnlyError, OutOfMemoryError)
    return isinstance(error, ResponseError) and not isinstance(error, passing)


async def _pipeline_scripts(redis: RedisClient, calls: list[ScriptCall]) -> list[Any]:
    # EVALSHA by execute_command: redis-py's cluster pipeline blocks its evalsha() method but
    # routes the raw command to the node owning its keys' slot.
    async with redis.pipeline(transaction=False) as pipe:
        for script, keys, args in calls:
            pipe.execute_command("EVALSHA", script.sha, len(keys), *keys, *args)
        results: list[Any] = await pipe.execute(raise_on_error=False)
    return results
