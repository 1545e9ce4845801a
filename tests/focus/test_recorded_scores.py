"""The focus's per-page computations give the answers recorded before they were made cheaper:
a fixed session of 39 pages judged (every relevance, every outlink's priority, every
re-scored priority sent to the frontier, what the scorer learnt), a link's features and
prior, the TF-IDF vectors against their term-by-term sums, the scorer's steps against the
plain numpy ones. ``scoring_session.json`` was written by :func:`session` on the code of
2026-11-29 before the change, with hub credit in, and written again when the evidence's
calibration, the background's first pages and exploration changed what the focus does, and
when a list's or a hub's share from 0.4 up stopped being calibrated down
(``python tests/focus/test_recorded_scores.py FILE``)."""

from __future__ import annotations

import asyncio
import json
import math
import random
import sys
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gossamer.extract import extract
from gossamer.focus import text
from gossamer.focus.anchors import LinkText
from gossamer.focus.config import FocusConfig
from gossamer.focus.learner import OnlineLogistic, hash_union
from gossamer.focus.linkfeatures import LinkFeatures
from gossamer.focus.policy import FocusPolicy
from gossamer.focus.text import DocumentFrequencies, terms
from gossamer.focus.topic import Topic
from gossamer.parse.links import parse_html
from gossamer.testweb.prose import TOPICS

RECORDED = Path(__file__).with_name("scoring_session.json")
PHRASE = "database transactions, isolation levels and locking"
ON = "database-transactions"
OFF = ("gardening", "astronomy")
LINK = "http://x.test/docs/isolation-levels.html"
LINK_TEXT = LinkText("Row locks and deadlocks", "Locking: row locks and deadlocks, in 2nd order", 2)


def _paragraphs(topic: str, rng: random.Random) -> str:
    lines = [
        " ".join(rng.sample(TOPICS[topic], 5)) + f" {rng.randrange(1, 3000)}" for _ in range(4)
    ]
    return "".join(f"<p>{line} (2nd edition, 10x faster)</p>" for line in lines)


def site(pages: int = 40) -> dict[str, bytes]:
    """Pages on three hosts, a third on the topic, each with a list of eight links (anchors
    with or without the topic's words), a navigation bar and a link in a sentence."""
    rng = random.Random(7)
    urls = [
        f"http://s{i % 3}.test/{'txn' if i % 4 == 0 else 'misc'}/p{i}.html" for i in range(pages)
    ]
    out = {}
    for i, url in enumerate(urls):
        topic = ON if i % 3 == 0 else OFF[i % 2]
        targets = rng.sample(urls, 8)
        items = "".join(
            f'<li><a href="{t}">{rng.choice(TOPICS[ON if j % 2 else OFF[0]])} {j}</a></li>'
            for j, t in enumerate(targets)
        )
        nav = f'<nav><a href="{urls[0]}">Home</a> <a href="{urls[(i + 1) % pages]}">Next</a></nav>'
        main = f"<h1>{rng.choice(TOPICS[topic])}</h1>{_paragraphs(topic, rng)}<ul>{items}</ul>"
        aside = f"<p>See <a href='{targets[0]}'>this</a> too.</p>"
        out[url] = f"<html><body>{nav}<main>{main}{aside}</main></body></html>".encode()
    return out


async def session() -> dict[str, Any]:
    """The fixed session: the first page is the example, the others judged in order, the
    policy's upkeep after each."""
    pages = site()
    urls = list(pages)
    example = parse_html(pages[urls[0]], urls[0])
    assert example.tree is not None
    sent: list[list[tuple[str, float]]] = []

    def reprioritize(priorities: Mapping[str, float]) -> int:
        sent.append(sorted(priorities.items()))
        return len(priorities)

    topic = Topic(PHRASE, [extract(example.tree, urls[0], "tree").text])
    policy = FocusPolicy(
        topic,
        FocusConfig(rescore_every=5),
        reprioritize=reprioritize,
        known=[urls[0]],
        near=example.links,
    )
    judged = []
    for url in urls[1:]:
        page = parse_html(pages[url], url)
        relevance, candidates = policy.judge(url, 1, page, None, page.links)
        judged.append([url, relevance, sorted((c.url, c.priority) for c in candidates)])
        await policy.upkeep()
    features, prior, host, path = LinkFeatures(Topic(PHRASE)).of(LINK, LINK_TEXT, 0.75, 1, "/")
    return {
        "judged": judged,
        "sent": sent,
        "updates": policy.model.updates,
        "bias": policy.model.bias,
        "weights": float(policy.model.weights.astype(np.float64).sum()),
        "features": [features.tolist(), prior, host, path],
    }


def _plain(value: Any) -> Any:
    """``value`` as JSON reads it back (tuples as lists)."""
    return json.loads(json.dumps(value))


def test_a_fixed_session_scores_as_recorded() -> None:
    recorded = json.loads(RECORDED.read_text())
    now = _plain(asyncio.run(session()))
    assert now["judged"] == recorded["judged"]
    assert now["sent"] == recorded["sent"]
    assert now["updates"] == recorded["updates"]
    assert now["bias"] == pytest.approx(recorded["bias"], rel=1e-6)
    assert now["weights"] == pytest.approx(recorded["weights"], rel=1e-5)
    assert now["features"] == recorded["features"]


def test_a_pages_links_at_once_as_one_by_one() -> None:
    """``LinkFeatures.many`` (a page's links, one array made) gives each link what ``of``
    gives it, its features in their own memory."""
    texts = [LINK_TEXT, None, LinkText("Growing tomatoes", "", 0), LINK_TEXT]
    links = [LINK, "http://y.test/a/b?x=1", "http://x.test/garden.html", "http://z.test/"]
    one = [
        LinkFeatures(Topic(PHRASE)).of(u, t, 0.4, 2, "http://p.test/")
        for u, t in zip(links, texts, strict=True)
    ]
    many = LinkFeatures(Topic(PHRASE)).many(links, texts, 0.4, 2, "http://p.test/")
    assert [(f.tolist(), p, h, s) for f, p, h, s in many] == [
        (f.tolist(), p, h, s) for f, p, h, s in one
    ]
    assert all(f.base is None and f.dtype == np.int32 for f, *_ in many)


def _vector(df: DocumentFrequencies, counts: Mapping[str, int]) -> dict[str, float]:
    """The TF-IDF vector term by term, as it was computed before numpy did it."""
    n = math.log(df.documents + 20 + 1)
    weights = {}
    squares = 0.0
    for t, c in counts.items():
        idf = max(n - math.log(df._df.get(t, 0) + 1), 0.1 * n)
        w = (1.0 + (math.log(c) if c else 0.0)) * idf
        weights[t] = w
        squares += w * w
    return {t: w / math.sqrt(squares) for t, w in weights.items()} if squares else {}


def test_tf_idf_vectors_equal_their_term_by_term_sums() -> None:
    rng = random.Random(3)
    words = [w for topic in TOPICS.values() for phrase in topic for w in terms(phrase)]
    bags = [Counter(rng.choices(words, k=rng.randrange(1, 400))) for _ in range(60)]
    df = DocumentFrequencies()
    for bag in bags[:40]:
        df.add(bag)
    for _ in range(5000):  # document frequencies past the table of small logarithms
        df.add(["transact"])
    bags += [Counter(), Counter({"transact": 5000, "lock": 1}), Counter({"unseen": 1})]
    for bag in bags:
        assert list(df.vector(bag).items()) == list(_vector(df, bag).items())


def test_numbers_are_stemmed_once() -> None:
    """A word led by digits is cached as written, so a page's numbers are not stemmed again
    on every page; its terms stay those of the word without its digits."""
    assert terms("In 2026 the 3rd lock, 42 rows") == ["rd", "lock", "row"]
    assert "2026" in text._STEMS and "3rd" in text._STEMS  # not stemmed again
    assert text._STEMS["2026"] == "" and text._STEMS["3rd"] == "rd"
    assert terms("3rd 2026") == ["rd"]


def _step(model: OnlineLogistic, features: np.ndarray, label: float) -> None:
    """``OnlineLogistic.update`` as it was: in place, twice."""
    error = model.predict(features) - label
    model._squares[features] += error * error
    step = model._rate / np.sqrt(model._squares[features])
    model.weights[features] -= (step * error).astype(np.float32)
    model.weights[features] *= 1.0 - model._decay
    model.bias -= 0.05 * error


def test_scorer_steps_equal_the_plain_numpy_ones() -> None:
    rng = np.random.default_rng(5)
    fast, plain = OnlineLogistic(), OnlineLogistic()
    for _ in range(500):
        features = rng.integers(0, 3000, size=rng.integers(1, 30)).astype(np.int32)
        label = float(rng.random() < 0.3)
        fast.update(features, label)  # an index given twice included
        _step(plain, features, label)
        other = rng.integers(0, 3000, size=rng.integers(0, 30)).astype(np.int32)
        assert np.array_equal(hash_union(features, other), np.union1d(features, other))
    assert np.array_equal(fast.weights, plain.weights)
    assert np.array_equal(fast._squares, plain._squares)
    assert fast.bias == plain.bias


if __name__ == "__main__":
    Path(sys.argv[1]).write_text(json.dumps(_plain(asyncio.run(session()))))
