"""URL canonicalization, fingerprints and crawl scope.

Every stage of gossamer compares URLs through :func:`canonicalize` and :func:`fingerprint`;
there is no second way to normalise a URL.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import SplitResult, quote, urlsplit, urlunsplit

import xxhash

_DEFAULT_PORTS = {"http": 80, "https": 443}
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_PCT_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_LONE_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
# Characters left as they are in each component (RFC 3986 sub-delims, ':' '@' and, for the
# path, '/'). Everything else outside the unreserved set is percent-encoded.
_PATH_SAFE = "/:@!$&'()*+,;=-._~"
_QUERY_SAFE = "/?:@!$&'()*+,;=-._~"
_IPV6 = re.compile(r"[0-9a-f:.]+")
_FORBIDDEN_HOST = re.compile(r"[\x00-\x20#/:<>?@\[\\\]^|%\x7f]")
"""WHATWG's forbidden domain code points: no such host can be looked up."""
_USERINFO_SAFE = ":!$&'()*+,;=-._~"
_PLAIN = re.compile(r"[A-Za-z0-9\-._~/:@!$&'()*+,;=?]*")
# A URL already in canonical form (the common case for links a parser resolved): lower-case
# http(s) scheme and host, no user info, a path of safe characters without dot segments, a
# query of safe characters, no fragment. Dot segments and default ports are ruled out apart.
_CANONICAL = re.compile(
    r"https?://[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?(?::[1-9][0-9]{0,4})?"
    r"/[A-Za-z0-9\-._~!$&'()*+,;=:@/]*(?:\?[A-Za-z0-9\-._~!$&'()*+,;=:@/?]+)?"
)


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


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4, for absolute paths."""
    if "." not in path:
        return path
    segments = path.split("/")
    output: list[str] = []
    for segment in segments[1:]:
        if segment == "..":
            if output:
                output.pop()
        elif segment != ".":
            output.append(segment)
    if segments[-1] in (".", ".."):
        output.append("")
    return "/" + "/".join(output)


def _canonical_host(parts: SplitResult) -> str:
    host = parts.hostname
    if not host:
        raise InvalidURL("URL has no host")
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError as exc:
            raise InvalidURL(f"bad international host name: {host!r}") from exc
    host = host.rstrip(".")
    if ":" in host:
        if not _IPV6.fullmatch(host):  # zone ids (fe80::1%eth0) and junk
            raise InvalidURL(f"bad IPv6 host: {host[:100]!r}")
        return f"[{host}]"
    if not host or _FORBIDDEN_HOST.search(host):
        raise InvalidURL(f"bad host name: {host[:100]!r}")
    return host


def canonicalize(url: str) -> str:
    """Return the canonical form of an absolute http(s) URL.

    Lower-cases scheme and host, drops the default port, removes dot segments, normalises
    percent-encoding (upper-case hex, unreserved characters decoded, unsafe ones encoded),
    drops the fragment, keeps the query (order included). Raises :class:`InvalidURL`.
    """
    if is_plainly_canonical(url):
        return url
    return _canonicalize(url)


def is_plainly_canonical(url: str) -> bool:
    """A cheap test that a URL is already canonical (most resolved links are)."""
    return bool(_CANONICAL.fullmatch(url)) and "/." not in url and not _has_default_port(url)


def _canonicalize(url: str) -> str:
    try:
        return _canonical_form(url)
    except InvalidURL:
        raise
    except (ValueError, UnicodeError) as exc:  # whatever a hostile URL makes the parsers say
        raise InvalidURL(f"malformed URL: {url[:200]!r}") from exc


def _canonical_form(url: str) -> str:
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise InvalidURL(f"malformed URL: {url[:200]!r}") from exc
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        raise InvalidURL(f"not an http(s) URL: {url[:200]!r}")
    host = _canonical_host(parts)
    netloc = host if port is None or port == _DEFAULT_PORTS[scheme] else f"{host}:{port}"
    userinfo = parts.netloc.rpartition("@")[0] if "@" in parts.netloc else ""
    if userinfo:
        netloc = f"{_normalize_component(userinfo, _USERINFO_SAFE)}@{netloc}"
    path = _remove_dot_segments(_normalize_component(parts.path or "/", _PATH_SAFE))
    query = _normalize_component(parts.query, _QUERY_SAFE) if parts.query else ""
    return urlunsplit((scheme, netloc, path, query, ""))


def _has_default_port(url: str) -> bool:
    authority = url.partition("//")[2].partition("/")[0]
    return authority.endswith(":80" if url[4] == ":" else ":443")


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


@dataclass(frozen=True, slots=True)
class Scope:
    """Which canonical URLs a crawl may enqueue.

    A URL is in scope when both its host and its port are allowed. ``domains`` are allowed
    together with their subdomains; ``hosts`` only exactly. A URL without an explicit port
    (its scheme's default, 80 for http, 443 for https) is always allowed, so the redirect of a
    seed from http to https, the most common one there is, stays in scope. An explicit port is
    allowed for a seed's own host when a seed names it (``origins``), for hosts of the allowed
    domains when any seed names it (``ports``: a multi-host web on one port), and everywhere
    when given (``allow_ports``). Any other port of an allowed host (a Redis on 6379, an admin
    page on 8081) is out of scope. Trap guards bound the URL length, the depth and how often
    one path segment may repeat.
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
        return cls(
            hosts=frozenset(hosts),
            domains=frozenset(d.lower().strip(".") for d in allow_domains),
            ports=frozenset(by_port),
            origins=tuple((port, frozenset(named)) for port, named in sorted(by_port.items())),
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
    segments = [s for s in path.split("/") if s]
    if len(segments) <= limit:
        return False
    counts: dict[str, int] = {}
    for segment in segments:
        counts[segment] = counts.get(segment, 0) + 1
        if counts[segment] > limit:
            return True
    return False
