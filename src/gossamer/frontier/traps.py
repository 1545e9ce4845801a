"""Crawler trap guards: per host, bounds on the endless URL spaces real sites have.

A trap makes new URLs as fast as the crawl fetches them: a calendar's next and previous
links, faceted navigation's combinations of query parameters, a relative link that grows the
path (``/a/b/a/b/a/b/``), session ids, pages named by random hashes that link more of
themselves. The guard sees each URL new to the crawl once (after the seen check, so a link
repeated on every page counts once) and turns it away when:

* ``trap-loop``: a run of one to three path segments repeats ``loop_repeats`` times in a row,
  or the path grows by empty segments, page file names or re-encoding (:func:`odd_path`),
  or it is a subdirectory of a page linking the same subdirectories as the page it was found
  on, which did so too, past ``echo_steps`` (:class:`Echoes`: a soft 404 with relative links);
* ``trap-session``: a session id the canonical form does not strip (an ASP.NET
  ``(S(...))`` segment, a query parameter named like ``*session*``);
* ``trap-nesting``: its path holds more than ``max_ids`` id segments (random tokens and long
  numbers: ``/u/9f3a.../c2e1.../77b0.../``);
* ``trap-calendar`` and ``trap-generated``: it is of a generated kind and descends from
  more than ``date_steps`` (a kind with dates) or ``token_steps`` (a kind with random
  tokens: hashes, mixed runs of letters and digits, :func:`is_token`) pages of its line in a
  row: it was found on such a page, found on such a page, and so on. A calendar's next and
  previous links, hashes that link more hashes, are lines of descent; a site's real dated or
  hashed pages are linked from lists (pages of another line), however deep the list's own
  pagination runs. A URL's *line* is its path's outline (each segment ``*``, the last one's
  extension kept), its *kind* the line with the first segment as written (when a word) and
  the query names (:func:`kinds_of`): ``/3f1/a9c0e2d4.html`` and ``/s/77b01f3c.html`` are one
  line. A kind is generated once two of its URLs and a quarter of them or more showed a
  token (or a quarter a date: in a path, or a query value that is a date or a year, as
  ``?y=2026&m=11``), so a URL of it whose own name looks plain counts too, and a trap cannot
  break its line with a plain name now and then. Traps named by words or plain numbers only
  cannot be told from a catalogue by their URLs (the page budgets and the depth bound them).
  Without the page the URLs came
  from (a redirect, a sitemap), a dated URL is turned away when it lies more than
  ``date_steps`` links deeper than its template's shallowest URL;
* ``trap-facets``: it has two query names or more and its path is faceted navigation: one
  batch of links (a page's) offered ``facet_links`` combinations of two names or more for
  it; or its path has ``query_combos`` combinations of query names already and this one is
  new (the same names combined again and again);
  Also when its query only appends to (or swaps the last list item of) its page's for more
  than ``growth_steps`` pages in a row; a query grown so counts as a token for its kind;
* ``trap-template``: its template has ``per_template`` URLs already, it is one more than
  ``spellings`` spellings of one path in letter case or query order (its query's pairs
  reordered or repeated: :func:`reordered`), or it has path parameters and was
  found on a page of the same path with path parameters (a variant of that page).

Seeds (depth 0) are never turned away. A template is the URL, lower-cased, with digit runs,
tokens (see :func:`is_token`), UUIDs and dates (month and weekday names after a year or a
date too) folded in path segments (a file name's extension aside), path parameters and
query values folded with names sorted: ``/cal/2026/11/28`` and ``/cal/2031/01/02`` are
one template, as are ``?b=2&a=x`` and ``?a=y&b=3``. URLs with nothing to fold (no digit, no
query) are one per template and not tracked. Memory is bounded: at most ``hosts`` hosts,
``templates`` templates (and paths and kinds) per host and ``lineage`` URLs' descent are
tracked, the least recently used (or oldest) forgotten first.
"""

from __future__ import annotations

import re
import sys
from collections import OrderedDict
from collections.abc import Sequence

import msgspec

from gossamer.frontier.trapvariants import (
    Echoes,
    appends,
    folded,
    grows_a_value,
    odd_path,
    reordered,
    variant,
)
from gossamer.urls import fingerprint

TRAP_REASONS = (
    "trap-loop",
    "trap-session",
    "trap-nesting",
    "trap-calendar",
    "trap-generated",
    "trap-facets",
    "trap-template",
)
"""The rejection reasons of :class:`TrapGuard`, as the frontier's stats count them."""

_DIGITS = re.compile(r"[0-9]+")
_DIGIT = re.compile(r"[0-9]")
_LETTER = re.compile(r"[A-Za-z]")
_HEX_ID = re.compile(r"(?=[0-9a-f-]*[0-9])[0-9a-f]{8,}(?:-[0-9a-f]{4,}){0,4}", re.IGNORECASE)
_TOKEN_CHARS = re.compile(r"[A-Za-z0-9_~-]{6,}")
_MAYBE_ID = re.compile(r"[A-Za-z0-9_~-]{6,}(?:\.[A-Za-z][A-Za-z0-9]{0,4})?")
"""A segment that could be an id: six or more token characters, an extension perhaps."""
_SWITCH = re.compile(r"(?<=[0-9])(?=[A-Za-z])|(?<=[A-Za-z])(?=[0-9])")
"""A place where letters turn into digits or back."""
_EXTENSION = re.compile(r"\.[A-Za-z][A-Za-z0-9]{0,4}")
_DATE = re.compile(
    r"(?:19|20)[0-9]{2}(?:[-_.](?:0?[1-9]|1[0-2])(?:[-_.](?:0?[1-9]|[12][0-9]|3[01]))?"
    r"|(?:0[1-9]|1[0-2])(?:0[1-9]|[12][0-9]|3[01]))"
)
"""A date in one segment or value: 2026-11-28, 2026_11, 20261128."""
_YEAR = re.compile(r"(?:19|20)[0-9]{2}")
_MONTH = re.compile(r"0?[1-9]|1[0-2]")
_ASPNET_SESSION = re.compile(r"\([A-Z]\([A-Za-z0-9]{16,}\)\)")
_UPPER = re.compile(r"[A-Z]")
_MONTHS = "january february march april may june july august september october november december"
_DATE_NAMES = frozenset(
    [*_MONTHS.split(), *(m[:3] for m in _MONTHS.split()), "sept"]
    + [f"{d}day" for d in ("mon", "tues", "wednes", "thurs", "fri", "satur", "sun")]
    + ["mon", "tue", "tues", "wed", "thu", "thur", "thurs", "fri", "sat", "sun"]
)
"""Month and weekday names (English, in full and abbreviated): date parts after a year or a
date (``/events/2026/november``)."""
_ID, _DATED = "{id}", "{date}"


class TrapLimits(msgspec.Struct, frozen=True):
    """The bounds of :class:`TrapGuard` (see the module docstring)."""

    per_template: int = 100_000
    """URLs of one template per host (``trap-template``)."""
    query_combos: int = 8
    """Query name combinations per path (``trap-facets``)."""
    facet_links: int = 4
    """Combinations of two names or more one batch offers for a path that make it faceted."""
    date_steps: int = 2
    """Pages of a dated kind that may descend from one another (``trap-calendar``)."""
    token_steps: int = 1
    """Pages of a kind with random tokens that may descend from one another
    (``trap-generated``)."""
    max_ids: int = 2
    """Id segments (tokens, long numbers) one path may hold (``trap-nesting``)."""
    loop_repeats: int = 3
    """Repeats in a row of a run of path segments that make a loop (``trap-loop``)."""
    spellings: int = 2
    """Spellings of one path (and query) in letter case or query order per host, besides
    the one in lower case and order (``trap-template``)."""
    growth_steps: int = 1
    """Pages in a row whose query only grows their page's by appending (``trap-facets``)."""
    echo_steps: int = 1
    """Pages in a row that may link the same subdirectories as their parent (``trap-loop``,
    :class:`~gossamer.frontier.trapvariants.Echoes`)."""
    templates: int = 2000
    """Templates (and paths, and kinds) tracked per host."""
    hosts: int = 10_000
    """Hosts tracked."""
    lineage: int = 100_000
    """URLs whose descent (kind, steps) is remembered, over all hosts."""


class TrapStats(msgspec.Struct, frozen=True):
    """A frozen snapshot of a :class:`TrapGuard`."""

    rejected: dict[str, int]
    """URLs turned away, by reason (every reason of :data:`TRAP_REASONS`, 0 included)."""
    hosts: int
    """Hosts tracked now."""
    templates: int
    """Templates tracked now, over all hosts."""
    lines: int = 0
    """URLs whose line of descent is remembered now."""


class _Template(msgspec.Struct):
    count: int
    shallowest: int


class _HostTraps:
    """One host's templates (with their counts), paths (with their query combinations) and
    kinds that showed a token or a date (with their counts)."""

    __slots__ = ("faceted", "kinds", "paths", "spellings", "templates")

    def __init__(self) -> None:
        self.spellings: OrderedDict[str, int] = OrderedDict()
        """Paths with a capital letter or a query out of order, folded (:func:`folded`):
        the spellings of each seen."""
        self.templates: OrderedDict[str, _Template] = OrderedDict()
        self.paths: OrderedDict[str, set[str]] = OrderedDict()
        self.faceted: set[str] = set()
        """Path templates found to be faceted navigation."""
        self.kinds: OrderedDict[str, list[int]] = OrderedDict()
        """Kinds (:func:`kinds_of`) that showed a token or a date: their URLs seen since, of
        them with a token, with a date."""


class Shape(msgspec.Struct):
    """What the guard reads of a URL: its path template, query names and what it holds (one
    is made per new URL)."""

    path: str
    names: str
    """The sorted query names, joined by ``&`` (empty without a query)."""
    dated: bool
    segments: tuple[str, ...]
    token: bool = False
    """A path segment or query value is a random token."""
    ids: int = 0
    """Path segments that are ids (tokens, UUIDs, numbers of eight digits or more)."""

    @property
    def template(self) -> str:
        """The path template, then the query names with their values folded."""
        return f"{self.path}?{self.names}" if self.names else self.path


def kinds_of(segments: Sequence[str], names: str = "") -> tuple[str, str]:
    """A URL's *line* (its path's outline: each segment ``*``, a trailing slash and the last
    segment's extension kept) and its *kind* (the line with the first segment as written,
    when it is a word, and the query names)."""
    last = segments[-1]
    dot = last.rfind(".")
    end = "*" + last[dot:] if dot >= 0 and _EXTENSION.fullmatch(last, dot) else "*"
    end = end if last else ""
    line = "/*" * (len(segments) - 1) + "/" + end
    first, kind = segments[0], line
    if first and _DIGIT.search(first) is None:
        kind = "/" + first + (line[2:] if len(segments) > 1 else "")
    return line, f"{kind}?{names}" if names else kind


def is_token(text: str) -> bool:
    """Whether a path segment's stem or a query value looks machine-made: hexadecimal of
    eight characters or more with a digit (a hash, a UUID), or six or more letters and
    digits switching three times or more (``a3f1-2c``, ``dQw4w9WgXcQ``), never a word with
    a number (``sha256``, ``python-3-12``, ``win32api``)."""
    if len(text) >= 8 and _HEX_ID.fullmatch(text):
        return True
    return _TOKEN_CHARS.fullmatch(text) is not None and len(_SWITCH.findall(text)) >= 3


def shape_of(canonical_url: str) -> Shape:
    """The :class:`Shape` of a canonical URL."""
    rest = canonical_url.partition("://")[2]
    path, _, query = rest.partition("/")[2].partition("?")
    segments = tuple(path.split("/"))
    shape = _fold_path(segments)
    if query:
        pairs = [part.partition("=") for part in query.split("&") if part]
        shape.names = "&".join(sorted({name for name, _, _ in pairs}))
        for _, _, value in pairs:
            if _DIGIT.search(value) is None:
                continue
            if _DATE.fullmatch(value) or (len(value) == 4 and _YEAR.fullmatch(value)):
                shape.dated = True  # a date, or a year (``?y=2026&m=11``)
            elif _LETTER.search(value) is not None and len(value) >= 4:
                shape.token = True  # letters and digits in a value: an id, not a count
    return shape


def _fold_path(segments: tuple[str, ...]) -> Shape:
    folded = []
    shape = Shape("", "", False, segments)
    year = named = False  # named: a month's or weekday's name may follow
    for segment in segments:
        if ";" in segment:
            segment = _fold_parameters(segment, shape)
        if _DIGIT.search(segment) is None:
            if named and segment.lower() in _DATE_NAMES:
                shape.dated = True  # /2026/november, /2026-11-27/friday
                folded.append(_DATED)
            else:
                folded.append(segment)
            year = named = False
            continue
        size = len(segment)  # the regexes below are only tried where they could match
        named = False
        if (size >= 6 and _DATE.fullmatch(segment)) or (
            year and size <= 2 and _MONTH.fullmatch(segment)
        ):
            shape.dated = named = True
            folded.append(_DATED)
        elif size >= 6 and _MAYBE_ID.fullmatch(segment) and (name := _fold_id(segment)):
            folded.append(name)
            shape.ids += 1
            shape.token = shape.token or _LETTER.search(segment) is not None
        else:
            folded.append(_DIGITS.sub("#", segment))
        year = size == 4 and _YEAR.fullmatch(segment) is not None
        named = named or year
    shape.path = "/" + "/".join(folded).lower()  # /GuIde and /guide: one template
    return shape


def _fold_parameters(segment: str, shape: Shape) -> str:
    """A segment's path parameters (``guide;v=7;state=9f3a``) folded as query values are
    (``guide;state;v``); one with a value marks the URL as one with a token, as a session
    or a version rarely rides in a real page's path."""
    stem, *parameters = segment.split(";")
    names = sorted({name for name, _, _ in (p.partition("=") for p in parameters) if name})
    if any(value for _, _, value in (p.partition("=") for p in parameters)):
        shape.token = True
    return ";".join([stem, *names])


def _fold_id(segment: str) -> str | None:
    """``segment`` folded as an id (its extension kept), if it is one."""
    dot = segment.rfind(".")
    extension = "" if dot < 0 or not _EXTENSION.fullmatch(segment, dot) else segment[dot:]
    stem = segment[: len(segment) - len(extension)]
    if len(stem) < 6 or not is_token(stem):
        return None
    return _ID + extension


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
        self._lineage: OrderedDict[int, tuple[str, int]] = OrderedDict()
        """URL fingerprint -> its line and the pages of that line it descends from. Ordered,
        not a dict: a dict's oldest key is found by scanning past every key deleted before it
        (``next(iter(d))`` after each eviction: 15 µs a URL remembered at 50,000, 18 µs at
        100,000); an ``OrderedDict`` drops it at once."""
        self._growth: OrderedDict[int, int] = OrderedDict()
        """URL fingerprint -> the pages in a row whose query grew by appending to it."""
        self._last: tuple[str, tuple[str, int]] | None = None
        self._echoes = Echoes(self._limits.echo_steps, self._limits.lineage)

    def screen(
        self, urls: Sequence[tuple[str, str, int]], source: str | None = None
    ) -> list[str | None]:
        """:meth:`check` each of a batch of (host key, canonical URL, depth) found on the page
        ``source`` (None: unknown), after looking for faceted navigation in the batch and
        for subdirectories the page's parent linked too (see the module docstring)."""
        self._spot_facets(urls)
        echoing = None if source is None else self._echoes.echoing(urls, source)
        if not echoing:
            return [self.check(key, url, depth, source) for key, url, depth in urls]
        self._rejected["trap-loop"] += len(echoing)
        return [
            "trap-loop" if at in echoing else self.check(key, url, depth, source)
            for at, (key, url, depth) in enumerate(urls)
        ]

    def _descent_of(self, source: str) -> tuple[str, int]:
        """The line and descent of the page ``source`` (one not remembered: 0 of its own
        line); the last page's is kept, as a batch's URLs all ask for it."""
        last = self._last
        if last is not None and last[0] == source:
            return last[1]
        found = self._lineage.get(fingerprint(source))
        if found is None:
            path = source.partition("://")[2].partition("/")[2].partition("?")[0]
            found = (kinds_of(path.split("/"))[0], 0)
        self._last = (source, found)
        return found

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

    def check(
        self,
        key: str,
        canonical_url: str,
        depth: int,
        source: str | None = None,
    ) -> str | None:
        """None when the URL (new to the crawl, of host ``key``, found on the page
        ``source``, None if unknown) may be queued, and it is counted; else the reason it
        may not, and it is counted as rejected."""
        if depth == 0:
            return None  # a seed: the user's own choice
        reason = self._judge(key, canonical_url, depth, source)
        if reason is not None:
            self._rejected[reason] += 1
        return reason

    def _judge(self, key: str, canonical_url: str, depth: int, source: str | None) -> str | None:
        limits = self._limits
        tail = canonical_url.partition("://")[2].partition("/")[2]
        reason = self._variant_of_a_page(key, tail, source)
        if reason is not None:
            return reason
        if "?" not in tail and "(" not in tail and ";" not in tail and _DIGIT.search(tail) is None:
            return self._judge_plain(key, canonical_url, tail, source)
        shape = shape_of(canonical_url)
        if loops(shape.segments, limits.loop_repeats):
            return "trap-loop"
        if _is_session(shape):
            return "trap-session"
        if shape.ids > limits.max_ids:
            return "trap-nesting"
        host = self._host(key)
        if "&" in shape.names and shape.path in host.faceted:
            return "trap-facets"
        if source is not None and shape.names and (steps := self._grows(canonical_url, source)):
            if steps > limits.growth_steps:
                return "trap-facets"
            shape.token = True  # a kind whose queries grow is generated: its line is bounded
        if host.kinds or shape.token or shape.dated:
            reason = self._descent(host, canonical_url, shape, source)
            if reason is not None:
                return reason
        name = shape.template
        template = host.templates.get(name)
        if template is not None:
            host.templates.move_to_end(name)
            if source is None and shape.dated and depth > template.shallowest + limits.date_steps:
                return "trap-calendar"
            if template.count >= limits.per_template:
                return "trap-template"
        elif shape.names and not self._new_combination(host, shape):
            return "trap-facets"
        self._count(host, name, template, depth)
        return None

    def _variant_of_a_page(self, key: str, tail: str, source: str | None) -> str | None:
        """The reason a URL (its ``tail`` after the host) is a variant of a page: a path grown
        by slashes, file names or encoding, one more spelling in letter case or query order,
        path parameters found on the same path's (None: it is none)."""
        if odd_path(tail):
            return "trap-loop"
        if (_UPPER.search(tail) or ("&" in tail and reordered(tail))) and self._spellings(
            key, tail
        ) > self._limits.spellings:
            return "trap-template"
        if source is not None and ";" in tail and variant(tail, source):
            return "trap-template"
        return None

    def _judge_plain(self, key: str, url: str, tail: str, source: str | None) -> str | None:
        """:meth:`_judge` for a URL with nothing to fold: one URL per template, not tracked;
        a loop to look for, and the line of a kind known to be generated."""
        limits = self._limits
        if tail.count("/") >= limits.loop_repeats and loops(
            tuple(tail.split("/")), limits.loop_repeats
        ):
            return "trap-loop"
        host = self._hosts.get(key)
        if host is None or not host.kinds:
            return None
        shape = Shape("", "", False, tuple(tail.split("/")))
        return self._descent(host, url, shape, source)

    def _descent(self, host: _HostTraps, url: str, shape: Shape, source: str | None) -> str | None:
        """The reason a URL of a generated kind descends from too many pages of its line in
        a row (None: it does not, or its page is unknown); notes what it shows of its kind
        and, for a kind that showed a token or a date, its line of descent."""
        kinds, marked = host.kinds, shape.token or shape.dated
        line, kind = kinds_of(shape.segments, shape.names)
        counts = kinds.get(kind)
        if counts is None:
            if not marked:
                return None
            if len(kinds) >= self._limits.templates:
                kinds.popitem(last=False)
            counts = kinds[kind] = [0, 0, 0]
        counts[0] += 1
        counts[1] += shape.token
        counts[2] += shape.dated
        seen, tokens, dates = counts
        steps, reason = None, "trap-generated"
        if tokens >= 2 and 4 * tokens >= seen:
            steps = self._limits.token_steps
        elif dates and 4 * dates >= seen:
            steps, reason = self._limits.date_steps, "trap-calendar"
        descent = 0
        if source is not None:
            parent_line, parent_descent = self._descent_of(source)
            descent = parent_descent + 1 if parent_line == line else 0
        self._remember(url, line, descent)
        if source is None or steps is None or descent <= steps:
            return None
        return reason

    def _spellings(self, key: str, tail: str) -> int:
        """How many spellings of ``tail`` in letter case or query order host ``key`` has
        shown, this one counted."""
        spellings = self._host(key).spellings
        plain = folded(tail)
        count = spellings.get(plain, 0) + 1
        spellings[plain] = count
        spellings.move_to_end(plain)
        if len(spellings) > self._limits.templates:
            spellings.popitem(last=False)
        return count

    def _grows(self, url: str, source: str) -> int:
        """How many pages in a row ``url``'s query only appended to its page's (``?tags=red``
        then ``?tags=red,blue``, ``?q=a&q=b``), this one counted (0: it did not), noted."""
        mine, theirs = url.partition("?")[2], source.partition("?")[2]
        if not theirs or not (appends(mine, theirs) or grows_a_value(mine, theirs)):
            return 0
        steps = self._growth.get(fingerprint(source), 0) + 1
        growth = self._growth
        if len(growth) >= self._limits.lineage:
            growth.popitem(last=False)
        growth[fingerprint(url)] = steps
        return steps

    def _remember(self, canonical_url: str, line: str, descent: int) -> None:
        lineage = self._lineage
        if len(lineage) >= self._limits.lineage:
            lineage.popitem(last=False)
        lineage[fingerprint(canonical_url)] = (sys.intern(line), descent)  # a few lines a host

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
        lines = len(self._lineage) + len(self._growth) + len(self._echoes)
        return TrapStats(dict(self._rejected), len(self._hosts), templates, lines)


def _is_session(shape: Shape) -> bool:
    if "sess" in shape.names.lower():
        return True
    return "(" in shape.path and any(_ASPNET_SESSION.fullmatch(s) for s in shape.segments)
