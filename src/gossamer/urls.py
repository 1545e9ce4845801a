"""URL resolution, canonicalization, fingerprints and crawl scope.

Every stage of gossamer compares URLs through :func:`canonicalize` and :func:`fingerprint`;
there is no second way to normalise a URL. URLs are parsed by one library, ada (the WHATWG URL
Standard's parser, through ``can_ada``): :class:`Resolver` resolves the links of a page with
it, :func:`canonicalize` parses what it cannot take as canonical already with it, and adds
gossamer's own rules on top (see its doc).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from typing import NamedTuple
from urllib.parse import quote

import can_ada
import xxhash

from gossamer.addresses import domain_key, ip_literal

_SCHEMES = frozenset({"http:", "https:"})
_C0_AND_SPACE = "".join(map(chr, range(0x21)))
_NO_TAB_NEWLINE = str.maketrans("", "", "\t\n\r")
_AUTHORITY_END = re.compile(r"[/\\?#]")
_SLASHES = ("/", "\\")
_ABSOLUTE_PREFIXES = ("http://", "https://")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")

MAX_REFERENCE_CHARS = 16_384
"""Longer references are not resolved (huge ``data:`` URLs, traps)."""
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_PCT_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_LONE_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
# Characters left as they are in each component (RFC 3986 sub-delims, ':' '@' and, for the
# path, '/'). Everything else outside the unreserved set is percent-encoded.
_PATH_SAFE = "/:@!$&'()*+,;=-._~"
_QUERY_SAFE = "/?:@!$&'()*+,;=-._~"
_USERINFO_SAFE = ":!$&'()*+,;=-._~"
_PLAIN = re.compile(r"[A-Za-z0-9\-._~/:@!$&'()*+,;=?]*")
# A URL already in canonical form (the common case for links a parser resolved): lower-case
# http(s) scheme and host, no user info, no default port, a path of safe characters, a query
# of safe characters, no fragment. Dot segments are ruled out apart.
_HOST = r"[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?"
# 1 to 65535 without a leading zero: a port out of range is no URL (WHATWG's parse fails).
# Five digits tried first: the shorter alternative first backtracks on every 5-digit port.
_PORT = r"(?:[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]|[1-9][0-9]{0,3})"
_CANONICAL = re.compile(
    rf"(?:http://{_HOST}(?::(?!80/){_PORT})?|https://{_HOST}(?::(?!443/){_PORT})?)"
    r"/[A-Za-z0-9\-._~!$&'()*+,;=:@/]*"
    r"(?:\?[A-Za-z0-9\-._~!$'()*+,;=:@/?]+(?:&[A-Za-z0-9\-._~!$'()*+,;=:@/?]+)*)?"
)
"""A canonical query has no empty pair: no ``&`` leading, trailing or doubled."""


class InvalidURL(ValueError):
    """A URL gossamer cannot crawl: malformed, or not http(s)."""


def _unescape_unreserved(match: re.Match[str]) -> str:
    char = chr(int(match.group(1), 16))
    return char if char in _UNRESERVED else "%" + match.group(1).upper()


def _normalize_component(text: str, safe: str) -> str:
    """Uppercase escapes, decode escaped unreserved characters, encode the rest."""
    if _PLAIN.fullmatch(text):
        return text
    if "%" in text:
        text = _LONE_PERCENT.sub("%25", text)
        text = _PCT_ESCAPE.sub(_unescape_unreserved, text)
    return quote(text, safe=safe + "%", encoding="utf-8", errors="surrogatepass")


def canonicalize(url: str) -> str:
    """Return the canonical form of an absolute http(s) URL.

    Lower-cases scheme and host, drops the default port, removes dot segments, normalises
    percent-encoding (upper-case hex, unreserved characters decoded, unsafe ones encoded),
    drops the fragment, keeps the query (order included) without its empty pairs (``&&``,
    a leading or trailing ``&``: endless spellings of one query, which no server tells apart;
    as w3lib's ``canonicalize_url`` drops them). Raises :class:`InvalidURL`.
    """
    if is_plainly_canonical(url):
        return url
    return _canonicalize(url)


def is_plainly_canonical(url: str) -> bool:
    """A cheap test that a URL is already canonical (most resolved links are)."""
    return "/." not in url and _CANONICAL.fullmatch(url) is not None


def plain_origin(prefix: str) -> bool:
    """Whether ``prefix`` (``scheme://host[:port]/``) + any ASCII is canonical at its host key."""
    if prefix.count("/") != 3 or not prefix.endswith("/") or not is_plainly_canonical(prefix):
        return False
    try:
        return _canonicalize(prefix) == prefix
    except InvalidURL:
        return False


def _canonicalize(url: str) -> str:
    try:
        return _canonical_form(url)
    except InvalidURL:
        raise
    except (ValueError, UnicodeError) as exc:  # whatever a hostile URL makes the parsers say
        raise InvalidURL(f"malformed URL: {url[:200]!r}") from exc


def _canonical_form(url: str) -> str:
    try:
        parsed = can_ada.parse(url)
    except (ValueError, TypeError) as exc:  # TypeError: a lone surrogate, not UTF-8 text
        what = "port out of range (1-65535)" if _port_too_big(url) else "malformed URL"
        raise InvalidURL(f"{what}: {url[:200]!r}") from exc
    scheme = parsed.protocol
    if scheme not in _SCHEMES:
        raise InvalidURL(f"not an http(s) URL: {url[:200]!r}")
    host = parsed.hostname.rstrip(".")
    if not host or ("%" in url and "%" in _written_host(url)):
        # WHATWG decodes escapes in host names; gossamer takes them for a hostile host
        raise InvalidURL(f"bad host name: {url[:200]!r}")
    port = parsed.port
    if port == "0":  # WHATWG takes port 0; no server listens there
        del parsed  # not kept alive by the traceback (nanobind warns of it at exit)
        raise InvalidURL(f"port out of range (1-65535): {url[:200]!r}")
    netloc = f"{host}:{port}" if port else host
    if parsed.has_credentials():
        # escaped as WHATWG escapes it (an '@' or ':' of a password too), as the links
        # resolved against the URL write it: they carry the very same credentials
        password = parsed.password
        userinfo = parsed.username + (":" + password if password else "")
        netloc = f"{_normalize_component(userinfo, _USERINFO_SAFE)}@{netloc}"
    path = _normalize_component(parsed.pathname, _PATH_SAFE)
    query = parsed.search[1:]
    if "%27" in query:  # WHATWG escapes ' in queries; gossamer keeps it as written
        query = _written_query(url)
    if "&" in query:
        query = "&".join(part for part in query.split("&") if part)
    query = _normalize_component(query, _QUERY_SAFE) if query else ""
    return f"{scheme}//{netloc}{path}?{query}" if query else f"{scheme}//{netloc}{path}"


def _port_too_big(url: str) -> bool:
    """Whether the URL as written names a port past 65535 (why it failed to parse)."""
    try:
        port = _written_host(url).rpartition("]")[2].rpartition(":")[2]
    except (ValueError, UnicodeError):
        return False
    return port.isascii() and port.isdigit() and int(port) > 65535


def _written_authority(url: str) -> str:
    """The authority of an absolute URL as written (tabs and newlines removed)."""
    rest = _clean(url).partition(":")[2].lstrip("/\\")
    return _AUTHORITY_END.split(rest, 1)[0]


def _written_host(url: str) -> str:
    return _written_authority(url).rpartition("@")[2]


def _written_query(url: str) -> str:
    return _clean(url).partition("#")[0].partition("?")[2]


def _clean(url: str) -> str:
    """What WHATWG parses of a URL: leading and trailing C0 controls and spaces stripped,
    tabs and newlines removed."""
    url = url.strip(_C0_AND_SPACE)
    if "\t" in url or "\n" in url or "\r" in url:
        url = url.translate(_NO_TAB_NEWLINE)
    return url


class Resolver:
    """Resolves the references of one document (``href`` values, ``Location`` headers) into
    absolute http(s) URLs, as the WHATWG URL Standard does, without fragment.

    The base is parsed once; a reference is joined to it with string operations chosen by
    its first characters (absolute, ``//host``, ``/path``, ``?query``, ``path``) and the
    result parsed by ada, which removes dot segments, percent-encodes and checks the host and
    port. Results are WHATWG's serialisation: mostly canonical already, so
    :func:`canonicalize` takes them at the cost of one regex match. They are remembered (a
    bounded cache per process, `_Remembered`) by what they depend on, so the links a site
    repeats on every page are resolved once.
    """

    __slots__ = (
        "_by_directory",
        "_by_root",
        "directory",
        "document",
        "origin",
        "path_url",
        "scheme",
    )

    def __init__(self, base: str) -> None:
        try:
            parsed = can_ada.parse(base)
        except (ValueError, TypeError) as exc:  # TypeError: a lone surrogate
            raise ValueError(f"not an absolute http(s) URL: {base[:200]!r}") from exc
        scheme = parsed.protocol
        if scheme not in _SCHEMES:
            raise ValueError(f"not an absolute http(s) URL: {base[:200]!r}")
        # The parts cut from ada's serialisation, not read one by one (each getter builds a
        # string): an http(s) URL serialises as ``scheme//authority/path[?query][#fragment]``,
        # where the authority holds no "/" and the path and query no "#", all percent-encoded,
        # and an empty query or fragment keeps its "?" or "#" (the getters say "" for both).
        href = parsed.href
        path_at = href.index("/", len(scheme) + 2)
        hash_at = href.find("#", path_at)
        if hash_at < 0:
            hash_at = len(href)
        query_at = href.find("?", path_at, hash_at)
        if query_at < 0:
            query_at = hash_at
        self.scheme = scheme
        self.origin = href[:path_at]
        self.path_url = href[:query_at]
        self.document = href[:hash_at]
        self.directory = href[: href.rfind("/", path_at, query_at) + 1]
        self._by_root = _REMEMBERED.table(self.origin + "/")
        self._by_directory = _REMEMBERED.table(self.directory)

    def remembered(self) -> tuple[dict[str, str | None], ...]:
        """The tables `resolve` reads before it resolves a reference: absolute references',
        this origin's and this directory's (for `gossamer.parse.links`' C loop, which only
        reads them)."""
        return _REMEMBERED.absolute, self._by_root, self._by_directory

    def resolve(self, reference: str) -> str | None:
        """The absolute http(s) URL ``reference`` points to, without fragment; None if it
        points elsewhere (``mailto:``, ``javascript:``) or is malformed."""
        if len(reference) > MAX_REFERENCE_CHARS:
            return None
        # By the first character before any startswith (a costly call, made for every link
        # of every page): most references are relative or start with a slash.
        first = reference[:1]
        if first == "#":  # the document itself, whatever the fragment
            return self.document
        if first == "h" and reference.startswith(_ABSOLUTE_PREFIXES):
            table = _REMEMBERED.absolute
        elif first in _SLASHES:
            table = self._by_root
        else:
            table = self._by_directory
        resolved = table.get(reference, _UNKNOWN)
        if resolved != _UNKNOWN:
            return resolved
        if "#" in reference:
            # A fragment changes nothing: the reference without it is looked up (a page's
            # links to the sections of another page are resolved once). What precedes the
            # fragment must not end in a space or control, which resolving strips.
            bare = reference.partition("#")[0]
            if bare[-1] > " ":
                reference = bare
                resolved = table.get(reference, _UNKNOWN)
                if resolved != _UNKNOWN:
                    return resolved
        resolved = self._resolve(reference)
        if not _needs_document(reference):
            table[reference] = resolved
            _REMEMBERED.added()
        return resolved

    def _resolve(self, reference: str) -> str | None:
        reference = reference.strip(_C0_AND_SPACE)
        if "\t" in reference or "\n" in reference or "\r" in reference:
            reference = reference.translate(_NO_TAB_NEWLINE)
        reference = reference.partition("#")[0]
        if not reference:
            return self.document
        url: str | None
        first = reference[0]
        if first == "/" or first == "\\":
            scheme_relative = reference[1:2] in _SLASHES
            url = (self.scheme if scheme_relative else self.origin) + reference
        elif first == "?":
            url = self.path_url + reference
        elif reference.startswith(_ABSOLUTE_PREFIXES):
            url = reference
        else:
            scheme = _SCHEME.match(reference) if ":" in reference else None
            url = self.directory + reference if scheme is None else self._with_scheme(reference)
        if url is None:
            return None
        try:
            return can_ada.parse(url).href
        except (ValueError, TypeError):  # TypeError: a lone surrogate (from a file or argv)
            return None

    def _with_scheme(self, reference: str) -> str | None:
        scheme, _, rest = reference.partition(":")
        scheme = scheme.lower() + ":"
        if scheme not in _SCHEMES:
            return None
        if not rest and scheme == self.scheme:
            return self.document
        if scheme != self.scheme or (rest[:1] in _SLASHES and rest[1:2] in _SLASHES):
            # "https:x" from an http page names a host, as does "http://x" anywhere
            return scheme + rest
        # "http:x" from an http page is relative to it
        if rest[:1] in _SLASHES:
            return self.origin + rest
        if rest[:1] == "?":
            return self.path_url + rest
        return self.directory + rest


_REMEMBERED_LIMIT = 24_576
"""Resolutions remembered at most (about 250 bytes each), all forgotten when one more comes."""


class _Remembered:
    """Resolutions of references by what they depend on: absolute ones by the reference
    alone, ``/path`` ones by the origin (its root, ``scheme://host/``), the others by the
    directory (the document's URL up to the last ``/`` of its path). The references that
    depend on the document's own path or query (``?q``, an empty one) are not remembered,
    and one with a fragment is remembered without it (``x.html#a`` and ``x.html#b`` are one).
    A site's pages repeat most of their links (navigation, sidebars, footers), so most are
    resolved once per process."""

    __slots__ = ("absolute", "by_base", "size")

    def __init__(self) -> None:
        self.absolute: dict[str, str | None] = {}
        self.by_base: dict[str, dict[str, str | None]] = {}
        self.size = 0

    def table(self, base: str) -> dict[str, str | None]:
        """The resolutions of references that depend on ``base`` only."""
        table = self.by_base.get(base)
        if table is None:
            table = self.by_base[base] = {}
        return table

    def added(self) -> None:
        """One more was remembered; past the limit, all are forgotten."""
        self.size += 1
        if self.size > _REMEMBERED_LIMIT:
            self.absolute.clear()
            self.by_base.clear()
            self.size = 0


_REMEMBERED = _Remembered()
_UNKNOWN = ""
"""What a table of `_Remembered` gives for a reference it does not hold: no resolution is
empty (None is one)."""


def _needs_document(reference: str) -> bool:
    """Whether `Resolver.resolve` reads the document's path or query for ``reference``
    (more often than not it reads only the directory, origin and scheme)."""
    reference = _clean(reference).partition("#")[0]
    if not reference or reference[0] == "?":
        return True
    if reference[0] in _SLASHES or ":" not in reference:
        return False
    scheme = _SCHEME.match(reference)
    if scheme is None:
        return False
    rest = reference[scheme.end() :]
    return not rest or rest[0] == "?"


INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
"""The range of a fingerprint (a signed 64-bit integer)."""


def fingerprint(canonical_url: str) -> int:
    """64-bit fingerprint of a canonical URL, as a signed integer (fits SQLite INTEGER)."""
    value = xxhash.xxh3_64_intdigest(canonical_url.encode("utf-8", "surrogatepass"))
    return value - (1 << 64) if value >= (1 << 63) else value


def host_key(canonical_url: str) -> str:
    """The politeness key of a canonical URL: ``scheme://host[:port]``, without user info
    (``http://a@h/`` and ``http://b@h/`` are the same server to be polite to)."""
    scheme, _, rest = canonical_url.partition("://")
    authority = rest.split("/", 1)[0]
    if "@" in authority:
        authority = authority.rpartition("@")[2]
    return scheme + "://" + authority


def credentials_of(canonical_url: str) -> str | None:
    """The authority of a canonical URL that carries a user name or password (``u:p@h:81``
    of ``http://u:p@h:81/``); None for one that carries none."""
    authority = canonical_url.partition("://")[2].partition("/")[0]
    return authority if "@" in authority else None


def host_of(canonical_url: str) -> str:
    """The bare host name of a canonical URL (no port, no user info)."""
    netloc = canonical_url.partition("://")[2].split("/", 1)[0]
    netloc = netloc.rpartition("@")[2]
    if netloc.startswith("["):
        return netloc[1 : netloc.index("]")]
    return netloc.split(":", 1)[0]


def explicit_port(canonical_url: str) -> int | None:
    """The port written in a canonical URL (or host key); None for the scheme's default,
    which canonical URLs leave out."""
    netloc = canonical_url.partition("://")[2].split("/", 1)[0]
    netloc = netloc.rpartition("@")[2]
    if netloc.startswith("["):
        netloc = netloc[netloc.index("]") + 1 :]
    port = netloc.partition(":")[2]
    return int(port) if port else None


class Scope(NamedTuple):
    """Which canonical URLs a crawl may enqueue.

    A URL is in scope when both its host and its port are allowed. ``domains`` are allowed
    together with their subdomains (an IP address only as itself); ``hosts`` only exactly. A
    URL without an explicit port (its scheme's default, 80 for http, 443 for https) is always
    allowed, so the redirect of a seed from http to https, the most common one there is, stays
    in scope. An explicit port is allowed for a seed's own host when a seed names it
    (``origins``), for hosts of the allowed domains when any seed names it (``ports``: a
    multi-host web on one port), and everywhere when given (``allow_ports``). Any other port
    of an allowed host (a Redis on 6379, an admin page on 8081) is out of scope. Trap guards
    bound the URL length, the depth and how often one path segment may repeat.
    """

    hosts: frozenset[str] = frozenset()
    domains: frozenset[str] = frozenset()
    ports: frozenset[int] = frozenset()
    origins: tuple[tuple[int, frozenset[str]], ...] = ()
    """For each explicit port of the seeds, the seed hosts naming it (a few ports, each with
    its hosts: 200,000 seed hosts cost a set, not 200,000 pairs)."""
    allow_ports: frozenset[int] = frozenset()
    max_depth: int | None = None
    max_url_length: int = 2048
    max_repeated_segments: int = 3

    @classmethod
    def for_seeds(
        cls,
        seeds: Iterable[str],
        allow_domains: Iterable[str] = (),
        allow_ports: Iterable[int] = (),
        *,
        max_depth: int | None = None,
        max_url_length: int = 2048,
        max_repeated_segments: int = 3,
    ) -> Scope:
        """Scope of the seeds' hosts plus the allowed domains (and their subdomains), on the
        seeds' ports plus the allowed ones (and the schemes' defaults)."""
        hosts: set[str] = set()
        by_port: dict[int, set[str]] = {}
        for seed in seeds:
            host = sys.intern(host_of(seed))  # one string in both sets
            hosts.add(host)
            if (port := explicit_port(seed)) is not None:
                by_port.setdefault(port, set()).add(host)
        frozen = frozenset(hosts)
        return cls(
            hosts=frozen,
            domains=frozenset(domain_key(d) for d in allow_domains),
            ports=frozenset(by_port),
            # Seeds all on one port (the usual case) name every host there: one set, not two.
            origins=tuple(
                (port, frozen if named == hosts else frozenset(named))
                for port, named in sorted(by_port.items())
            ),
            allow_ports=frozenset(allow_ports),
            max_depth=max_depth,
            max_url_length=max_url_length,
            max_repeated_segments=max_repeated_segments,
        )

    def host_allowed(self, host: str) -> bool:
        """Whether a bare host name is inside the crawl."""
        return host in self.hosts or self._in_domains(host)

    def _in_domains(self, host: str) -> bool:
        if not self.domains:
            return False
        if ip_literal(host) is not None:
            return host in self.domains  # an address is no domain's subdomain (127.0.0.1, 1)
        labels = host.split(".")
        return any(".".join(labels[i:]) in self.domains for i in range(len(labels)))

    def origin_reason(self, canonical_url: str) -> str | None:
        """None when the URL's host and port are allowed, else "offsite" or "offsite-port".
        Depends on the host key only (:func:`host_key`), so it may be cached per key."""
        host = host_of(canonical_url)
        if not self.host_allowed(host):
            return "offsite"
        port = explicit_port(canonical_url)
        if port is None or port in self.allow_ports:
            return None
        if any(port == named and host in hosts for named, hosts in self.origins):
            return None
        if port in self.ports and self._in_domains(host):
            return None
        return "offsite-port"

    def reject_reason(self, canonical_url: str, depth: int) -> str | None:
        """None when the URL is in scope, else a short reason ("offsite", "depth", ...)."""
        return self.origin_reason(canonical_url) or self.trap_reason(canonical_url, depth)

    def trap_reason(self, canonical_url: str, depth: int) -> str | None:
        """The checks that do not depend on the host: URL length, depth, repeated segments."""
        if len(canonical_url) > self.max_url_length:
            return "url-too-long"
        if self.max_depth is not None and depth > self.max_depth:
            return "depth"
        if _repeats_segments(canonical_url, self.max_repeated_segments):
            return "repeated-segments"
        return None


class OriginCache:
    """:meth:`Scope.origin_reason` remembered per host key, for the frontiers' hot path.

    Bounded: a page can link to hundreds of thousands of distinct offsite hosts, so the cache
    is emptied when it passes ``limit`` keys (a miss costs one scope check, no I/O).
    """

    __slots__ = ("_limit", "_reasons", "_scope")

    def __init__(self, scope: Scope, limit: int = 10_000) -> None:
        self._scope = scope
        self._limit = limit
        self._reasons: dict[str, str | None] = {}

    def reason(self, key: str) -> str | None:
        """None when the host key's host and port are in scope, else why not."""
        try:
            return self._reasons[key]
        except KeyError:
            pass
        if len(self._reasons) >= self._limit:
            self._reasons.clear()
        reason = self._reasons[key] = self._scope.origin_reason(key)
        return reason

    def __len__(self) -> int:
        return len(self._reasons)


def _repeats_segments(canonical_url: str, limit: int) -> bool:
    if canonical_url.count("/") <= limit + 3:  # scheme's two, the host's one, then segments
        return False
    path = canonical_url.partition("://")[2].partition("/")[2].partition("?")[0]
    segments = path.split("/")
    if len(segments) - len(set(segments)) < limit:  # no segment can be there limit + 1 times
        return False
    counts: dict[str, int] = {}
    for segment in segments:
        if segment:
            count = counts[segment] = counts.get(segment, 0) + 1
            if count > limit:
                return True
    return False
