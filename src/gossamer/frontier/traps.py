"""Crawler trap guards: per host, bounds on the endless URL spaces real sites have.

A trap makes new URLs as fast as the crawl fetches them: a calendar's next and previous
links, faceted navigation's combinations of query parameters, a relative link that grows the
path (``/a/b/a/b/a/b/``), session ids. The guard sees each URL new to the crawl once (after
the seen check, so a link repeated on every page counts once) and turns it away when:

* ``trap-loop``: a run of one to three path segments repeats ``loop_repeats`` times in a row;
* ``trap-session``: a session id the canonical form does not strip (an ASP.NET
  ``(S(...))`` segment, a query parameter named like ``*session*``);
* ``trap-calendar``: the URL's template holds a date and the URL lies more than
  ``date_steps`` links deeper than the template's shallowest URL (each next/previous link
  of a calendar is one step deeper; a site's dated pages are linked from shallow lists);
* ``trap-facets``: it has two query names or more and its path is faceted navigation: one
  batch of links (a page's) offered ``facet_links`` combinations of two names or more for
  it; or its path has ``query_combos`` combinations of query names already and this one is
  new (the same names combined again and again);
* ``trap-template``: its template has ``per_template`` URLs already.

Seeds (depth 0) are never turned away. A template is the URL with digit runs, hexadecimal
and UUID ids and dates folded in path segments, and query values folded with names sorted:
``/cal/2026/11/28`` and ``/cal/2031/01/02`` are one template, as are ``?b=2&a=x`` and
``?a=y&b=3``. URLs with nothing to fold (no digit, no query) are one per template and not
tracked. Memory is bounded: at most ``hosts`` hosts and ``templates`` templates (and paths)
per host are tracked, the least recently used forgotten first.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

TRAP_REASONS = ("trap-loop", "trap-session", "trap-calendar", "trap-facets", "trap-template")
"""The rejection reasons of :class:`TrapGuard`, as the frontier's stats count them."""

_DIGITS = re.compile(r"[0-9]+")
_DIGIT = re.compile(r"[0-9]")
_HEX_ID = re.compile(r"(?=[0-9a-f-]*[0-9])[0-9a-f]{8,}(?:-[0-9a-f]{4,}){0,4}", re.IGNORECASE)
_DATE = re.compile(
    r"(?:19|20)[0-9]{2}(?:[-_.](?:0?[1-9]|1[0-2])(?:[-_.](?:0?[1-9]|[12][0-9]|3[01]))?"
    r"|(?:0[1-9]|1[0-2])(?:0[1-9]|[12][0-9]|3[01]))"
)
"""A date in one segment or value: 2026-11-28, 2026_11, 20261128."""
_YEAR = re.compile(r"(?:19|20)[0-9]{2}")
_MONTH = re.compile(r"0?[1-9]|1[0-2]")
_ASPNET_SESSION = re.compile(r"\([A-Z]\([A-Za-z0-9]{16,}\)\)")


@dataclass(frozen=True, slots=True)
class TrapLimits:
    """The bounds of :class:`TrapGuard` (see the module docstring)."""

    per_template: int = 100_000
    """URLs of one template per host (``trap-template``)."""
    query_combos: int = 8
    """Query name combinations per path (``trap-facets``)."""
    facet_links: int = 4
    """Combinations of two names or more one batch offers for a path that make it faceted."""
    date_steps: int = 2
    """Links a dated template may grow deeper than its shallowest URL (``trap-calendar``)."""
    loop_repeats: int = 3
    """Repeats in a row of a run of path segments that make a loop (``trap-loop``)."""
    templates: int = 2000
    """Templates (and paths) tracked per host."""
    hosts: int = 10_000
    """Hosts tracked."""


@dataclass(frozen=True, slots=True)
class TrapStats:
    """A frozen snapshot of a :class:`TrapGuard`."""

    rejected: dict[str, int]
    """URLs turned away, by reason (every reason of :data:`TRAP_REASONS`, 0 included)."""
    hosts: int
    """Hosts tracked now."""
    templates: int
    """Templates tracked now, over all hosts."""


@dataclass(slots=True)
class _Template:
    count: int
    shallowest: int


class _HostTraps:
    """One host's templates (with their counts) and paths (with their query combinations)."""

    __slots__ = ("faceted", "paths", "templates")

    def __init__(self) -> None:
        self.templates: OrderedDict[str, _Template] = OrderedDict()
        self.paths: OrderedDict[str, set[str]] = OrderedDict()
        self.faceted: set[str] = set()
        """Path templates found to be faceted navigation."""


@dataclass(slots=True)
class Shape:
    """What the guard reads of a URL: its path template, query names and template. Not
    frozen: one is made per new URL, and a frozen dataclass takes longer to make."""

    path: str
    names: str
    """The sorted query names, joined by ``&`` (empty without a query)."""
    dated: bool
    segments: tuple[str, ...]

    @property
    def template(self) -> str:
        """The path template, then the query names with their values folded."""
        return f"{self.path}?{self.names}" if self.names else self.path


def shape_of(canonical_url: str) -> Shape:
    """The :class:`Shape` of a canonical URL."""
    rest = canonical_url.partition("://")[2]
    path, _, query = rest.partition("/")[2].partition("?")
    segments = tuple(path.split("/"))
    folded, dated = _fold_path(segments)
    names = ""
    if query:
        found = sorted({part.partition("=")[0] for part in query.split("&") if part})
        names = "&".join(found)
        dated = dated or any(_DATE.fullmatch(p.partition("=")[2]) for p in query.split("&"))
    return Shape("/" + "/".join(folded), names, dated, segments)


def _fold_path(segments: tuple[str, ...]) -> tuple[list[str], bool]:
    folded = []
    dated = year = False
    for segment in segments:
        if _DIGIT.search(segment) is None:
            folded.append(segment)
            year = False
            continue
        size = len(segment)  # the regexes below are only tried where they could match
        if (size >= 6 and _DATE.fullmatch(segment)) or (
            year and size <= 2 and _MONTH.fullmatch(segment)
        ):
            dated = True
            folded.append("{date}")
        elif size >= 8 and _HEX_ID.fullmatch(segment):
            folded.append("{id}")
        else:
            folded.append(_DIGITS.sub("#", segment))
        year = size == 4 and _YEAR.fullmatch(segment) is not None
    return folded, dated


def loops(segments: tuple[str, ...], repeats: int) -> bool:
    """Whether a run of one to three segments repeats ``repeats`` times in a row."""
    count = len(segments)
    if count < repeats or len(set(segments)) == count:
        return False  # most paths: no segment twice
    for run in (1, 2, 3):
        span = run * repeats
        for start in range(count - span + 1):
            first = segments[start : start + run]
            if first == ("",) * run:
                continue
            if all(
                segments[start + k * run : start + (k + 1) * run] == first
                for k in range(1, repeats)
            ):
                return True
    return False


class TrapGuard:
    """Turns away the new URLs of a host that look like a trap's (module docstring)."""

    def __init__(self, limits: TrapLimits | None = None) -> None:
        self._limits = limits or TrapLimits()
        self._hosts: OrderedDict[str, _HostTraps] = OrderedDict()
        self._rejected = dict.fromkeys(TRAP_REASONS, 0)

    def screen(self, urls: Sequence[tuple[str, str, int]]) -> list[str | None]:
        """:meth:`check` each of a batch of (host key, canonical URL, depth), after looking
        for faceted navigation in the batch (see the module docstring)."""
        self._spot_facets(urls)
        return [self.check(key, url, depth) for key, url, depth in urls]

    def _spot_facets(self, urls: Sequence[tuple[str, str, int]]) -> None:
        combos: dict[tuple[str, str], set[str]] = {}
        for key, url, _ in urls:
            if "&" not in url.partition("?")[2]:
                continue  # most URLs: one scan
            shape = shape_of(url)
            if "&" in shape.names:
                combos.setdefault((key, shape.path), set()).add(shape.names)
        for (key, path), names in combos.items():
            if len(names) >= self._limits.facet_links:
                faceted = self._host(key).faceted
                if len(faceted) >= self._limits.templates:
                    faceted.pop()
                faceted.add(path)

    def check(self, key: str, canonical_url: str, depth: int) -> str | None:
        """None when the URL (new to the crawl, of host ``key``) may be queued, and it is
        counted; else the reason it may not, and it is counted as rejected."""
        if depth == 0:
            return None  # a seed: the user's own choice
        reason = self._judge(key, canonical_url, depth)
        if reason is not None:
            self._rejected[reason] += 1
        return reason

    def _judge(self, key: str, canonical_url: str, depth: int) -> str | None:
        limits = self._limits
        tail = canonical_url.partition("://")[2].partition("/")[2]
        if "?" not in tail and "(" not in tail and _DIGIT.search(tail) is None:
            # nothing to fold: one URL per template, not tracked; only a loop to look for
            if tail.count("/") < limits.loop_repeats:
                return None
            return "trap-loop" if loops(tuple(tail.split("/")), limits.loop_repeats) else None
        shape = shape_of(canonical_url)
        if loops(shape.segments, limits.loop_repeats):
            return "trap-loop"
        if _is_session(shape):
            return "trap-session"
        host = self._host(key)
        if "&" in shape.names and shape.path in host.faceted:
            return "trap-facets"
        name = shape.template
        template = host.templates.get(name)
        if template is not None:
            host.templates.move_to_end(name)
            if shape.dated and depth > template.shallowest + limits.date_steps:
                return "trap-calendar"
            if template.count >= limits.per_template:
                return "trap-template"
        elif shape.names and not self._new_combination(host, shape):
            return "trap-facets"
        self._count(host, name, template, depth)
        return None

    def _new_combination(self, host: _HostTraps, shape: Shape) -> bool:
        """Whether the path may take one more query name combination (and note it)."""
        combos = host.paths.get(shape.path)
        if combos is None:
            combos = host.paths[shape.path] = set()
            if len(host.paths) > self._limits.templates:
                host.paths.popitem(last=False)
        else:
            host.paths.move_to_end(shape.path)
        if shape.names in combos:
            return True
        if len(combos) >= self._limits.query_combos:
            return False
        combos.add(shape.names)
        return True

    def _count(self, host: _HostTraps, name: str, template: _Template | None, depth: int) -> None:
        if template is None:
            host.templates[name] = _Template(1, depth)
            if len(host.templates) > self._limits.templates:
                host.templates.popitem(last=False)
            return
        template.count += 1
        template.shallowest = min(template.shallowest, depth)

    def _host(self, key: str) -> _HostTraps:
        host = self._hosts.get(key)
        if host is None:
            host = self._hosts[key] = _HostTraps()
            if len(self._hosts) > self._limits.hosts:
                self._hosts.popitem(last=False)
        else:
            self._hosts.move_to_end(key)
        return host

    def stats(self) -> TrapStats:
        """A frozen snapshot."""
        templates = sum(len(host.templates) for host in self._hosts.values())
        return TrapStats(dict(self._rejected), len(self._hosts), templates)


def _is_session(shape: Shape) -> bool:
    if "sess" in shape.names.lower():
        return True
    return "(" in shape.path and any(_ASPNET_SESSION.fullmatch(s) for s in shape.segments)
