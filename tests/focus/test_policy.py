"""The focus policy on pages made for it: link priorities from anchor text, URL and parent;
hard mode drops the links of irrelevant pages past the tolerance; harvest statistics; the
online scorer re-scores waiting URLs and hands the frontier the changed priorities."""

from __future__ import annotations

import random
from collections.abc import Mapping

from gossamer.focus.config import FocusConfig
from gossamer.focus.policy import FocusPolicy
from gossamer.focus.topic import Topic
from gossamer.parse.links import parse_html
from gossamer.testweb.prose import TOPICS

PHRASE = "database transactions, isolation levels and locking"
ON = "database-transactions"


def prose(topic: str, seed: int) -> str:
    rng = random.Random(seed)
    return "".join(f"<p>{' '.join(rng.sample(TOPICS[topic], 4))}</p>" for _ in range(3))


def html(topic: str, seed: int, links: list[tuple[str, str]]) -> bytes:
    anchors = "".join(f'<li><a href="{href}">{text}</a></li>' for href, text in links)
    return f"<html><body><main>{prose(topic, seed)}<ul>{anchors}</ul></main></body></html>".encode()


def judge(policy: FocusPolicy, url: str, body: bytes) -> tuple[float, dict[str, float]]:
    page = parse_html(body, url)
    relevance, candidates = policy.judge(url, 0, page, None, page.links)
    return relevance, {c.url: c.priority for c in candidates}


def test_links_with_topic_anchors_come_first() -> None:
    policy = FocusPolicy(Topic(PHRASE))
    links = [
        ("/a/", "Deadlocks and row locks"),
        ("/b/", "Growing tomatoes"),
        ("/isolation-levels/", "next page"),
        ("/c/", "next page"),
    ]
    relevance, priorities = judge(policy, "http://x.test/", html(ON, 1, links))
    assert relevance >= 0.5
    a, b, url_words, c = (priorities[f"http://x.test{p}"] for p, _ in links)
    assert a > b and a > c
    assert url_words > c  # words of the URL count too


def test_a_relevant_parent_raises_its_links_priority() -> None:
    policy = FocusPolicy(Topic(PHRASE))
    _, good = judge(policy, "http://x.test/on/", html(ON, 2, [("/x/", "more")]))
    _, bad = judge(policy, "http://x.test/off/", html("gardening", 3, [("/y/", "more")]))
    assert good["http://x.test/x/"] > bad["http://x.test/y/"]


def test_hard_mode_drops_links_of_irrelevant_pages_past_the_tolerance() -> None:
    hard = FocusPolicy(Topic(PHRASE), FocusConfig(mode="hard", tolerance=1))
    links = [("/child/", "Compost"), ("/other/", "Pruning")]
    # The seed is irrelevant: one irrelevant page deep, its links are kept.
    _, kept = judge(hard, "http://x.test/", html("gardening", 4, links))
    assert set(kept) == {"http://x.test/child/", "http://x.test/other/"}
    # Its irrelevant child is two deep: its links are dropped.
    _, dropped = judge(hard, "http://x.test/child/", html("astronomy", 5, [("/z/", "Comets")]))
    assert dropped == {}
    assert hard.stats().links_dropped == 1
    # A relevant page's links are always followed, and reset the count.
    _, on = judge(hard, "http://x.test/other/", html(ON, 11, [("/w/", "Savepoints")]))
    assert list(on) == ["http://x.test/w/"]
    strict = FocusPolicy(Topic(PHRASE), FocusConfig(mode="hard", tolerance=0))
    _, none = judge(strict, "http://y.test/", html("gardening", 7, links))
    assert none == {}
    soft = FocusPolicy(Topic(PHRASE), FocusConfig(mode="soft"))
    _, all_links = judge(soft, "http://y.test/", html("gardening", 7, links))
    assert len(all_links) == 2


def test_harvest_rates_overall_and_recent() -> None:
    policy = FocusPolicy(Topic(PHRASE), FocusConfig(window=4))
    for i in range(4):
        judge(policy, f"http://x.test/on/{i}/", html(ON, 10 + i, []))
    for i in range(4):
        judge(policy, f"http://x.test/off/{i}/", html("networking", 20 + i, []))
    stats = policy.stats()
    assert (stats.judged, stats.relevant) == (8, 4)
    assert stats.harvest_rate == 0.5
    assert stats.recent_harvest_rate == 0.0
    assert policy.json_stats()["harvest_rate"] == 0.5


class Recorder:
    """A frontier's ``reprioritize``: remembers what it was sent."""

    def __init__(self) -> None:
        self.sent: list[dict[str, float]] = []

    async def __call__(self, priorities: Mapping[str, float]) -> int:
        self.sent.append(dict(priorities))
        return len(priorities)


async def test_online_learning_rescores_waiting_urls() -> None:
    """Links on good.test with an off-topic anchor keep leading to on-topic pages: the scorer
    learns it, and the waiting good.test URLs are re-scored upwards."""
    recorder = Recorder()
    policy = FocusPolicy(Topic(PHRASE), FocusConfig(rescore_every=10), reprioritize=recorder)
    waiting = [(f"http://good.test/w/{i}/", "Growing tomatoes") for i in range(5)]
    _, first = judge(policy, "http://hub.test/", html("gardening", 1, waiting))
    before = first["http://good.test/w/0/"]
    for round_ in range(6):
        trail = [(f"http://good.test/p/{round_}/{i}/", "Growing tomatoes") for i in range(6)]
        trail += [(f"http://bad.test/p/{round_}/{i}/", "Growing tomatoes") for i in range(6)]
        judge(policy, f"http://hub.test/{round_}/", html("gardening", 30 + round_, trail))
        for i in range(6):
            judge(policy, f"http://good.test/p/{round_}/{i}/", html(ON, 100 * round_ + i, []))
            judge(policy, f"http://bad.test/p/{round_}/{i}/", html("astronomy", round_ + i, []))
        await policy.upkeep()
    assert recorder.sent, "no re-scoring reached the frontier"
    raised = {url: p for sent in recorder.sent for url, p in sent.items()}
    assert raised["http://good.test/w/0/"] > before
    assert policy.stats().rescores >= 1
    assert policy.stats().reprioritized >= 5
    _, fresh = judge(policy, "http://hub.test/new/", html("gardening", 2, [
        ("http://good.test/q/", "Growing tomatoes"), ("http://bad.test/q/", "Growing tomatoes"),
    ]))  # fmt: skip
    assert fresh["http://good.test/q/"] > fresh["http://bad.test/q/"]


def test_a_redirect_target_inherits_the_priority_and_features() -> None:
    policy = FocusPolicy(Topic(PHRASE))
    _, links = judge(policy, "http://x.test/", html(ON, 3, [("/old/", "Isolation levels")]))
    priority = policy.redirected("http://x.test/old/", "http://x.test/new/")
    assert priority == links["http://x.test/old/"] > 0
    assert policy.redirected("http://x.test/unknown/", "http://x.test/else/") == 0.0
    judge(policy, "http://x.test/new/", html(ON, 4, []))
    assert policy.model.updates == 1  # the page the redirect led to trained the scorer
