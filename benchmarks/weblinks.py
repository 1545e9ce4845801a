"""The link graph of the benchmark web, and how each page's links are chosen and spelled.

URLs are small integers (ids) into :class:`Graph`; a :class:`Host` keeps the ids of its home
page, section indexes, content pages and a few URLs that do not exist (links to them get 404).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from webtext import Link, TextPool

NAV_SECTIONS = 8
OUT_OF_SCOPE_NET = "127.0.3."
"""Links to these loopback addresses are outside the crawl (nothing listens there)."""


def host_ip(index: int) -> str:
    """The loopback address of host ``index``."""
    return f"127.0.0.{index + 2}"


@dataclass
class Host:
    """One host of the web: its address and the URL ids of its pages."""

    index: int
    ip: str
    home: int
    per_section: int
    sections: list[int] = field(default_factory=list)
    pages: list[int] = field(default_factory=list)
    missing: list[int] = field(default_factory=list)
    robots: str | None = None


@dataclass
class Graph:
    """URLs by id: path and host, whether they exist; outlinks of the existing ones."""

    paths: list[str] = field(default_factory=list)
    hosts: list[int] = field(default_factory=list)
    exists: list[bool] = field(default_factory=list)
    links: dict[int, list[int]] = field(default_factory=dict)

    def add(self, host: int, path: str, exists: bool = True) -> int:
        """A new URL id."""
        self.paths.append(path)
        self.hosts.append(host)
        self.exists.append(exists)
        return len(self.paths) - 1


@dataclass(frozen=True)
class PagePlan:
    """What one page shows: title, canonical URL, navigation and body links, target ids; a
    reference page also has a sidebar index and its symbols (anchor ids, linked from the
    page's own table of contents)."""

    title: str
    url: str
    nav: list[Link]
    body: list[Link]
    targets: list[int]
    sidebar: list[Link] = field(default_factory=list)
    symbols: list[str] = field(default_factory=list)


class Linker:
    """Chooses the links of each page and spells them as a site would."""

    def __init__(
        self, hosts: list[Host], graph: Graph, port: int, pool: TextPool, rng: random.Random
    ) -> None:
        self._hosts = hosts
        self._graph = graph
        self._port = port
        self._pool = pool
        self._rng = rng

    def url(self, target: int) -> str:
        """The absolute URL of an id."""
        ip = host_ip(self._graph.hosts[target])
        return f"http://{ip}:{self._port}{self._graph.paths[target]}"

    def spell(self, node: int, target: int) -> str:
        """The href of ``target`` as written on page ``node``: relative when on one host."""
        graph = self._graph
        if graph.hosts[node] != graph.hosts[target]:
            return self.url(target)
        here, there = graph.paths[node], graph.paths[target]
        folder = here[: here.rfind("/") + 1]
        rest = there[len(folder) :]
        if there.startswith(folder) and "/" not in rest:
            return rest or "./"
        if self._rng.random() < 0.55:
            return there
        return ("../" if folder != "/" else "") + there[1:]

    def plan(self, node: int) -> PagePlan:
        """The links of page ``node``: 30-300 in all, navigation included."""
        rng = self._rng
        host = self._hosts[self._graph.hosts[node]]
        path = self._graph.paths[node]
        nav_ids = [host.home, *host.sections[:NAV_SECTIONS]]
        nav = [
            (self.spell(node, t), f"Section {i - 1}" if i else "Home")
            for i, t in enumerate(nav_ids)
        ]
        targets = list(nav_ids)
        if path == "/":
            fixed, total, title = host.sections, rng.randint(40, 90), f"{host.ip} home"
        elif path.endswith("/"):
            first = int(path[2:-1]) * host.per_section
            fixed = host.pages[first : first + host.per_section]
            total, title = max(30, len(fixed) + len(nav) + rng.randint(0, 10)), f"Index {path}"
        else:
            section = int(path.split("/")[1][1:])
            fixed, total = [host.sections[section]], 30 + int(270 * rng.random() ** 2)
            title = self._pool.words(3, 9)
            if rng.random() < 0.03:
                fixed = [*fixed, rng.choice(host.missing)]
        body = [(self.spell(node, t), self._pool.words(2, 5)) for t in fixed]
        targets += fixed
        while len(nav) + len(body) < total:
            link, target = self._random_link(node, host, body)
            body.append(link)
            if target is not None:
                targets.append(target)
        return PagePlan(title, self.url(node), nav, body, targets)

    def plan_reference(self, node: int) -> PagePlan:
        """The links of page ``node`` in API reference style: 150-300 in all on content pages
        (navigation, a sidebar index of the section's pages, a table of contents and a
        permalink per symbol, cross-references with fragments); indexes as :meth:`plan`."""
        path = self._graph.paths[node]
        if path.endswith("/"):
            return self.plan(node)
        rng = self._rng
        host = self._hosts[self._graph.hosts[node]]
        nav_ids = [host.home, *host.sections[:NAV_SECTIONS]]
        nav = [
            (self.spell(node, t), f"Section {i - 1}" if i else "Home")
            for i, t in enumerate(nav_ids)
        ]
        section = int(path.split("/")[1][1:])
        start = section * host.per_section
        siblings = host.pages[start : start + host.per_section]
        window = siblings[: rng.randint(50, 110)]
        sidebar = [(self.spell(node, t), self._pool.words(1, 3)) for t in window]
        symbols = [f"sym-{i}" for i in range(rng.randint(12, 30))]
        targets = [*nav_ids, host.sections[section], *window]
        body: list[Link] = [(self.spell(node, host.sections[section]), "Up")]
        if rng.random() < 0.03:
            missing = rng.choice(host.missing)
            body.append((self.spell(node, missing), "Old page"))
            targets.append(missing)
        total = rng.randint(150, 298) - 2 * len(symbols) - 2  # the page's own "#" links too
        while len(nav) + len(sidebar) + len(body) < total:
            link, target = self._random_link(node, host, body)
            if target is not None and "#" not in link[0] and rng.random() < 0.6:
                link = (f"{link[0]}#sym-{rng.randint(0, 11)}", link[1])
            body.append(link)
            if target is not None:
                targets.append(target)
        title = self._pool.words(1, 3).replace(" ", ".").lower()
        return PagePlan(title, self.url(node), nav, body, targets, sidebar, symbols)

    def _random_link(self, node: int, host: Host, earlier: list[Link]) -> tuple[Link, int | None]:
        """Mostly same-host pages; some cross-host, duplicate, fragment and out-of-scope."""
        rng = self._rng
        text = self._pool.words(2, 5)
        roll = rng.random()
        if roll < 0.80:
            target = rng.choice(host.pages if roll < 0.68 else rng.choice(self._hosts).pages)
            href = self.url(target) if roll >= 0.60 else self.spell(node, target)
            return (href, text), target
        if roll < 0.87 and earlier:
            return rng.choice(earlier), None
        if roll < 0.92:
            target = rng.choice(host.pages)
            return (f"{self.spell(node, target)}#part-{rng.randint(0, 9)}", text), target
        if roll < 0.94:
            ip = f"{OUT_OF_SCOPE_NET}{rng.randint(1, 254)}"
            return (f"http://{ip}:{self._port}/s0/p{rng.randint(0, 99)}.html", text), None
        target = rng.choice(rng.choice(self._hosts).sections)
        return (self.spell(node, target), text), target
