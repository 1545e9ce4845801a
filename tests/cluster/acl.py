"""The ACL rules of docs/security.md: the least a Redis user needs to run gossamer's jobs."""

from __future__ import annotations

GOSSAMER_ACL = (
    "resetkeys", "~gs:*", "resetchannels", "-@all",
    "+ping", "+hello", "+auth", "+info", "+time",
    "+get", "+set", "+del", "+exists", "+incr", "+incrby",
    "+hget", "+hset", "+hgetall", "+hmget", "+hvals", "+hkeys", "+hdel", "+hincrby", "+hexists",
    "+hsetnx", "+hlen", "+sadd", "+spop", "+srem", "+srandmember", "+scard", "+smembers",
    "+sscan",
    "+lpush", "+rpush", "+lpop", "+llen", "+lrange", "+ltrim",
    "+zadd", "+zrem", "+zcard", "+zrange", "+zrangebyscore", "+zremrangebyscore", "+zcount",
    "+zscore",
    "+xadd", "+xread",
    "+pexpire", "+pttl", "+wait", "+role",
    "+multi", "+exec", "+discard",
    "+evalsha", "+script|load",
)  # fmt: skip
"""Rules of an ACL user that runs submit, worker, status and wait on one Redis server."""
CLUSTER_ACL = ("+cluster|slots", "+cluster|shards", "+cluster|nodes", "+command")
"""The rules a Redis Cluster client needs on top (it asks the nodes for the slot map)."""


def acl_user(name: str, password: str, *rules: str) -> tuple[str, ...]:
    """redis-server arguments that define the user ``name`` (one word each)."""
    return ("--user", name, "on", f">{password}", *rules)
