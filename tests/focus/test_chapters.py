"""A chapter that defines the topic: once most of a list's judged members (or of a chapter
page's links, a hub) are on-topic, its other members rise to the list's share even where
lists at that level proved off-topic elsewhere on the web (a documentation section holds
pages the classifier judges off-topic, such as Python's ``webbrowser`` in the chapter that
"sending email" is defined by, and those outcomes had taught the lists' calibration to
discount every list at that level)."""

from __future__ import annotations

import numpy as np
import pytest
from tests.focus.test_evidence import after_outcomes
from tests.focus.test_hubs import chapter
from tests.focus.test_learning import Recorder, two_lists
from tests.focus.test_policy import PHRASE, judge

from gossamer.focus.calibration import Calibration
from gossamer.focus.config import FocusConfig
from gossamer.focus.policy import FocusPolicy
from gossamer.focus.topic import Topic


async def test_the_rest_of_a_mostly_on_topic_chapter_rises_whatever_its_level_paid_off() -> None:
    recorder = Recorder()
    policy = FocusPolicy(Topic(PHRASE), FocusConfig(rescore_every=5), reprioritize=recorder)
    for _ in range(20):  # URLs listed at this share proved off-topic elsewhere on this web
        policy.list_calibration.outcome(0.6, False)
    chapter = [f"http://c{i}.test/page.html" for i in range(8)]  # where they point says nothing
    other = [f"http://o{i}.test/page.html" for i in range(8)]
    _, first = judge(policy, "http://site.test/index.html", two_lists(chapter, other))
    now = await after_outcomes(policy, recorder, first, chapter, other, 5)
    share = 5 / (5 + 2 + len(chapter) / 10)  # the list's on-topic share (focus/lists.py)
    assert min(now[url] for url in chapter[5:]) >= round(share, 4) - 1e-4, now
    assert max(now[url] for url in other[5:]) < 0.3, now


def test_a_trusted_share_is_never_lowered_below_itself() -> None:
    """Below ``trusted`` a share is calibrated as before (it falls where it did not pay off);
    from ``trusted`` up it stands, and rises where it paid off."""
    plain, trusting = Calibration(), Calibration(trusted=0.4)
    for _ in range(12):
        plain.outcome(0.55, False)
        trusting.outcome(0.55, False)
        trusting.outcome(0.35, False)
    assert plain.score(0.5) < 0.15
    assert trusting.score(0.5) == pytest.approx(0.5)
    assert trusting.score(0.35) < 0.15
    for _ in range(12):
        trusting.outcome(0.85, True)
    assert trusting.score(0.8) > 0.85
    values = np.array([0.05, 0.35, 0.5, 0.8])
    assert trusting.scores(values).tolist() == pytest.approx([trusting.score(v) for v in values])


async def test_the_rest_of_a_chapter_page_mostly_on_topic_rises_whatever_its_level_paid_off() -> (
    None
):
    """The same for a chapter page's links in prose (hub credit, no list holding them)."""
    recorder = Recorder()
    policy = FocusPolicy(Topic(PHRASE), FocusConfig(rescore_every=5), reprioritize=recorder)
    for _ in range(20):  # hubs at this share led to off-topic pages elsewhere on this web
        policy.hub_calibration.outcome(0.6, False)
    good = [f"http://a{i}.test/page.html" for i in range(8)]
    bad = [f"http://b{i}.test/page.html" for i in range(8)]
    _, first = judge(policy, "http://site.test/good.html", chapter(good))
    _, second = judge(policy, "http://site.test/bad.html", chapter(bad, seed=4))
    first.update(second)
    now = await after_outcomes(policy, recorder, first, good, bad, 5)
    share = 5 / (5 + 2 + len(good) / 10)  # the hub's on-topic share (focus/lists.py)
    assert min(now[url] for url in good[5:]) >= round(share, 4) - 1e-4, now
    assert max(now[url] for url in bad[5:]) < 0.3, now
