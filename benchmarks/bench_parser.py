"""The cost of gossamer's bounded Redis reply parser: EVALSHA round trips, plain vs bounded.

A claim-shaped script (one reply of ``--entries`` short entries, like ``claim.lua``'s) and an
ack-shaped one (one integer) run ``--calls`` times each, sequentially, through redis-py's
asyncio parser and through :mod:`gossamer.cluster.bounded`'s, on a private redis-server on
loopback; the best of ``--rounds`` is printed per parser.

``python benchmarks/bench_parser.py`` (a few seconds).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

from redis._parsers.resp3 import _AsyncRESP3Parser
from redis.asyncio import Redis

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.redis_server import RedisServer

from gossamer.cluster.bounded import BoundedRESP3Parser

CLAIM = "local out = {}; for i = 1, tonumber(ARGV[1]) do out[i] = ARGV[2] end; return out"
ACK = "return 1"
ENTRY = "-1419012025492081833|3|0|0|0.0|http://host-17.test/a/b/page-1234.html"


async def _time(parser: type, url: str, calls: int, entries: int) -> tuple[float, float]:
    client = Redis.from_url(url, parser_class=parser)
    claim = client.register_script(CLAIM)
    ack = client.register_script(ACK)
    try:
        await claim(args=[entries, ENTRY])
        await ack()
        started = time.perf_counter()
        for _ in range(calls):
            await claim(args=[entries, ENTRY])
        middle = time.perf_counter()
        for _ in range(calls):
            await ack()
        return middle - started, time.perf_counter() - middle
    finally:
        await client.aclose()


async def main(args: argparse.Namespace) -> None:
    with RedisServer() as server:
        for name, parser in (("redis-py", _AsyncRESP3Parser), ("bounded", BoundedRESP3Parser)):
            best = [float("inf"), float("inf")]
            for _ in range(args.rounds):
                claim, ack = await _time(parser, server.url, args.calls, args.entries)
                best = [min(best[0], claim), min(best[1], ack)]
            print(
                f"{name:<9} claim ({args.entries} entries) {best[0] / args.calls * 1e6:7.1f} us"
                f"   ack {best[1] / args.calls * 1e6:6.1f} us   per EVALSHA round trip"
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--entries", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=3)
    asyncio.run(main(parser.parse_args()))
