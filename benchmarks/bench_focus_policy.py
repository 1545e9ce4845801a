"""The focus policy alone: the calls of one replayed crawl (``bench_focus_replay.py``'s) are
recorded, then replayed into a fresh ``FocusPolicy`` without the replay's frontier, so only
the policy's own work is timed (the fastest of ``--passes``) or, with ``--callgrind``, counted
in instructions. Every judgement, candidate and priority sent is hashed into a digest: two
versions of the policy that give the same digest answered the same.

    PYTHONHASHSEED=0 PYTHONPATH=src .venv/bin/python benchmarks/bench_focus_policy.py \
        [--topics transactions ...] [--passes 5]
    PYTHONHASHSEED=0 PYTHONPATH=src valgrind --tool=callgrind --instr-atstart=no \
        .venv/bin/python benchmarks/bench_focus_policy.py --passes 1 --callgrind

(a fixed ``PYTHONHASHSEED`` keeps the sets' order, hence instruction counts, comparable.)
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import time
from collections.abc import Mapping
from typing import Any

import bench_focus_replay as replayed
from gossamer.focus.policy import FocusPolicy
from gossamer.focus.topic import Topic
from realweb import provide_missing

Event = tuple[Any, ...]


def record(name: str, pages: replayed.Pages) -> list[Event]:
    """The policy's calls in one replayed crawl: ("j", judge's arguments...) or ("u",)."""
    events: list[Event] = []
    judge, upkeep = FocusPolicy.judge, FocusPolicy.upkeep

    def judging(self: FocusPolicy, *args: Any) -> Any:
        events.append(("j", *args[:4], list(args[4])))
        return judge(self, *args)

    async def keeping(self: FocusPolicy) -> None:
        events.append(("u",))
        await upkeep(self)

    FocusPolicy.judge, FocusPolicy.upkeep = judging, keeping  # type: ignore[method-assign]
    try:
        asyncio.run(replayed.crawl(name, pages, 600, 8))
    finally:
        FocusPolicy.judge, FocusPolicy.upkeep = judge, upkeep  # type: ignore[method-assign]
    return events


def replay(
    name: str, pages: replayed.Pages, events: list[Event], digest: Any = None
) -> tuple[float, float]:
    """The policy's CPU ms a judged page and the whole loop's."""
    spec = next(t for t in replayed.TOPICS if t.name == name)
    sent: list[list[tuple[str, float]]] = []

    def reprioritize(priorities: Mapping[str, float]) -> int:
        sent.append(sorted(priorities.items()))
        return len(priorities)

    policy = FocusPolicy(
        Topic(spec.phrase, [pages.get(e).content.text for e in spec.examples]),
        reprioritize=reprioritize,
        known=[replayed.url_of(e) for e in spec.examples],
        near=[link for e in spec.examples for link in pages.get(e).links],
    )
    loop = asyncio.new_event_loop()
    started = time.thread_time()
    for event in events:
        if event[0] == "j":
            relevance, candidates = policy.judge(*event[1:])
            if digest is not None:
                answer = (relevance, [(c.url, c.depth, c.priority) for c in candidates])
                digest.update(repr(answer).encode())
        else:
            loop.run_until_complete(policy.upkeep())
            if digest is not None and sent:
                digest.update(repr(sent).encode())
            sent.clear()
    total = time.thread_time() - started
    loop.close()
    stats = policy.stats()
    return 1000 * stats.cpu_seconds / stats.judged, 1000 * total / stats.judged


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--topics", nargs="*", default=["transactions"])
    parser.add_argument("--passes", type=int, default=5)
    parser.add_argument("--callgrind", action="store_true", help="instrument only the passes")
    args = parser.parse_args()
    provide_missing()
    for name in args.topics:
        pages = replayed.Pages()
        events = record(name, pages)
        digest = hashlib.sha256()
        replay(name, pages, events, digest)
        replayed._instrument(args.callgrind, "on")
        runs = [replay(name, pages, events) for _ in range(args.passes)]
        replayed._instrument(args.callgrind, "off")
        judged = sum(event[0] == "j" for event in events)
        print(
            f"{name:13} {judged} pages: focus {min(a for a, _ in runs):.3f} ms a page, loop "
            f"{min(b for _, b in runs):.3f}; digest {digest.hexdigest()[:16]}",
            flush=True,
        )


if __name__ == "__main__":
    main()
