"""``--render auto``: which pages to render, read from the plain HTTP answer and learnt per host.

A page is a candidate when it ships scripts a browser runs (not JSON-LD, not templates) and
looks empty without them: an empty application mount point (``<div id="root"></div>``,
``#app``, ``#__next``...), a ``<noscript>`` notice, or little visible text with almost no
same-site links. A page that
carries server-rendered text with links is not, whatever its scripts (nor is a page without
scripts: rendering cannot change it).

Per host, the first candidates are rendered and compared with their raw form: rendering
proved *useful* when it found same-site links the raw page lacked (or much more text). Once
``probe`` candidates of a host were rendered in vain, the host's later candidates are not
rendered, but one in ``recheck`` still is (a useful one turns rendering back on); a host
where rendering proved useful has every candidate rendered.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass
from enum import Enum
from urllib.parse import urlsplit

from gossamer.parse.guard import parse
from gossamer.urls import Resolver

_SCRIPT = re.compile(rb"<script", re.IGNORECASE)
_MOUNT_IDS = frozenset({"root", "app", "__next", "__nuxt", "___gatsby", "svelte", "main-app"})
_MIN_TEXT = 200
"""Visible characters below which a page counts as having little text."""
_MIN_LINKS = 3
"""Same-site links below which a page counts as having almost none."""
_INVISIBLE = ("script", "style", "noscript", "template")


class Verdict(Enum):
    """What a host has shown about rendering."""

    LEARNING = "learning"
    NEEDED = "needed"
    USELESS = "useless"


@dataclass(frozen=True, slots=True)
class Signals:
    """What the raw (or rendered) HTML of one page shows."""

    scripts: bool
    text_chars: int
    links: frozenset[str]
    """Absolute same-site link targets."""
    empty_mount: bool
    noscript_notice: bool

    @property
    def looks_empty(self) -> bool:
        """Whether the page looks empty without its scripts."""
        server_rendered = self.text_chars >= _MIN_TEXT and len(self.links) >= _MIN_LINKS
        if server_rendered:
            return False
        thin = self.text_chars < _MIN_TEXT and len(self.links) < _MIN_LINKS
        return self.empty_mount or self.noscript_notice or thin

    @property
    def candidate(self) -> bool:
        """Whether rendering might find more: scripts and an empty look."""
        return self.scripts and self.looks_empty


def read_signals(html: bytes | str, url: str) -> Signals:
    """The signals of an HTML document fetched from ``url``, parsed as the crawl parses a
    page: guarded (:mod:`gossamer.parse.guard`). Every page ``auto`` considers is read here,
    in the crawl's process: lexbor unguarded took 9.9 s and 3 GB for 4,096 ``<p><b c=N>x``
    (27 KB), 3.1 s for 50,000 ``<div>``."""
    raw = html.encode("utf-8", "replace") if isinstance(html, str) else html
    tree = parse(raw).tree
    if tree is None:  # lexbor refused it: nothing to see
        return Signals(False, 0, frozenset(), False, False)
    scripts = _SCRIPT.search(raw) is not None and any(
        _runs((node.attributes.get("type") or "").strip().lower()) for node in tree.css("script")
    )
    site = _site(url)
    resolver = Resolver(url)
    links = set()
    for anchor in tree.css("a[href]"):
        href = anchor.attributes.get("href")
        if not href:
            continue
        try:
            target = resolver.resolve(href)
        except ValueError:
            continue
        if target is not None and target.startswith("http") and _site(target) == site:
            links.add(target.partition("#")[0])
    noscript = any(len(node.text(strip=True)) > 0 for node in tree.css("noscript"))
    empty_mount = any(
        (node.attributes.get("id") or "").lower() in _MOUNT_IDS
        and not node.text(strip=True)
        and node.css_first("a, img, p, li") is None
        for node in tree.css("[id]")
    )
    body = tree.body
    text = 0
    if body is not None:
        body.strip_tags(list(_INVISIBLE))
        text = len(" ".join(body.text(separator=" ").split()))
    return Signals(scripts, text, frozenset(links), empty_mount, noscript)


def _runs(kind: str) -> bool:
    """Whether a ``<script type>`` is one a browser runs (JSON-LD and templates are not)."""
    return kind in ("", "module") or "javascript" in kind or "ecmascript" in kind


def _site(url: str) -> str:
    host = (urlsplit(url).hostname or "").lower()
    parts = host.split(".")
    return ".".join(parts[-2:]) if len(parts) > 2 and not host.replace(".", "").isdigit() else host


def proved_useful(raw: Signals, rendered: Signals) -> bool:
    """Whether rendering found what the raw page lacked: new same-site links, or much more
    text."""
    if rendered.links - raw.links:
        return True
    return rendered.text_chars >= 2 * raw.text_chars + _MIN_TEXT


class HostLearner:
    """The per-host record of rendering's use (see the module doc)."""

    def __init__(self, probe: int = 3, recheck: int = 10, max_hosts: int = 100_000) -> None:
        self._probe = probe
        self._recheck = recheck
        self._max_hosts = max_hosts
        self._hosts: OrderedDict[str, _Host] = OrderedDict()
        """The hosts' records, the oldest first (a dict would find its oldest key by scanning
        past every key deleted before it)."""

    def verdict(self, host: str) -> Verdict:
        """What ``host`` has shown so far."""
        entry = self._hosts.get(host)
        return Verdict.LEARNING if entry is None else entry.verdict

    def should_render(self, host: str, signals: Signals) -> bool:
        """Whether to render a page of ``host`` with these raw signals."""
        if not signals.candidate:
            return False
        entry = self._entry(host)
        if entry.verdict is not Verdict.USELESS:
            return True
        entry.skipped += 1
        return entry.skipped % self._recheck == 0

    def observe(self, host: str, useful: bool) -> None:
        """Tell the outcome of a rendered candidate of ``host``."""
        entry = self._entry(host)
        entry.probes += 1
        if useful:
            entry.verdict = Verdict.NEEDED
            entry.useless_in_row = 0
            return
        entry.useless_in_row += 1
        if (entry.verdict is not Verdict.NEEDED and entry.probes >= self._probe) or (
            entry.verdict is Verdict.NEEDED and entry.useless_in_row >= 5 * self._probe
        ):
            entry.verdict = Verdict.USELESS

    def counts(self) -> dict[str, int]:
        """Hosts by verdict."""
        counts = {v.value: 0 for v in Verdict}
        for entry in self._hosts.values():
            counts[entry.verdict.value] += 1
        return counts

    def _entry(self, host: str) -> _Host:
        entry = self._hosts.get(host)
        if entry is None:
            if len(self._hosts) >= self._max_hosts:
                self._hosts.popitem(last=False)
            entry = self._hosts[host] = _Host()
        return entry


class _Host:
    __slots__ = ("probes", "skipped", "useless_in_row", "verdict")

    def __init__(self) -> None:
        self.verdict = Verdict.LEARNING
        self.probes = 0
        self.skipped = 0
        self.useless_in_row = 0
