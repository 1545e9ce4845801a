"""``Web``: a generated set of hosts plus the questions tests ask about it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from gossamer.testweb import render, static, truth
from gossamer.testweb.model import Host, LinkKind, Page, RobotsKind, canonical_url


@dataclass(frozen=True, eq=False)
class Web:
    """A deterministic web of virtual hosts (built by ``generate``); pure data, no I/O.

    URLs depend on the port the web is served on, so every URL-returning method takes it
    (``reachable`` reads it from the seeds).
    """

    seed: int
    hosts: Mapping[str, Host]

    @property
    def host_names(self) -> list[str]:
        """Host names in index order (``site0.test``, ``site1.test`` ...)."""
        return list(self.hosts)

    def host(self, index: int) -> Host:
        """The host with index ``index``."""
        return list(self.hosts.values())[index]

    def page(self, url: str) -> tuple[Host, Page] | None:
        """The normal page an absolute URL (any equivalent spelling) names, if any."""
        host_name, _, path = truth.split_url(url)
        host = self.hosts.get(host_name)
        page = host.pages.get(path) if host else None
        return (host, page) if host and page else None

    def root_urls(self, port: int) -> list[str]:
        """``http://siteN.test:PORT/`` for every host, handy as seeds."""
        return [canonical_url(name, "/", port) for name in self.hosts]

    def page_urls(self, port: int) -> set[str]:
        """Canonical URLs of every normal page of every host."""
        return {canonical_url(h.name, p, port) for h in self.hosts.values() for p in h.pages}

    def special_links(self, port: int) -> set[str]:
        """Canonical URLs of the special endpoints normal pages link to."""
        return {
            canonical_url(link.host, link.target, port)
            for host in self.hosts.values()
            for page in host.pages.values()
            for link in page.links
            if link.special
        }

    def reachable(
        self,
        seeds: Iterable[str],
        *,
        port: int | None = None,
        obey_robots: bool = True,
        max_depth: int | None = None,
        user_agent: str = truth.DEFAULT_USER_AGENT,
        link_kinds: Iterable[LinkKind] = truth.DEFAULT_LINK_KINDS,
        robots_error_disallows: bool = True,
    ) -> set[str]:
        """Normal pages a correct crawl from ``seeds`` fetches (see ``truth`` for the rules)."""
        return truth.reachable(
            self.hosts,
            seeds,
            port=port,
            obey_robots=obey_robots,
            max_depth=max_depth,
            user_agent=user_agent,
            link_kinds=link_kinds,
            robots_error_disallows=robots_error_disallows,
        )

    def disallowed_links(
        self,
        port: int,
        *,
        user_agent: str = truth.DEFAULT_USER_AGENT,
        robots_error_disallows: bool = True,
    ) -> set[str]:
        """URLs linked from pages that robots.txt forbids: a polite crawl fetches none."""
        return truth.disallowed_links(
            self.hosts,
            port,
            user_agent=user_agent,
            robots_error_disallows=robots_error_disallows,
        )

    def render_page(self, host: str, path: str, port: int) -> str:
        """The HTML of a normal page as served on ``port``."""
        return render.render_page(self.hosts[host], self.hosts[host].pages[path], port)

    def robots_txt(self, host: str, port: int) -> str | None:
        """The robots.txt rules text, or None for hosts answering 404/500."""
        robots = self.hosts[host].robots
        if robots.kind in (RobotsKind.RULES, RobotsKind.REDIRECT):
            return robots.render(host, port)
        return None

    def sitemap_xml(self, host: str, port: int) -> str:
        """The host's sitemap.xml (plain pages only)."""
        return render.sitemap(self.hosts[host], port)

    def write_static(self, root: str | Path, port: int) -> list[Path]:
        """Write normal pages, robots and sitemaps under ``root/<host>/``; see ``static``."""
        return static.write_static(self.hosts.values(), Path(root), port)
