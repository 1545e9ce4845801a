"""The focused crawl's policy: judges pages, prioritises their outlinks, learns from the crawl.

For each 2xx HTML page the engine asks :meth:`FocusPolicy.judge`:

1. the page's main text is judged against the topic (``relevance``, 0..1);
2. the link that led to the page (its features were kept while it waited) becomes a training
   example for the link scorer: relevant (at or above the threshold) or not;
3. every outlink gets a priority from what is known before fetching it: a prior (topic words
   of its anchor, of the text around it, of its URL; the page's relevance) blended with the
   learnt scorer's probability as it gains experience, or, when higher, the evidence of its
   place (:mod:`gossamer.focus.paths`), of the lists holding it (:mod:`gossamer.focus.lists`),
   of the off-topic pages linking to it as hubs (their links kept as one list: hub credit),
   of the judged pages citing it (:mod:`gossamer.focus.citations`) and of the examples
   linking to it (their chapter, their neighbours: ``near``), each calibrated on
   the crawl's outcomes (:mod:`gossamer.focus.calibration`); a waiting URL that evidence
   lifts goes to the frontier at the next :meth:`FocusPolicy.upkeep`;
4. in ``hard`` mode an irrelevant page's outlinks are dropped unless it lies within
   ``tolerance`` irrelevant pages of a relevant one (seeds count as relevant parents).

The features of up to ``max_waiting`` queued URLs are kept (the oldest forgotten first); every
``rescore_every`` judged pages (a fifth as many during the first ``4 * rescore_every``) they
are scored again by :meth:`upkeep` and the changed priorities go to the frontier's
``reprioritize`` (when it has one).

In a cluster (``shared``, :mod:`gossamer.focus.shared`) every ``share_every`` judged pages the
policy sends the job's stream its judged pages and scorer examples and applies the other
workers': their examples train its scorer; a page they judged that this worker had queued a
link to trains it with that link's features (sent on as an example), counts in the places
on-topic pages live and is known as judged.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections import OrderedDict, deque
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from itertools import repeat
from typing import Any, Protocol
from urllib.parse import urlsplit

import numpy as np
import numpy.typing as npt

from gossamer.extract import Content, extract
from gossamer.focus import explore
from gossamer.focus.anchors import LinkText, link_texts
from gossamer.focus.calibration import Calibration
from gossamer.focus.citations import Citations
from gossamer.focus.config import FocusConfig, FocusStats, sharing_stats
from gossamer.focus.learner import Features, OnlineLogistic, hash_union
from gossamer.focus.linkfeatures import LinkFeatures
from gossamer.focus.lists import ListEvidence
from gossamer.focus.paths import PathEvidence, place_keys
from gossamer.focus.shared import Learnt, SharedLearning
from gossamer.focus.topic import Topic
from gossamer.focus.waiting import Waiting, priority_of, section_of
from gossamer.frontier.base import Candidate
from gossamer.parse.links import ParsedPage
from gossamer.urls import InvalidURL, canonicalize

log = logging.getLogger(__name__)
_LEARN_AFTER = 10
"""Judged pages before the scorer's opinion counts."""
_MOST_LEARNT = 0.7
_MOST_LEARNT_UNSCORED = 0.3
"""Without a frontier that takes new priorities, waiting URLs keep those they were queued
with: the scorer's share stays small so new and old priorities stay comparable."""
_MAX_DONE = 500_000
_MAX_SECTIONS = 100_000
_MAX_KNOWN = 20
"""Links to judged pages learnt from per page."""
_PRIORITY_STEP = 0.02
"""A waiting URL's priority is sent again only when it moved this much."""
_MAX_RAISED = 5_000
MAX_SCORED_LINKS = 10_000
"""A page's links scored (some 22 µs each); the rest go to the frontier at priority 0,
unremembered: a page of 200,000 links took 4.5 s to judge (a plain crawl's whole page 5 s)."""
_NEAR = 0.6
"""The raw score of a page an example links to (calibrated as the crawl goes)."""
_EXPLAINS = 0.1
"""An evidence's score this close to the highest of a fetched URL's ranked it (it learns
from the page's outcome)."""
_TRUSTED = 0.4
"""A list's or a hub's raw share from which its calibration cannot lower it: a chapter whose
judged pages are mostly on-topic defines the topic, its pages not about the topic's words
too (the pages of those the classifier judges off-topic had taught the calibration that
lists and hubs at that share lead nowhere)."""


class Reprioritize(Protocol):
    def __call__(self, priorities: Mapping[str, float]) -> Any: ...


class FocusPolicy:
    """Judges pages and prioritises links for one crawl (see the module docstring)."""

    def __init__(
        self,
        topic: Topic,
        config: FocusConfig | None = None,
        *,
        reprioritize: Reprioritize | None = None,
        extractor: str = "tree",
        known: Sequence[str] = (),
        near: Sequence[str] = (),
        shared: SharedLearning | None = None,
    ) -> None:
        """``known``: URLs of pages known to be on-topic (the examples); ``near``: the URLs
        their pages link to; ``shared``: the exchange of what a cluster's workers learn."""
        self.topic = topic
        self.config = config or FocusConfig()
        self.model = OnlineLogistic()
        self.links = LinkFeatures(topic)
        self._reprioritize = reprioritize
        self._extractor = extractor
        self._waiting: OrderedDict[str, Waiting] = OrderedDict()
        """Ordered, not a dict: a dict's oldest key is found by scanning past every key
        deleted before it (``next(iter(d))`` after each eviction: 16 µs an evicted URL at
        50,000 waiting, 4.5 s of a page of 200,000 links); an ``OrderedDict`` drops it at
        once."""
        self._done: dict[int, bool] = {}
        """Hashes of the URLs judged and whether they were relevant: links back to them are
        not kept as waiting, and each is a training example whose outcome is known."""
        self._recent: deque[bool] = deque(maxlen=self.config.window)
        self._judged = self._relevant = self._dropped = 0
        self._rescores = self._reprioritized = 0
        self._since_rescore = self._since_share = 0
        self._shared = shared
        self._outgoing = Learnt()
        self._cpu = 0.0
        self._explorations = 0
        self._raised: dict[str, float] = {}
        """Waiting URLs whose priority citations lifted, for the next upkeep."""
        self._sections: set[str] = set()
        """Sections of sites (host and first path segment) where a page was judged."""
        self._explored_hubs: set[int] = set()
        self._hub_explorations = 0
        self.paths = PathEvidence()
        self.lists = ListEvidence()
        self.hubs = ListEvidence()
        """Each judged page's links as one list: a hub's share of on-topic targets."""
        self.citations = Citations()
        self.place_calibration = Calibration()
        self.list_calibration = Calibration(_TRUSTED)
        self.hub_calibration = Calibration(_TRUSTED)
        self.near_calibration = Calibration()
        self._known = set()
        for url in known:
            self.paths.add(url, True)
            self._known.add(hash(url))
        self._near = {hash(url): _NEAR for url in near if hash(url) not in self._known}
        """Hashes of the URLs the examples link to, with their raw score."""

    # -- the engine's calls ----------------------------------------------------------------

    @property
    def scored_links(self) -> int:
        """The links of a page scored, and read for their texts: its first so many."""
        return MAX_SCORED_LINKS

    def judge(
        self, url: str, depth: int, page: ParsedPage, content: Content | None, links: list[str]
    ) -> tuple[float, list[Candidate]]:
        """The page's relevance and its outlinks as candidates with their priorities (none of
        an irrelevant page's, in ``hard`` mode, past the tolerance)."""
        if content is None:
            content = extract(page.tree, url, self._extractor) if page.tree else Content("")
        started = time.thread_time()
        try:
            return self._judge(url, depth, page, content, links)
        finally:
            self._cpu += time.thread_time() - started

    def _judge(
        self, url: str, depth: int, page: ParsedPage, content: Content, links: list[str]
    ) -> tuple[float, list[Candidate]]:
        relevance = self.topic.judge(content.text).relevance
        relevant = relevance >= self.config.threshold
        self._tally(relevant)
        self._remember(url, relevant)
        came_by = self._waiting.pop(url, None)
        if self._shared is not None:
            self._outgoing.judged.append((url, relevant))
        streak = 0
        if came_by is not None:
            self._calibrate(came_by, relevant)
            self.model.update(came_by.features, 1.0 if relevant else 0.0)
            self._send([came_by.features], [1.0 if relevant else 0.0])
            streak = came_by.streak
        streak = 0 if relevant else streak + 1
        if self.config.mode == "hard" and streak > self.config.tolerance:
            self._dropped += len(links)
            return relevance, []
        return relevance, self._candidates(page, relevance, streak, depth + 1, links)

    def redirected(self, url: str, target: str) -> float:
        """``url`` redirected to ``target`` (canonical): the target inherits its features,
        so the page it leads to trains the scorer, and its priority."""
        entry = self._waiting.pop(url, None)
        if entry is None:
            return 0.0
        self._waiting[target] = entry
        return entry.sent

    async def upkeep(self) -> None:
        """Every ``rescore_every`` judged pages, score the waiting URLs again with the
        retrained scorer and send the frontier those whose priority moved; in a cluster,
        every ``share_every`` judged pages first exchange what was learnt."""
        if self._shared is not None and self._since_share >= self.config.share_every:
            await self._exchange(self._shared)
        if self._raised and self._reprioritize is not None:
            raised, self._raised = self._raised, {}
            await self._send_priorities(raised)
        every = self.config.rescore_every
        if self._judged < 4 * every:  # early on the scorer changes its mind fastest
            every = max(every // 5, 5)
        if self._since_rescore < every or self._reprioritize is None:
            return
        self._since_rescore = 0
        if self.model.updates < _LEARN_AFTER or not self._waiting:
            return
        started = time.thread_time()
        urls, changed = self._rescored()
        changed.update(self._explore())
        self._cpu += time.thread_time() - started
        self._rescores += 1
        if changed:
            moved = await self._send_priorities(changed)
            log.debug("re-scored %d waiting URLs: %d priorities moved", len(urls), moved)

    async def _send_priorities(self, changed: dict[str, float]) -> int:
        """Hand the frontier new priorities; how many moved there."""
        assert self._reprioritize is not None
        try:
            answer = self._reprioritize(changed)
            if inspect.isawaitable(answer):
                answer = await answer
        except Exception:  # the priorities are hints: the crawl goes on without them
            log.exception("re-prioritising %d waiting URLs failed", len(changed))
            return 0
        moved = answer if isinstance(answer, int) else 0
        self._reprioritized += moved
        return moved

    def stats(self) -> FocusStats:
        """A frozen snapshot."""
        recent = self._recent
        return FocusStats(
            mode=self.config.mode,
            threshold=self.config.threshold,
            judged=self._judged,
            relevant=self._relevant,
            harvest_rate=round(self._relevant / self._judged, 4) if self._judged else 0.0,
            recent_harvest_rate=round(sum(recent) / len(recent), 4) if recent else 0.0,
            window=self.config.window,
            links_dropped=self._dropped,
            model_updates=self.model.updates,
            explorations=self._explorations,
            rescores=self._rescores,
            reprioritized=self._reprioritized,
            waiting=len(self._waiting),
            cpu_seconds=round(self._cpu, 4),
            **sharing_stats(self._shared),
        )

    def json_stats(self) -> dict[str, Any]:
        """``stats()`` as a dict (stats.json's ``focus``)."""
        return asdict(self.stats())

    # -- inside ----------------------------------------------------------------------------

    def _remember(self, url: str, relevant: bool) -> None:
        """A page judged (here or by another worker): where it lives, the lists it is in
        (the other waiting members of those rise when it is on-topic), that it is done."""
        self.paths.add(url, relevant)
        if hash(url) not in self._known:
            self._listed(self.lists.judged(url, relevant))
            self._hubbed(self.hubs.judged(url, relevant))
        if len(self._sections) < _MAX_SECTIONS:
            parts = urlsplit(url)
            self._sections.add(section_of(parts.hostname or "", parts.path))
        if len(self._done) >= _MAX_DONE:
            self._done.clear()
        self._done[hash(url)] = relevant

    def _send(self, features: list[Features], labels: list[float]) -> None:
        """Examples the scorer trained on, for the other workers (in a cluster)."""
        if self._shared is not None:
            self._outgoing.examples.extend(zip(features, labels, strict=True))

    async def _exchange(self, shared: SharedLearning) -> None:
        """Send what was learnt since the last exchange and apply the other workers'."""
        self._since_share = 0
        outgoing, self._outgoing = self._outgoing, Learnt()
        batches = await shared.exchange(outgoing)
        started = time.thread_time()
        features: list[Features] = []
        labels: list[float] = []
        for learnt in batches:
            for url, relevant in learnt.judged:
                if hash(url) in self._done:
                    continue
                self._remember(url, relevant)
                came_by = self._waiting.pop(url, None)
                if came_by is not None:  # a link queued here: its outcome is known now
                    self._send([came_by.features], [float(relevant)])
                    features.append(came_by.features)
                    labels.append(float(relevant))
            features += [f for f, _ in learnt.examples]
            labels += [label for _, label in learnt.examples]
        self.model.update_many(features, labels)
        self._cpu += time.thread_time() - started

    def _rescored(self) -> tuple[list[str], dict[str, float]]:
        """The waiting URLs and the new priorities of those that moved."""
        urls = list(self._waiting)
        entries = list(self._waiting.values())
        count = len(entries)
        learnt = self.model.predict_many([e.features for e in entries])
        share = self._learnt_share()

        def column(values: list[Any]) -> npt.NDArray[np.float64]:
            return np.fromiter(values, dtype=np.float64, count=count)

        cited = self.citations.scores(
            column([e.cited for e in entries]), column([e.citers for e in entries])
        )
        places = np.maximum(
            self.place_calibration.scores(
                column(self.paths.scores_keys([e.place for e in entries]))
            ),
            np.maximum(cited, self.list_calibration.scores(column([e.listed for e in entries]))),
        )
        places = np.maximum(places, self.hub_calibration.scores(column([e.hub for e in entries])))
        if self._near:
            near = self.near_calibration.scores(column([e.near for e in entries]))
            places = np.maximum(places, near)
        priors = column([e.prior for e in entries])
        sent = column([e.sent for e in entries])
        priorities = np.round(np.maximum((1 - share) * priors + share * learnt, places), 4)
        changed: dict[str, float] = {}
        for i in np.flatnonzero(np.abs(priorities - sent) >= _PRIORITY_STEP).tolist():
            entry = entries[i]
            if not entry.explore:
                entry.sent = changed[urls[i]] = float(priorities[i])
        return urls, changed

    def _calibrate(self, came_by: Waiting, relevant: bool) -> None:
        """Each kind of evidence learns from the pages it ranks: those where its score is
        within ``_EXPLAINS`` of the highest evidence's. A page that several kinds point at
        teaches only those that ranked it highest: a chapter of on-topic pages fetched for
        its citations does not make every hub or list at the same level look as good (which
        sent the rest of a site's pages first)."""
        cited = self.citations.score(came_by.cited, came_by.citers)
        kinds = (
            (self.place_calibration, self.paths.score_keys(came_by.place)),
            (self.list_calibration, came_by.listed),
            (self.hub_calibration, came_by.hub),
            (self.near_calibration, came_by.near),
        )
        scores = [calibration.score(raw) for calibration, raw in kinds]
        floor = max(cited, *scores) - _EXPLAINS
        if cited >= floor:
            self.citations.outcome(came_by.cited, relevant)
        for (calibration, raw), score in zip(kinds, scores, strict=True):
            if score >= floor:
                calibration.outcome(raw, relevant)

    def _tally(self, relevant: bool) -> None:
        self._judged += 1
        self._relevant += relevant
        self._recent.append(relevant)
        self._since_rescore += 1
        self._since_share += 1

    def _learnt_share(self) -> float:
        updates = self.model.updates
        most = _MOST_LEARNT if self._reprioritize is not None else _MOST_LEARNT_UNSCORED
        return 0.0 if updates < _LEARN_AFTER else min(most, updates / 100)

    def _candidates(
        self, page: ParsedPage, relevance: float, streak: int, depth: int, links: list[str]
    ) -> list[Candidate]:
        done = self._done
        links, unscored = links[:MAX_SCORED_LINKS], links[MAX_SCORED_LINKS:]
        brief: set[str] = set()
        if relevance < self.config.threshold:  # its links already waiting are counted again
            waiting, known = self._waiting, self._known  # (those judged teach the scorer)
            brief = {
                u for u in links if u in waiting and (k := hash(u)) not in known and k not in done
            }
        texts = link_texts(page, set(links), brief)
        self._learn_known(page.base_url, links, texts, relevance, streak)
        self._lists_of(texts)
        if relevance < self.config.threshold:
            self._hub_of(links)
        out = [Candidate(link, depth, priority=0.0) for link in links if hash(link) in done]
        links = [link for link in links if hash(link) not in done]  # the frontier drops those
        if relevance < self.config.threshold:  # an irrelevant page adds little to what waits
            again, links = self._waiting_again(links, depth, relevance)
            out += again
        share = self._learnt_share()
        url = page.base_url
        scored = self.links.many(links, list(map(texts.get, links)), relevance, streak, url)
        learnt = self.model.predict_many([s[0] for s in scored]).tolist() if share else None
        place, calibrated = self.paths.score_keys, self.place_calibration.score
        listed_share, hub_share, near_of = self.lists.score, self.hubs.score, self._near.get
        known = self._known
        for link, (features, prior, host, path), p in zip(
            links, scored, learnt or repeat(0.0, len(links)), strict=True
        ):
            key = hash(link)
            keys = place_keys(host, path)
            listed, hub, near = listed_share(link), hub_share(link), near_of(key, 0.0)
            evidence = calibrated(place(keys))
            if listed or hub or near:  # most links have none of these (each scores 0 then)
                evidence = max(
                    evidence,
                    self.list_calibration.score(listed),
                    self.hub_calibration.score(hub),
                    self.near_calibration.score(near),
                )
            priority = 1.0 if key in known else priority_of(prior, p, share, evidence)
            out.append(Candidate(link, depth, priority=priority))
            entry = Waiting(
                features, prior, priority, streak, keys, section_of(host, path), relevance
            )
            entry.listed = listed
            entry.hub = hub
            entry.near = near
            self._keep(link, entry)
        out += [Candidate(link, depth, priority=0.0) for link in unscored]
        return out

    def _waiting_again(
        self, links: list[str], depth: int, relevance: float
    ) -> tuple[list[Candidate], list[str]]:
        """Links to URLs already waiting, at their priority or, when higher now, their
        place's (each counts one more page citing it), and the other links."""
        waiting, place, out, rest = self._waiting, self.paths.score_keys, [], []
        for link in links:
            entry = waiting.get(link)
            if entry is None:
                rest.append(link)
            else:
                entry.cited += relevance
                entry.citers += 1
                calibrated = self.place_calibration.score(place(entry.place))
                priority = max(entry.sent, round(calibrated, 4))
                out.append(Candidate(link, depth, priority=priority))
        return out, rest

    def _lists_of(self, texts: Mapping[str, LinkText]) -> None:
        """Keep the lists of a judged page; the waiting members of those holding on-topic
        pages rise."""
        groups: dict[int, list[str]] = {}
        for link, text in texts.items():
            if text.group:
                groups.setdefault(text.group, []).append(link)
        if not groups:
            return
        self._listed(self.lists.add((tuple(g) for g in groups.values()), self._outcome))

    def _hub_of(self, links: list[str]) -> None:
        """Keep a judged page's links as a hub; when some already led to on-topic pages, the
        others waiting rise (sibling credit: a table of contents whose own words are off-topic
        but whose targets are on it)."""
        self._hubbed(self.hubs.add((tuple(links),), self._outcome))

    def _outcome(self, key: int) -> bool | None:
        """What the page of ``key`` proved: on-topic (an example's link, or judged so),
        off-topic, or None while it waits."""
        return True if key in self._known else self._done.get(key)

    def _hubbed(self, hubs: list[tuple[str, ...]]) -> None:
        """The waiting targets of ``hubs`` scored again by their hubs, for the next
        re-scoring (a hub's links are also the lists it holds, which rise at once)."""
        waiting, score = self._waiting, self.hubs.score
        for members in hubs:
            for url in members:
                entry = waiting.get(url)
                if entry is not None:
                    entry.hub = score(url)

    def _listed(self, lists: list[tuple[str, ...]]) -> None:
        """The waiting members of ``lists`` scored again by their lists."""
        waiting, score = self._waiting, self.lists.score
        for members in lists:
            for url in members:
                entry = waiting.get(url)
                if entry is not None:
                    entry.listed = score(url)
                    self._raise(url, entry)

    def _raise(self, url: str, entry: Waiting) -> None:
        """A waiting URL more pages cite, or whose lists hold more on-topic pages: when that
        lifts it, its new priority goes to the frontier at the next upkeep, not the next
        re-scoring."""
        citation = round(entry.evidence(self.citations, self.list_calibration), 4)
        if citation >= entry.sent + _PRIORITY_STEP and not entry.explore:
            entry.sent = citation
            if len(self._raised) < _MAX_RAISED:
                self._raised[url] = citation

    def _explore(self) -> dict[str, float]:
        """The waiting URLs exploration sends first now (see :mod:`gossamer.focus.explore`):
        at most one into a new section, while those stay within ``explore_share`` of the
        pages judged, and one of a new hub, while those stay within half as much."""
        share, judged, sent = self.config.explore_share, self._judged, {}
        if self._explorations - self._hub_explorations + 1 <= share * judged:
            url = explore.in_new_section(self._waiting, self._sections)
            if url is not None:
                sent[url] = self._explored(url)
        if self._hub_explorations + 1 <= share / 2 * judged:
            url = explore.in_new_hub(self._waiting, self.hubs, self._explored_hubs)
            if url is not None:
                sent[url] = self._explored(url)
                self._hub_explorations += 1
        return sent

    def _explored(self, url: str) -> float:
        entry = self._waiting[url]
        entry.explore = True
        entry.sent = 1.0
        self._explorations += 1
        return 1.0

    def _learn_known(
        self,
        url: str,
        links: list[str],
        texts: Mapping[str, LinkText],
        relevance: float,
        streak: int,
    ) -> None:
        """Links to pages already judged (or to the examples) are training examples whose
        outcome is known: the scorer learns from them now, at most ``_MAX_KNOWN`` a page,
        those in a list or table first (what they teach of their list reaches the links
        beside them, which wait)."""
        done, known = self._done, self._known
        seen = [
            (link, text)
            for link in links
            if (text := texts.get(link)) is not None
            and text.group
            and ((key := hash(link)) in done or key in known)
        ]
        if not seen:
            return
        seen = seen[:_MAX_KNOWN]
        targets, found = [link for link, _ in seen], [text for _, text in seen]
        features = [s[0] for s in self.links.many(targets, found, relevance, streak, url)]
        labels = [1.0 if done.get(hash(link), True) else 0.0 for link, _ in seen]
        self.model.update_many(features, labels)
        self._send(features, labels)

    def _keep(self, link: str, entry: Waiting) -> None:
        try:
            url = canonicalize(link)
        except InvalidURL:
            return
        if hash(url) in self._done:
            return
        waiting = self._waiting
        known = waiting.get(url)
        if known is not None:  # another page links to it too: its evidence joins
            known.prior = max(known.prior, entry.prior)
            known.streak = min(known.streak, entry.streak)
            known.cited += entry.cited
            known.citers += 1
            if len(known.features) < 400:
                known.features = hash_union(known.features, entry.features)
            self._raise(url, known)
            return
        self.paths.linked(entry.place)
        waiting[url] = entry
        if len(waiting) > self.config.max_waiting:
            waiting.popitem(last=False)
