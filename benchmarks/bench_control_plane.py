"""The control plane with 1,000 workers: Redis load, assignment reach, leader failover, moves.

``N`` simulated workers (:mod:`gossamer.cluster.simulate`: each the real keeper, heartbeat,
leader lease and balancer, assignment-following and its notices, wake hints, the Redis
frontier's claim renewals and looks, and an idle crawl's ``done()``; nothing fetched) run as
asyncio tasks in a few child processes against one throwaway redis-server, in a job with one
URL queued on each of ``--hosts`` hosts (a busy job: nothing leases them). The driver reports:

- Redis commands per second and Redis CPU (``INFO commandstats``, ``used_cpu_*``) over a
  steady window, in all and per worker, and the simulating processes' CPU (the workers' side
  of the control plane, per worker);
- Redis memory held by the job's control keys (``MEMORY USAGE`` of every ``gs:{J}:*`` key);
- the time to a new leader after the leader leaves (as a worker that ends or is stopped:
  it deletes its lease and says so on the job's channel) and after the leader's task stops
  without a word (as if killed with ``kill -9``: the lease runs out after its TTL), and in
  each case the time until the assignment no longer gives the old leader a partition;
- the partitions moved when 10% of the workers leave at once, against the minimum (the
  partitions they owned), and how long the new assignment took to reach every worker
  (p50 / p99 / max after its publication).

Usage: ``python benchmarks/bench_control_plane.py [--workers 1000] [--procs 4] [--spread 120]``;
``make bench-control``. The heartbeat TTL (and so the leader lease) is the default 10 s. A
tenth of the workers are idle (``--idle``): they ask ``done()`` as an idle crawl does.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import redis

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cluster_procs import LocalRedis

JOB = "ctl"
SETTLE_LIMIT = 240.0


# -- child: a process of simulated workers ---------------------------------------------------


def child(url: str, names: list[str], partitions: int, spread: float, idle: float) -> None:
    """Run ``names`` as simulated workers; answer the driver's commands on stdin."""
    import asyncio
    import resource

    from gossamer.cluster.simulate import SimConfig, SimWorker, start_all

    async def main() -> None:
        from redis.asyncio import Redis

        config = SimConfig(url, JOB, partitions)
        busy = SimConfig(url, JOB, partitions, idle=False)
        shared = Redis.from_url(
            url, socket_connect_timeout=30.0, socket_timeout=60.0, max_connections=4000
        )
        asking = round(len(names) * idle)
        workers = {
            name: SimWorker(config if i < asking else busy, name, shared)
            for i, name in enumerate(names)
        }
        await start_all(list(workers.values()), spread, batch=10)
        say({"started": len(workers)})
        loop = asyncio.get_running_loop()
        gone: set[str] = set()
        while True:
            line = await loop.run_in_executor(None, sys.stdin.readline)
            word, *rest = line.split() or ["exit"]
            if word in ("die", "quit") and rest[0] in workers:
                worker = workers[rest[0]]
                await (worker.die() if word == "die" else worker.leave())
                gone.add(rest[0])
                say({"gone": rest[0]})
            elif word == "leave":
                fraction, keep = float(rest[0]), set(rest[1:])
                live = [n for n in names if n not in gone and n not in keep]
                leaving = live[len(live) - round(len(names) * fraction) :]
                await asyncio.gather(*(workers[n].leave() for n in leaving))
                gone.update(leaving)
                say({"left": leaving})
            elif word == "cpu":
                usage = resource.getrusage(resource.RUSAGE_SELF)
                say({"cpu": usage.ru_utime + usage.ru_stime})
            elif word == "report":
                seen = {n: [w.seen.reached, w.seen.published] for n, w in workers.items()}
                say({"seen": seen})
            elif word == "exit":
                live = [w for n, w in workers.items() if n not in gone]
                await asyncio.gather(*(w.leave() for w in live))
                return
            else:
                say({})

    asyncio.run(main())


def say(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


# -- driver ------------------------------------------------------------------------------------


class Fleet:
    """The child processes and their simulated workers."""

    def __init__(
        self, url: str, workers: int, procs: int, partitions: int, spread: float, idle: float
    ):
        self.names = [[f"w{p:02d}-{i:04d}" for i in range(p, workers, procs)] for p in range(procs)]
        self.procs = [
            subprocess.Popen(
                [
                    sys.executable,
                    __file__,
                    "--child",
                    url,
                    *map(str, (partitions, spread, idle)),
                    *names,
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            for names in self.names
        ]
        for proc in self.procs:
            self.read(proc)

    @staticmethod
    def read(proc: subprocess.Popen[str]) -> dict[str, Any]:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError("a child process of simulated workers ended")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def tell(self, command: str, only: int | None = None) -> list[dict[str, Any]]:
        chosen = [p for i, p in enumerate(self.procs) if only is None or i == only]
        for proc in chosen:
            assert proc.stdin is not None
            proc.stdin.write(command + "\n")
            proc.stdin.flush()
        return [self.read(proc) for proc in chosen]

    def holder(self, name: str) -> int:
        return next(i for i, names in enumerate(self.names) if name in names)

    def close(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                assert proc.stdin is not None
                proc.stdin.write("exit\n")
                proc.stdin.flush()
        for proc in self.procs:
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def seed_job(url: str, partitions: int, hosts: int) -> int:
    import asyncio

    from gossamer.cluster.simulate import SimConfig, seed

    return asyncio.run(seed(SimConfig(url, JOB, partitions), hosts))


def keys(job: str) -> dict[str, str]:
    tag = f"gs:{{{job}}}:"
    return {"assignment": tag + "assignment", "version": tag + "assignment:version", "tag": tag}


def assignment(client: redis.Redis) -> dict[str, set[int]]:
    from gossamer.cluster.control import parse_ranges

    raw = client.hgetall(keys(JOB)["assignment"])
    return {k.decode(): set(parse_ranges(v.decode())) for k, v in raw.items()}


def version(client: redis.Redis) -> int:
    return int(client.get(keys(JOB)["version"]) or 0)


def settle(client: redis.Redis, workers: int, quiet: float = 3.0) -> float:
    """Wait until ``workers`` rows own partitions and the version held still ``quiet`` s."""
    start = time.monotonic()
    last, since = -1, time.monotonic()
    while time.monotonic() - start < SETTLE_LIMIT:
        now_version = version(client)
        if now_version != last:
            last, since = now_version, time.monotonic()
        rows = client.hlen(keys(JOB)["assignment"])
        if rows == workers and time.monotonic() - since >= quiet:
            return time.monotonic() - start
        time.sleep(0.5)
    raise RuntimeError(f"the assignment did not settle on {workers} workers")


def snapshot(client: redis.Redis) -> tuple[float, float, dict[str, int]]:
    cpu = client.info("cpu")
    stats = client.info("commandstats")
    calls = {name.removeprefix("cmdstat_"): int(v["calls"]) for name, v in stats.items()}
    return time.monotonic(), float(cpu["used_cpu_sys"]) + float(cpu["used_cpu_user"]), calls


def steady(client: redis.Redis, fleet: Fleet, window: float, workers: int) -> dict[str, Any]:
    t0, cpu0, calls0 = snapshot(client)
    client0 = sum(answer["cpu"] for answer in fleet.tell("cpu"))
    time.sleep(window)
    client1 = sum(answer["cpu"] for answer in fleet.tell("cpu"))
    t1, cpu1, calls1 = snapshot(client)
    seconds = t1 - t0
    rates = {n: (calls1[n] - calls0.get(n, 0)) / seconds for n in calls1}
    total = sum(rates.values()) - 2 / seconds  # the two INFO calls of the driver's own
    top = sorted(rates.items(), key=lambda item: -item[1])[:8]
    return {
        "ops_per_s": round(total),
        "ops_per_s_per_worker": round(total / workers, 2),
        "redis_cpu_pct": round(100 * (cpu1 - cpu0) / seconds, 1),
        "redis_cpu_us_per_s_per_worker": round(1e6 * (cpu1 - cpu0) / seconds / workers, 1),
        "client_cpu_pct": round(100 * (client1 - client0) / seconds, 1),
        "client_cpu_us_per_s_per_worker": round(1e6 * (client1 - client0) / seconds / workers, 1),
        "top_commands_per_s": {n: round(r) for n, r in top},
    }


def control_memory(client: redis.Redis) -> dict[str, int]:
    total, count = 0, 0
    for key in client.scan_iter(match=keys(JOB)["tag"] + "*", count=1000):
        total += client.memory_usage(key, samples=0) or 0
        count += 1
    return {"keys": count, "bytes": total}


def new_leader(client: redis.Redis, fleet: Fleet, how: str) -> dict[str, Any]:
    """Seconds from the leader's end (``how``: ``quit``, it leaves; ``die``, it stops without a
    word) to another worker's holding the lease, and to an assignment without the old leader."""
    leader_key = keys(JOB)["tag"] + "leader"
    old = client.get(leader_key).decode()
    left = client.pttl(leader_key)  # the lease's time left: renewed every 0.5 s, if on time
    start = time.monotonic()
    fleet.tell(f"{how} {old}", only=fleet.holder(old))
    result: dict[str, Any] = {"old": old, "lease_left_s": round(left / 1000, 2)}
    while time.monotonic() - start < 60:
        now = client.get(leader_key)
        if "new" not in result and now is not None and now.decode() != old:
            result.update(new=now.decode(), seconds=round(time.monotonic() - start, 2))
        if not client.hexists(keys(JOB)["assignment"], old):
            result["share_moved_s"] = round(time.monotonic() - start, 2)
        if len(result) == 5:
            return result
        time.sleep(0.02)
    raise RuntimeError(f"no new leader or assignment within 60 s: {result}")


def reach(fleet: Fleet, after: int, live: set[str], limit: float = 60.0) -> dict[str, Any]:
    """How long the first version above ``after`` took to reach every live worker (asked
    again each second, for at most ``limit`` s, until every one has it)."""
    start = time.monotonic()
    while True:
        reached: dict[str, dict[int, float]] = {}
        published: dict[int, float] = {}
        for answer in fleet.tell("report"):
            for name, (seen, pub) in answer["seen"].items():
                reached[name] = {int(v): t for v, t in seen.items()}
                published.update({int(v): t for v, t in pub.items()})
        first = min(v for v in published if v > after)
        delays = []
        for name in live:
            times = [t for v, t in reached[name].items() if v >= first]
            delays.append(min(times) - published[first] if times else float("inf"))
        delays.sort()
        if delays[-1] < float("inf") or time.monotonic() - start > limit:
            break
        time.sleep(1.0)
    p99 = delays[min(len(delays) - 1, int(len(delays) * 0.99))]
    return {
        "version": first,
        "p50_s": round(statistics.median(delays), 3),
        "p99_s": round(p99, 3),
        "max_s": round(delays[-1], 3),
        "not_reached": sum(1 for d in delays if d == float("inf")),
    }


def moves(
    before: dict[str, set[int]], after: dict[str, set[int]], left: set[str]
) -> dict[str, int]:
    owner_before = {p: n for n, parts in before.items() for p in parts}
    owner_after = {p: n for n, parts in after.items() for p in parts}
    moved = sum(1 for p, n in owner_after.items() if owner_before.get(p) != n)
    needed = sum(len(before.get(n, ())) for n in left)
    unowned = len(set(owner_before) - set(owner_after))
    return {"moved": moved, "minimum": needed, "unowned_after": unowned}


def run(args: argparse.Namespace) -> dict[str, Any]:
    result: dict[str, Any] = {"workers": args.workers, "procs": args.procs, "idle": args.idle}
    result["partitions"] = args.partitions
    with LocalRedis() as server:
        client = redis.Redis.from_url(server.url)
        result["queued"] = seed_job(server.url, args.partitions, args.hosts)
        fleet = Fleet(server.url, args.workers, args.procs, args.partitions, args.spread, args.idle)
        try:
            result["settled_s"] = round(settle(client, args.workers), 1)
            result["steady"] = steady(client, fleet, args.window, args.workers)
            result["memory"] = control_memory(client)
            result["leader_leaves"] = new_leader(client, fleet, "quit")
            settle(client, args.workers - 1)
            result["leader"] = new_leader(client, fleet, "die")
            settle(client, args.workers - 2)
            before, v_before = assignment(client), version(client)
            leader = result["leader"]["new"]
            _, _, calls0 = snapshot(client)
            left = {n for a in fleet.tell(f"leave 0.1 {leader}") for n in a["left"]}
            live = set(before) - left
            settle(client, len(live))
            _, _, calls1 = snapshot(client)
            result["leave"] = {"left": len(left), **moves(before, assignment(client), left)}
            table = {n: calls1[n] - calls0.get(n, 0) for n in ("hgetall", "hget")}
            result["leave"]["table_reads"] = table
            result["reach"] = reach(fleet, v_before, live)
        except RuntimeError as error:  # a loaded machine: the figures so far, and why not more
            result["failed"] = str(error)
        finally:
            fleet.close()
    return result


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        url, partitions, spread, idle, *names = sys.argv[2:]
        child(url, names, int(partitions), float(spread), float(idle))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=1000)
    parser.add_argument("--procs", type=int, default=4)
    parser.add_argument("--partitions", type=int, default=4096)
    parser.add_argument("--hosts", type=int, default=10_000, help="hosts with a URL queued")
    parser.add_argument(
        "--idle", type=float, default=0.1, help="share of workers idle (asking done())"
    )
    parser.add_argument("--window", type=float, default=20.0, help="steady window, seconds")
    parser.add_argument("--spread", type=float, default=120.0, help="start-up spread, seconds")
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args()
    result = run(args)
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    if "failed" in result:
        sys.exit(1)


if __name__ == "__main__":
    main()
