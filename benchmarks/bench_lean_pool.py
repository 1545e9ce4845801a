"""The lean client's idle pool on many hosts: microseconds per release and per reuse look-up.

A crawl of ``--keys`` hosts in rotation, each host's connection released once a round, with
the pool holding at most ``--limit`` (the old bound was the concurrency, 64): every release of
a full pool drops the oldest connection. Each round looks the host up (`_pooled`: a hit when
the pool still holds its connection) and releases a connection for it. The connections are
stand-ins (no sockets: this times the pool's bookkeeping, not the network).

    PYTHONPATH=src python benchmarks/bench_lean_pool.py [--keys 10000] [--limit 64]
"""

from __future__ import annotations

import argparse
import ssl
import time
from typing import Any, cast

from gossamer.fetch.lean import LeanClient
from gossamer.fetch.wire import Connection


class _Idle:
    """What the pool asks of a connection: reusable, its release time, close."""

    def __init__(self) -> None:
        self.idle_since = 0.0
        self.usable = True

    def finish(self) -> bool:
        self.idle_since = time.monotonic()
        return True

    def close(self) -> None:
        self.usable = False


async def _never(host: str, port: int, family: Any) -> list[Any]:
    raise OSError("no resolving here")


def _client(limit: int) -> LeanClient:
    return LeanClient(
        _never,
        headers={},
        ssl_context=ssl.create_default_context(),
        connect_timeout=1.0,
        read_timeout=1.0,
        total_timeout=1.0,
        keepalive_timeout=3600.0,
        limit=limit,
    )


def run(keys: int, limit: int, rounds: int) -> tuple[float, float, int]:
    """Microseconds per release and per `_pooled` after a first round, and the hits."""
    client = _client(limit)
    hosts = [("http", f"h{i}.lat", 80) for i in range(keys)]
    for key in hosts:
        client.release(key, cast(Connection, _Idle()))
    released = looked = 0.0
    hits = 0
    for _ in range(rounds):
        for key in hosts:
            started = time.perf_counter()
            conn = client._pooled(key, time.monotonic())
            looked += time.perf_counter() - started
            hits += conn is not None
            started = time.perf_counter()
            client.release(key, conn or cast(Connection, _Idle()))
            released += time.perf_counter() - started
    ops = rounds * keys
    return released / ops * 1e6, looked / ops * 1e6, hits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--limit", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    release, pooled, hits = run(args.keys, args.limit, args.rounds)
    print(
        f"keys {args.keys} limit {args.limit}: release {release:.2f} us, "
        f"_pooled {pooled:.2f} us, hits {hits}/{args.rounds * args.keys}"
    )


if __name__ == "__main__":
    main()
