"""Ground truth for crawl tests: which normal pages a correct crawler fetches.

Semantics of ``reachable`` (kept deliberately simple):

* Nodes are normal pages only. Special endpoints (redirects, errors, traps, binary files,
  charset pages ...) are never in the result and their links are never followed, even
  when they redirect to or link a normal page.
* Scope is every generated host (a crawler run with ``--allow-domain test``).
* Followable links: ``<a href>``, ``<area href>`` and ``<link rel=next>`` (``link_kinds``),
  except anchors with ``rel`` containing ``nofollow``; no link of a page carrying
  ``<meta name=robots content=nofollow>`` is followed.
* With ``obey_robots`` a disallowed page is neither fetched nor expanded. Robots rules come
  from each host's ``Robots``; a 404 robots.txt allows all, a 5xx one disallows all
  (``robots_error_disallows=False`` to treat it as allow-all), a redirected one is followed.
* Depth: seeds have depth 0, each followed link adds one; ``max_depth`` keeps pages whose
  shortest followable path from a seed is at most that many links.
* Sitemaps are not used: a crawler reading them may find more plain pages when
  ``max_depth`` is set or when a host is only reached deep inside its link tree.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

from gossamer.testweb.model import Host, LinkKind, canonical_url

DEFAULT_LINK_KINDS = frozenset(LinkKind)
DEFAULT_USER_AGENT = "gossamer"
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def remove_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4 dot-segment removal for an absolute path."""
    segments = path.split("/")[1:]
    out: list[str] = []
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "..":
            if out:
                out.pop()
            if last:
                out.append("")
        elif segment == ".":
            if last:
                out.append("")
        else:
            out.append(segment)
    return "/" + "/".join(out)


def _percent(match: re.Match[str]) -> str:
    char = chr(int(match.group(1), 16))
    return char if char in _UNRESERVED else match.group(0).upper()


def normalize_path(path: str) -> str:
    """Remove dot segments and decode percent-encoded unreserved characters (``%7e``)."""
    return re.sub(r"%([0-9A-Fa-f]{2})", _percent, remove_dot_segments(path or "/"))


def split_url(url: str) -> tuple[str, int, str]:
    """``(host, port, path[?query])`` of an absolute http URL, normalised as a crawler should.

    Lower-cases the host, removes dot segments, decodes percent-encoded unreserved
    characters (``%7e`` -> ``~``) and drops the fragment.
    """
    parts = urlsplit(url.strip())
    if parts.scheme.lower() != "http" or not parts.hostname:
        raise ValueError(f"not an absolute http URL: {url!r}")
    path = normalize_path(parts.path)
    if parts.query:
        path += "?" + parts.query
    return parts.hostname.lower(), parts.port or 80, path


def _allowed(host: Host, path: str, obey: bool, agent: str, error_disallows: bool) -> bool:
    return not obey or host.robots.allows(path, agent, error_disallows=error_disallows)


def reachable(
    hosts: Mapping[str, Host],
    seeds: Iterable[str],
    *,
    port: int | None = None,
    obey_robots: bool = True,
    max_depth: int | None = None,
    user_agent: str = DEFAULT_USER_AGENT,
    link_kinds: Iterable[LinkKind] = DEFAULT_LINK_KINDS,
    robots_error_disallows: bool = True,
) -> set[str]:
    """Canonical URLs of the normal pages a correct crawl from ``seeds`` fetches.

    ``port`` defaults to the seeds' port. Seeds that are not normal pages are ignored.
    """
    kinds = frozenset(link_kinds)
    starts = [split_url(seed) for seed in seeds]
    if port is None:
        ports = {p for _, p, _ in starts}
        if len(ports) > 1:
            raise ValueError("seeds use different ports; pass port=")
        port = ports.pop() if ports else 80
    seen: dict[tuple[str, str], int] = {}
    queue: deque[tuple[str, str]] = deque()

    def visit(host_name: str, path: str, depth: int) -> None:
        host = hosts.get(host_name)
        if host is None or path not in host.pages or (host_name, path) in seen:
            return
        if _allowed(host, path, obey_robots, user_agent, robots_error_disallows):
            seen[host_name, path] = depth
            queue.append((host_name, path))

    for host_name, _, path in starts:
        visit(host_name, path, 0)
    while queue:
        host_name, path = queue.popleft()
        depth = seen[host_name, path]
        page = hosts[host_name].pages[path]
        if page.meta_nofollow or (max_depth is not None and depth >= max_depth):
            continue
        for link in page.links:
            if not (link.special or link.nofollow) and link.kind in kinds:
                visit(link.host, link.target, depth + 1)
    return {canonical_url(h, p, port) for h, p in seen}


def disallowed_links(
    hosts: Mapping[str, Host],
    port: int,
    *,
    user_agent: str = DEFAULT_USER_AGENT,
    robots_error_disallows: bool = True,
) -> set[str]:
    """Canonical URLs linked from any page (followable or not) that robots.txt disallows."""
    out: set[str] = set()
    for host in hosts.values():
        for page in host.pages.values():
            for link in page.links:
                target = hosts[link.host]
                if not target.robots.allows(
                    link.target, user_agent, error_disallows=robots_error_disallows
                ):
                    out.add(canonical_url(link.host, link.target, port))
    return out
