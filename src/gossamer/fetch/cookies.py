"""The crawl's cookie jar (RFC 6265, with RFC 6265bis's safer rules), bounded against hostile
sites.

A cookie is keyed by (domain, path, name). A cookie set without a ``Domain`` attribute is
*host-only*: it goes back to the host that set it and to no other, not even a subdomain. A
``Domain`` attribute is kept only when the request's host lies within it, it is no public
suffix (the Public Suffix List, its private section too: ``co.uk``, ``github.io``), and the
caller's ``allow`` predicate admits it (the crawl admits a domain in its scope, a login its
own domain); otherwise the cookie is host-only. A cookie whose ``Domain`` is a public suffix
the host lies under is refused (RFC 6265 5.3 step 5), and one set by that very suffix as a
host, or by an IP address, is host-only. A cookie goes to hosts that domain-match it, on
paths under its path, over https only when ``Secure``; a ``Secure`` cookie is only set over
https, and a plain-http answer cannot replace one (6265bis "leave secure cookies alone");
``__Secure-`` and ``__Host-`` prefixes are enforced. ``Max-Age`` wins over ``Expires``;
neither reaches past `MAX_AGE` (400 days). Names and values are printable ASCII (no control
character can reach a request header).

Bounds: at most `MAX_COOKIE_BYTES` per cookie (name and value), `MAX_PER_DOMAIN` per site (a
registrable domain, eTLD+1, with all its hosts: past it the site's least recently set cookie
goes, never another site's) and `MAX_COOKIES` in all (the least recently set goes first); at
most `MAX_SET_COOKIES` ``Set-Cookie`` lines of one answer are read. A request's ``Cookie``
header holds at most `MAX_HEADER_BYTES` (a login domain's, `MAX_LOGIN_HEADER_BYTES`): the
cookies in RFC 6265 5.4's order (longer paths first, then the first set), those that no
longer fit left out, so a site's hosts cannot make another host's requests too big for its
server to take. The Public Suffix List is the one ``publicsuffixlist`` ships (no network),
read once, when a cookie first needs it.
"""

from __future__ import annotations

import functools
import itertools
import re
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit

from gossamer.addresses import ip_literal
from gossamer.addresses import public_suffixes as _public_suffixes

__all__ = [
    "CookieJar",
    "CookieRow",
    "is_public_suffix",
    "parse_set_cookie",
    "read_cookies_txt",
    "site_of",
]

Clock = Callable[[], float]
CookieRow = tuple[str, str, str, str, bool, float | None, bool]
"""A stored cookie: (domain, path, name, value, secure, expires or None for the session,
host_only). Rows of six fields (no host_only) are read as domain cookies."""
Key = tuple[str, str, str]
_V = TypeVar("_V")
MAX_COOKIES = 3000
"""The most cookies the jar holds (RFC 6265 6.1's minimum a client supports)."""
MAX_PER_DOMAIN = 200
"""The most cookies of one site (registrable domain, all its hosts together): a hostile site
cannot crowd the others out, however many hosts it has."""
MAX_COOKIE_BYTES = 4096
"""The longest cookie (name and value) kept (RFC 6265 6.1)."""
MAX_HEADER_BYTES = 7168
"""The longest ``Cookie`` header a request carries (7 KiB: with its name, one header line
within nginx's 8 KiB buffer and Apache's 8190-byte field limit; a site's sibling hosts may
hold 200 cookies of 4 KiB, 800 KB, which a server answers 400 or 431)."""
MAX_LOGIN_HEADER_BYTES = 32768
"""The longest ``Cookie`` header of a login domain's request (32 KiB, what Kestrel takes of
all headers): a single sign-on session may be several cookies of 4 KiB, ASP.NET's in chunks,
and only the login domain's own hosts set them (no other site's cookie covers it)."""
MAX_SET_COOKIES = 100
"""The most ``Set-Cookie`` lines of one answer read."""
MAX_AGE = 400 * 86_400
"""The longest a cookie lives (RFC 6265bis 5.6.1)."""
MAX_COOKIES_FILE = 16 << 20
"""The largest ``cookies.txt`` read (a browser's export of every site's cookies fits)."""
_MAX_ATTRIBUTE = 1024
_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}")
_VALUE = re.compile(r"[\x20-\x3a\x3c-\x7e]*")
"""Printable ASCII but ``;``: what a value may hold (no control character, no header split)."""
_MAX_AGE_VALUE = re.compile(r"-?[0-9]{1,18}")


class CookieJar:
    """The crawl's cookies (see the module doc). ``on_change`` gets every cookie row after
    each change; ``on_update`` gets the rows set and the keys removed by each change (what a
    store writes incrementally)."""

    def __init__(
        self,
        rows: Iterable[Sequence[object]] = (),
        *,
        clock: Clock = time.time,
        on_change: Callable[[list[CookieRow]], None] | None = None,
        on_update: Callable[[list[CookieRow], list[Key]], None] | None = None,
    ) -> None:
        self._cookies: OrderedDict[Key, CookieRow] = OrderedDict()
        """Every cookie, the least recently set first. Ordered, not a dict: a dict finds its
        oldest key by scanning past every key deleted before it (a site's, in ``_sites``,
        are dicts: at most `MAX_PER_DOMAIN`, the scan is short)."""
        self._domains: dict[str, dict[Key, tuple[int, CookieRow]]] = {}
        """The cookies by their domain (what a request's host looks up), each with when it
        was first set, as a count (set again, it keeps it: RFC 6265 5.3 step 11.3), which
        orders a ``Cookie`` header's cookies of equal paths."""
        self._sites: dict[str, dict[Key, None]] = {}
        """The cookies' keys by site (`site_of` their domain), the least recently set first."""
        self._serial = itertools.count()
        self._secure = 0
        self._clock = clock
        self._on_change = on_change
        self._on_update = on_update
        now = clock()
        for row in rows:
            cookie = _row(row)
            expired = cookie is not None and cookie[5] is not None and cookie[5] <= now
            if cookie is not None and not expired:
                self._store(cookie)

    def __len__(self) -> int:
        return len(self._cookies)

    def rows(self) -> list[CookieRow]:
        """Every cookie not yet expired."""
        now = self._clock()
        return [r for r in self._cookies.values() if r[5] is None or r[5] > now]

    def header(self, url: str, limit: int = MAX_HEADER_BYTES) -> str | None:
        """The ``Cookie`` header for ``url`` of at most ``limit`` characters, or None."""
        if not self._cookies:
            return None
        parts = urlsplit(url)
        host, path = _host(parts.hostname), parts.path or "/"
        secure = parts.scheme == "https"
        now = self._clock()
        found = []
        for domain in _domains_of(host):
            for created, row in self._domains.get(domain, {}).values():
                if (
                    (domain == host or not row[6])
                    and _path_match(path, row[1])
                    and (secure or not row[4])
                    and (row[5] is None or row[5] > now)
                ):
                    pair = f"{row[2]}={row[3]}" if row[2] else row[3]
                    found.append((-len(row[1]), created, pair))
        if len(found) <= 1:
            return found[0][2] if found and len(found[0][2]) <= limit else None
        found.sort()  # longer paths first, then the first set (RFC 6265 5.4 step 2)
        pairs = [pair for _, _, pair in found]
        header = "; ".join(pairs)
        return header if len(header) <= limit else _within(pairs, limit)

    def add(self, rows: Iterable[Sequence[object]]) -> None:
        """Store ``rows`` (an expired one removes its cookie; when its site or the jar is
        full, the site's or the jar's least recently set cookie makes room)."""
        now = self._clock()
        changed: list[CookieRow] = []
        removed: list[Key] = []
        for raw in rows:
            row = _row(raw)
            if row is None:
                continue
            key = row[:3]
            if row[5] is not None and row[5] <= now:
                if self._drop(key):
                    removed.append(key)
            elif self._cookies.get(key) != row:
                removed.extend(self._store(row))
                changed.append(row)
        # what the store is told: each cookie as it ends, not one set, then evicted
        changed = [row for row in changed if self._cookies.get(row[:3]) == row]
        removed = [key for key in removed if key not in self._cookies]
        self._changed(changed, removed)

    def clear(self, within: str) -> None:
        """Forget the cookies of ``within`` and its subdomains."""
        keys = [k for k in self._cookies if domain_match(k[0], within)]
        for key in keys:
            self._drop(key)
        self._changed([], keys)

    def parse(
        self, url: str, set_cookies: Iterable[str], allow: Callable[[str], bool] | object
    ) -> list[CookieRow]:
        """The cookies ``Set-Cookie`` values set for ``url``; a ``Domain`` attribute is kept
        when ``allow`` (a predicate, or an object with a ``covers`` one, such as a login)
        admits it, else the cookie is host-only. A plain-http answer cannot replace a secure
        cookie."""
        covers = getattr(allow, "covers", allow)
        assert callable(covers)
        rows = []
        for line in list(set_cookies)[:MAX_SET_COOKIES]:
            row = parse_set_cookie(url, line, covers, self._clock())
            if row is not None and not self._shadows_secure(url, row):
                rows.append(row)
        return rows

    def _shadows_secure(self, url: str, row: CookieRow) -> bool:
        if not self._secure or url.startswith("https:"):
            return False
        return any(
            c[4]
            and c[2] == row[2]
            and (domain_match(c[0], row[0]) or domain_match(row[0], c[0]))
            and _path_match(row[1], c[1])
            for c in self._cookies.values()
        )

    def _store(self, row: CookieRow) -> list[Key]:
        """Keep ``row`` as the most recently set cookie; return the keys evicted for it."""
        key = row[:3]
        evicted = []
        stored = self._domains.get(key[0], {}).get(key)
        created = None if stored is None else stored[0]
        if not self._drop(key):
            site = self._sites.get(site_of(key[0]), {})
            if len(site) >= MAX_PER_DOMAIN:
                evicted.append(next(iter(site)))
            elif len(self._cookies) >= MAX_COOKIES:
                evicted.append(next(iter(self._cookies)))
            for oldest in evicted:
                self._drop(oldest)
        self._put(row, created)
        return evicted

    def _put(self, row: CookieRow, created: int | None = None) -> None:
        key = row[:3]
        self._cookies[key] = row
        created = next(self._serial) if created is None else created
        self._domains.setdefault(row[0], {})[key] = (created, row)
        self._sites.setdefault(site_of(row[0]), {})[key] = None
        self._secure += row[4]

    def _drop(self, key: Key) -> bool:
        row = self._cookies.pop(key, None)
        if row is None:
            return False
        self._secure -= row[4]
        _discard(self._domains, key[0], key)
        _discard(self._sites, site_of(key[0]), key)
        return True

    def _changed(self, changed: list[CookieRow], removed: list[Key]) -> None:
        if not changed and not removed:
            return
        if self._on_update is not None:
            self._on_update(changed, removed)
        if self._on_change is not None:
            self._on_change(self.rows())


def _discard(index: dict[str, dict[Key, _V]], name: str, key: Key) -> None:
    """Remove ``key`` from ``index[name]``, and ``name`` when it holds no other."""
    keys = index[name]
    del keys[key]
    if not keys:
        del index[name]


def _within(pairs: list[str], limit: int) -> str | None:
    """``pairs`` joined as a ``Cookie`` header of at most ``limit`` characters: each in turn
    that still fits."""
    kept = []
    size = -2  # the first pair has no "; " before it
    for pair in pairs:
        if size + 2 + len(pair) <= limit:
            kept.append(pair)
            size += 2 + len(pair)
    return "; ".join(kept) or None


def _domains_of(host: str) -> list[str]:
    """``host`` and the domains above it (those whose cookies it may get)."""
    if not host or _is_ip(host):
        return [host]
    labels = host.split(".")
    return [".".join(labels[i:]) for i in range(len(labels))]


def parse_set_cookie(
    url: str, line: str, allow: Callable[[str], bool], now: float
) -> CookieRow | None:
    """The cookie one ``Set-Cookie`` value sets for ``url`` (RFC 6265 5.2), or None when it
    is malformed or refused (see the module doc)."""
    parts = urlsplit(url)
    host = _host(parts.hostname)
    secure_origin = parts.scheme == "https"
    pair, _, attributes = line.partition(";")
    name, eq, value = pair.partition("=")
    name, value = name.strip(" \t"), value.strip(" \t")
    if not eq or not _NAME.fullmatch(name) or not _VALUE.fullmatch(value):
        return None
    if len(name) + len(value) > MAX_COOKIE_BYTES or not host:
        return None
    domain, path, secure, max_age, expires = _attributes(attributes, now)
    if secure and not secure_origin:
        return None
    host_only = _host_only(host, domain, allow)
    if host_only is None:
        return None
    domain = host if host_only or domain is None else domain
    if path is None:
        path = parts.path.rsplit("/", 1)[0] if parts.path.count("/") > 1 else "/"
    if name.startswith("__Secure-") and not secure:
        return None
    if name.startswith("__Host-") and (not secure or not host_only or path != "/"):
        return None
    expiry = max_age if max_age is not None else expires
    if expiry is not None:
        expiry = min(expiry, now + MAX_AGE)
    return domain, path, name, value, secure, expiry, host_only


def _attributes(
    attributes: str, now: float
) -> tuple[str | None, str | None, bool, float | None, float | None]:
    """A ``Set-Cookie`` value's Domain, Path, Secure, Max-Age (as a time) and Expires
    (RFC 6265 5.2), each None (False) when absent or malformed; the last of each wins."""
    domain = path = None
    secure = False
    max_age: float | None = None
    expires: float | None = None
    for attribute in attributes.split(";")[:32]:
        key, _, argument = attribute.partition("=")
        key, argument = key.strip(" \t").lower(), argument.strip(" \t")
        if len(argument) > _MAX_ATTRIBUTE:
            continue
        if key == "domain" and argument:
            domain = argument.lstrip(".").lower().rstrip(".")
        elif key == "path":
            path = argument if argument.startswith("/") else None
        elif key == "secure":
            secure = True
        elif key == "max-age" and _MAX_AGE_VALUE.fullmatch(argument):
            max_age = now + min(int(argument), MAX_AGE) if int(argument) > 0 else now - 1
        elif key == "expires":
            import http.cookiejar  # first cookie with an expiry date: most crawls set none

            when = http.cookiejar.http2time(argument)  # type: ignore[attr-defined]
            expires = when if when is not None else expires
    return domain, path, secure, max_age, expires


def _host_only(host: str, domain: str | None, allow: Callable[[str], bool]) -> bool | None:
    """Whether a cookie ``host`` sets with ``domain`` is host-only; None when it is refused
    (RFC 6265 5.3 steps 5 and 6). A domain wider than ``allow`` admits is narrowed to the
    host."""
    if domain is None:
        return True
    if domain == host:
        return _host_only_domain(host)
    if not domain_match(host, domain) or is_public_suffix(domain):  # no IP address matches
        return None
    return not allow(domain)


@functools.lru_cache(maxsize=4096)
def is_public_suffix(domain: str) -> bool:
    """Whether ``domain`` (lowercase) is a public suffix: a TLD, an entry of the list's ICANN
    section (``co.uk``) or of its private one (``github.io``): no cookie may cover it."""
    return not _is_ip(domain) and _public_suffixes().is_public(domain)


@functools.lru_cache(maxsize=4096)
def _host_only_domain(domain: str) -> bool:
    """Whether every cookie of ``domain`` is host-only: an IP address or a public suffix."""
    return _is_ip(domain) or is_public_suffix(domain)


@functools.lru_cache(maxsize=4096)
def site_of(domain: str) -> str:
    """The site ``domain`` (lowercase) belongs to: its registrable domain (eTLD+1); itself
    when it is a public suffix or an IP address."""
    if _is_ip(domain):
        return domain
    return _public_suffixes().privatesuffix(domain) or domain


def domain_match(host: str, domain: str) -> bool:
    """Whether ``host`` is ``domain`` or one of its subdomains (RFC 6265 5.1.3)."""
    return host == domain or (host.endswith("." + domain) and not _is_ip(host))


def _path_match(path: str, cookie_path: str) -> bool:
    if path == cookie_path or cookie_path == "/":
        return True
    if not path.startswith(cookie_path):
        return False
    return cookie_path.endswith("/") or path[len(cookie_path)] == "/"


def _host(hostname: str | None) -> str:
    return (hostname or "").lower().rstrip(".")


def _is_ip(host: str) -> bool:
    """Whether ``host`` (a URL's host, a ``Domain`` attribute, a stored cookie's domain) is
    an IP address: one only that very host may set and get cookies for (RFC 6265 5.1.3)."""
    return ip_literal(host) is not None


def _row(row: Sequence[object]) -> CookieRow | None:
    """A stored or given row as a `CookieRow`, or None when it could not be sent safely."""
    if len(row) not in (6, 7):
        return None
    domain, path, name, value, secure, expires = row[:6]
    host_only = bool(row[6]) if len(row) == 7 else False
    if not (isinstance(domain, str) and isinstance(path, str)):
        return None
    if not (isinstance(name, str) and isinstance(value, str)):
        return None
    if (name and not _NAME.fullmatch(name)) or not _VALUE.fullmatch(value):
        return None
    if len(name) + len(value) > MAX_COOKIE_BYTES:
        return None
    when = float(expires) if isinstance(expires, int | float) and expires else None
    domain = domain.lower()
    if not host_only and _host_only_domain(domain):
        host_only = True  # stored before the list was checked, or given: no wider than that host
    return domain, path or "/", name, value, bool(secure), when, host_only


def read_cookies_txt(path: Path, within: str) -> tuple[CookieRow, ...]:
    """The cookies of a Netscape ``cookies.txt`` file whose domain lies within ``within``
    (its second field says whether subdomains get the cookie). Raises ValueError naming the
    line of a malformed entry (never its value), or saying the file is larger than
    `MAX_COOKIES_FILE`."""
    rows = []
    with path.open("rb") as file:
        raw = file.read(MAX_COOKIES_FILE + 1)
    if len(raw) > MAX_COOKIES_FILE:
        raise ValueError(f"{path} is larger than {MAX_COOKIES_FILE >> 20} MiB")
    text = raw.decode("utf-8")
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("#HttpOnly_"):
            line = line[len("#HttpOnly_") :]
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) != 7:
            raise ValueError(f"{path} line {number}: expected 7 tab-separated fields")
        domain, subdomains, cpath, secure, expires, name, value = fields
        domain = domain.lstrip(".").lower()
        if not domain_match(domain, within):
            continue
        try:
            when = float(expires)
        except ValueError:
            raise ValueError(f"{path} line {number}: expiry is not a number") from None
        host_only = subdomains.upper() != "TRUE"
        rows.append(
            (domain, cpath or "/", name, value, secure.upper() == "TRUE", when or None, host_only)
        )
    return tuple(rows)
