"""The focus's CPU on its worst pages: one holding 5,000 links (each its own URL, in lists,
with anchor texts and a sentence around them) and one with 1 MB of main text, each judged by a
policy that has judged 60 ordinary pages first (its scorer trained, its caches warm), and the
re-scoring of the waiting URLs that follows the page of 5,000 links.

Only the focus's own CPU is counted (``cpu_seconds`` of its statistics: judging, learning,
link scoring, re-scoring); the page is parsed and its main text extracted before, as the page
stage does. The best of ``--runs`` fresh policies; pages are generated, no network.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_focus_worst.py [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import random
from collections.abc import Callable

from gossamer.extract import Content, extract
from gossamer.focus.config import FocusConfig
from gossamer.focus.policy import FocusPolicy
from gossamer.focus.topic import Topic
from gossamer.parse.links import ParsedPage, parse_html
from gossamer.testweb.prose import TOPICS

PHRASE = "database transactions, isolation levels and locking"
ON = "database-transactions"


def _sentences(rng: random.Random, count: int) -> str:
    names = list(TOPICS)
    return " ".join(rng.choice(TOPICS[rng.choice(names)]) for _ in range(count))


def _page(rng: random.Random, host: str, n: int, links: int, words: int) -> str:
    items = "".join(
        f'<li><a href="http://{host}/p{n}-{i}.html">{_sentences(rng, 1)[:60]}</a> '
        f"{_sentences(rng, 1)}</li>"
        for i in range(links)
    )
    home, following = f"http://{host}/", f"http://{host}/p{n + 1}.html"
    nav = f'<nav><a href="{home}">Home</a> <a href="{following}">Next</a></nav>'
    body = "".join(f"<p>{_sentences(rng, 4)}</p>" for _ in range(max(words // 80, 1)))
    return f"<html><body>{nav}<main><h1>Page {n}</h1>{body}<ul>{items}</ul></main></body></html>"


def _parsed(html: str, url: str) -> tuple[ParsedPage, Content]:
    parsed = parse_html(html.encode(), url, guarded=False)
    assert parsed.tree is not None
    return parsed, extract(parsed.tree, url, "tree")


def _cpu(policy: FocusPolicy, work: Callable[[], object]) -> float:
    """The focus CPU ``work`` adds, in ms."""
    before = policy.stats().cpu_seconds
    work()
    return 1000 * (policy.stats().cpu_seconds - before)


def run_once(seed: int) -> dict[str, float]:
    rng = random.Random(seed)
    examples = [" ".join(TOPICS[ON][i : i + 8]) for i in (0, 8)]
    waiting: dict[str, float] = {}
    policy = FocusPolicy(
        Topic(PHRASE, examples), FocusConfig(rescore_every=25), reprioritize=waiting.update
    )
    loop = asyncio.new_event_loop()
    try:
        for n in range(60):
            url = f"http://docs.test/p{n}.html"
            parsed, content = _parsed(_page(rng, "docs.test", n, 30, 600), url)
            policy.judge(url, 1, parsed, content, parsed.links)
            loop.run_until_complete(policy.upkeep())
        ordinary = policy.stats()
        figures = {"an ordinary page (the mean of 60)": 1000 * ordinary.cpu_seconds / 60}
        url = "http://docs.test/index-of-everything.html"
        parsed, content = _parsed(_page(rng, "docs.test", 1000, 5_000, 300), url)
        figures["5,000 links: judge"] = _cpu(
            policy, lambda: policy.judge(url, 1, parsed, content, parsed.links)
        )
        policy._since_rescore = policy.config.rescore_every  # the next upkeep re-scores
        figures["5,000 links: re-scoring after"] = _cpu(
            policy, lambda: loop.run_until_complete(policy.upkeep())
        )
        url = "http://docs.test/one-megabyte.html"
        parsed, content = _parsed(_page(rng, "docs.test", 2000, 20, 220_000), url)
        assert len(content.text) >= 1_000_000, len(content.text)
        figures["1 MB of text: judge"] = _cpu(
            policy, lambda: policy.judge(url, 1, parsed, content, parsed.links)
        )
        return figures
    finally:
        loop.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    runs = [run_once(seed) for seed in range(args.runs)]
    for name in runs[0]:
        values = [run[name] for run in runs]
        print(f"{name:34} {min(values):8.2f} ms (best of {len(values)}; worst {max(values):.2f})")


if __name__ == "__main__":
    main()
