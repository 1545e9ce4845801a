"""The data model of a generated test web: hosts, pages, links and robots rules.

Everything here is plain immutable data with no I/O and no port: URLs are only made
concrete (``http://host:port/path``) when a port is supplied, so one generated web can be
served on any port and still produce byte-identical pages for the same seed and port.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum


class LinkKind(StrEnum):
    """Which HTML construct carries a link."""

    A = "a"  # <a href>
    AREA = "area"  # <area href> inside a <map>
    NEXT = "next"  # <link rel="next" href> in <head>


class Form(StrEnum):
    """How a link's href is spelled; every form resolves to the same canonical URL."""

    ROOT = "root"  # /news/item-3/
    RELATIVE = "relative"  # ../item-3/ (against the page's directory or its <base href>)
    ABSOLUTE = "absolute"  # http://site0.test:PORT/news/item-3/
    PROTOCOL_RELATIVE = "protocol-relative"  # //site0.test:PORT/news/item-3/
    MESSY = "messy"  # HTTP://SITE0.TEST:PORT/news/./zz/../item-3/ with ~ spelled %7E
    TILDE = "tilde"  # /%7estaff/item-3/ (root form, ~ percent-encoded in lower case)


class Role(StrEnum):
    """What a page is for in the ground truth (see ``truth.reachable``)."""

    PLAIN = "plain"  # reachable from the host's root through followable links
    PRIVATE = "private"  # under /private/ (disallowed by most hosts' robots.txt)
    PRIVATE_CHILD = "private-child"  # linked only from a /private/ page
    NOFOLLOW_ONLY = "nofollow-only"  # linked only through rel=nofollow anchors
    META_NOFOLLOW = "meta-nofollow"  # carries <meta name=robots content=nofollow>
    META_ONLY = "meta-only"  # linked only from the meta-nofollow page
    AREA_ONLY = "area-only"  # linked only through an <area href>
    NEXT_ONLY = "next-only"  # linked only through a <link rel=next>


class RobotsKind(StrEnum):
    """How a host answers ``/robots.txt``."""

    RULES = "rules"  # 200 with the rules
    MISSING = "missing"  # 404: everything allowed
    ERROR = "error"  # 500: RFC 9309 says assume everything disallowed
    REDIRECT = "redirect"  # 301 to /robots-real.txt, which holds the rules
    OFFSITE = "offsite"  # 302 out of the web (the server's IP address): followed by no one


ROBOTS_REDIRECT_PATH = "/robots-real.txt"


@dataclass(frozen=True, slots=True)
class Link:
    """One link on a page: its target (host + path) and how it is written."""

    host: str
    target: str  # path (plus query for special endpoints) on ``host``
    kind: LinkKind = LinkKind.A
    form: Form = Form.ROOT
    nofollow: bool = False
    fragment: str = ""
    special: bool = False  # points at a special endpoint, never at a normal page
    text: str = "link"


@dataclass(frozen=True, slots=True)
class Page:
    """One normal HTML page. Its text is generated from ``text_seed`` when rendered."""

    path: str
    title: str
    role: Role
    links: tuple[Link, ...]
    text_seed: int
    size: int  # approximate bytes of paragraph text
    base: str | None = None  # directory path used as <base href> (same host), if any
    encoding: str = "identity"  # Content-Encoding used when the client accepts it

    @property
    def meta_nofollow(self) -> bool:
        """True when the page asks crawlers not to follow any of its links."""
        return self.role is Role.META_NOFOLLOW


@dataclass(frozen=True, slots=True)
class RobotsGroup:
    """One ``User-agent`` group of a robots.txt file (prefix ``Disallow`` rules only)."""

    agents: tuple[str, ...]
    disallow: tuple[str, ...] = ()
    crawl_delay: float | None = None


@dataclass(frozen=True, slots=True)
class Robots:
    """A host's robots.txt behaviour and, for RULES/REDIRECT, its rules."""

    kind: RobotsKind
    groups: tuple[RobotsGroup, ...] = ()

    def group_for(self, user_agent: str) -> RobotsGroup | None:
        """The group a crawler with ``user_agent`` obeys: its own token first, else ``*``."""
        agent = user_agent.lower()
        for group in self.groups:
            if any(token != "*" and token.lower() in agent for token in group.agents):
                return group
        for group in self.groups:
            if "*" in group.agents:
                return group
        return None

    def allows(self, path: str, user_agent: str, *, error_disallows: bool = True) -> bool:
        """Whether ``path`` may be fetched; a 5xx robots.txt disallows all by default."""
        if self.kind in (RobotsKind.MISSING, RobotsKind.OFFSITE):
            return True
        if self.kind is RobotsKind.ERROR:
            return not error_disallows
        group = self.group_for(user_agent)
        return group is None or not any(path.startswith(rule) for rule in group.disallow)

    def render(self, host: str, port: int) -> str:
        """The robots.txt text (for RULES and REDIRECT hosts), with a Sitemap line."""
        lines = [f"# robots.txt for {host}"]
        for group in self.groups:
            lines += [f"User-agent: {agent}" for agent in group.agents]
            if group.crawl_delay is not None:
                lines.append(f"Crawl-delay: {group.crawl_delay:g}")
            lines += [f"Disallow: {rule}" for rule in group.disallow] or ["Disallow:"]
            lines.append("")
        lines.append(f"Sitemap: {origin(host, port)}/sitemap.xml")
        return "\n".join(lines) + "\n"


@dataclass(frozen=True, eq=False, slots=True)
class Host:
    """One virtual host: its name, robots behaviour and pages keyed by path."""

    name: str
    index: int
    robots: Robots
    pages: Mapping[str, Page]


def origin(host: str, port: int) -> str:
    """``http://host:port``, leaving out the default port 80."""
    return f"http://{host}" if port == 80 else f"http://{host}:{port}"


def canonical_url(host: str, path: str, port: int) -> str:
    """The canonical absolute URL of ``path`` on ``host`` (lower-case, no fragment)."""
    return origin(host.lower(), port) + path
