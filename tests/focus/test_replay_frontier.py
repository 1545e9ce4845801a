"""The focus replay benchmark's shuffled frontier (``bench_focus_replay.py --shuffled``): a
batch cut short leaves the URLs it did not take waiting, so every queued URL is fetched once."""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from bench_focus_replay import Frontier


def test_shuffled_batches_lose_no_url() -> None:
    frontier = Frontier()
    urls = [f"http://host{h}.test/page{i}.html" for h in range(6) for i in range(20)]
    for number, url in enumerate(urls):
        frontier.push(url, 0.5 + number % 7 / 20)
    rng = random.Random(3)
    fetched: list[str] = []
    while batch := frontier.shuffled(rng):
        fetched += batch
    assert sorted(fetched) == sorted(urls)
