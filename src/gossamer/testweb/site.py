"""Seed-driven generator of a test web: pure data, no I/O, identical output for one seed.

Host ``i`` is named ``site{i}.test``. Robots behaviour depends on the host's index:

====== ==============================================================================
index  robots.txt
====== ==============================================================================
0, 5+  200: ``User-agent: *`` / ``Disallow: /private/`` (plus a ``Sitemap:`` line)
1      200: ``User-agent: gossamer`` / ``Crawl-delay`` / ``Disallow: /private/``, and
       ``User-agent: *`` / ``Disallow: /`` (only a crawler calling itself gossamer gets in)
2      404 (no robots.txt: everything allowed, /private/ included)
3      500 (RFC 9309: assume everything disallowed)
4      301 to ``/robots-real.txt``: ``Disallow: /private/`` and ``Disallow: /shop/``
====== ==============================================================================

Every host with at least ``MIN_PAGES_FOR_ROLES`` pages also gets one page of each hidden
role (see ``Role``) so a crawler that follows nofollow links, ignores robots or misses
``<area>``/``<link rel=next>`` links is caught by ``Web.reachable``.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass, field

from gossamer.testweb import text
from gossamer.testweb.catalog import ALL_SPECIALS, SPECIALS
from gossamer.testweb.model import (
    Form,
    Host,
    Link,
    LinkKind,
    Page,
    Robots,
    RobotsGroup,
    RobotsKind,
    Role,
)
from gossamer.testweb.web import Web

SECTIONS = ("news", "docs", "blog", "shop", "~staff")
HIDDEN_ROLES = (
    Role.PRIVATE,
    Role.PRIVATE,
    Role.PRIVATE_CHILD,
    Role.NOFOLLOW_ONLY,
    Role.META_NOFOLLOW,
    Role.META_ONLY,
    Role.AREA_ONLY,
    Role.NEXT_ONLY,
)
MIN_PAGES_FOR_ROLES = 16
FRAGMENTS = ("top", "sec-2", "comments", "x")
ENCODINGS = ("gzip", "deflate", "br")


@dataclass
class _Draft:
    """A page while its links are still being added."""

    path: str
    title: str
    role: Role
    text_seed: int
    size: int
    base: str | None
    encoding: str
    links: list[Link] = field(default_factory=list)

    def freeze(self) -> Page:
        return Page(
            path=self.path,
            title=self.title,
            role=self.role,
            links=tuple(self.links),
            text_seed=self.text_seed,
            size=self.size,
            base=self.base,
            encoding=self.encoding,
        )


def generate(
    seed: int,
    hosts: int = 5,
    pages_per_host: int = 40,
    *,
    page_size: tuple[int, int] | None = None,
    big_pages: bool = False,
    links_per_page: tuple[int, int] = (3, 8),
    cross_host_rate: float = 0.15,
    crawl_delay: float | None = 1.0,
    specials: Iterable[str] = ALL_SPECIALS,
    prefix: str = "site",
) -> Web:
    """Generate a web of ``hosts`` hosts with ``pages_per_host`` normal pages each.

    ``page_size`` is the range of text bytes per page (default 2-6 KB, or 10-60 KB with
    ``big_pages``). ``crawl_delay`` is host 1's ``Crawl-delay`` (None: no delay line).
    ``specials`` names the special endpoints (keys of ``catalog.SPECIALS``) that normal pages
    link to; pass ``()`` for a web whose links lead only to normal pages. Host names are
    ``{prefix}{i}.test``.
    """
    if hosts < 1 or pages_per_host < 1:
        raise ValueError("hosts and pages_per_host must be at least 1")
    chosen = sorted(set(specials))
    unknown = [name for name in chosen if name not in SPECIALS]
    if unknown:
        raise ValueError(f"unknown special endpoints: {', '.join(unknown)}")
    rng = random.Random(seed)
    sizes = page_size or ((10_000, 60_000) if big_pages else (2_000, 6_000))
    names = [f"{prefix}{i}.test" for i in range(hosts)]
    drafts = {name: _host_pages(rng, name, pages_per_host, sizes) for name in names}
    for name in names:
        _link_host(rng, name, drafts[name], links_per_page)
    _link_cross(rng, names, drafts, cross_host_rate)
    robots = {name: _robots(index, crawl_delay) for index, name in enumerate(names)}
    _link_specials(rng, names, drafts, chosen)
    built = {
        name: Host(name, index, robots[name], {d.path: d.freeze() for d in drafts[name]})
        for index, name in enumerate(names)
    }
    return Web(seed=seed, hosts=built)


def _host_pages(rng: random.Random, host: str, count: int, sizes: tuple[int, int]) -> list[_Draft]:
    roles = [Role.PLAIN] * count
    if count >= MIN_PAGES_FOR_ROLES:
        for index, role in zip(
            rng.sample(range(1, count), len(HIDDEN_ROLES)), HIDDEN_ROLES, strict=True
        ):
            roles[index] = role
    drafts: list[_Draft] = []
    for index, role in enumerate(roles):
        section = "private" if role is Role.PRIVATE else rng.choice(SECTIONS)
        path = "/" if index == 0 else f"/{section}/{rng.choice(text.WORDS)}-{index}/"
        base = f"/{rng.choice(SECTIONS)}/" if index and rng.random() < 0.1 else None
        encoding = rng.choice(ENCODINGS) if rng.random() < 0.2 else "identity"
        draft = _Draft(
            path=path,
            title=f"{text.title(rng)} ({host} #{index})",
            role=role,
            text_seed=rng.getrandbits(32),
            size=rng.randint(*sizes),
            base=base,
            encoding=encoding,
        )
        form = rng.choice((Form.ROOT, Form.RELATIVE, Form.ABSOLUTE))
        draft.links.append(Link(host, "/", form=form, text="Home"))
        drafts.append(draft)
    return drafts


def _add(
    rng: random.Random,
    src: _Draft,
    host: str,
    dst: _Draft,
    *,
    kind: LinkKind = LinkKind.A,
    nofollow: bool = False,
    same_host: bool = True,
) -> None:
    fragment = rng.choice(FRAGMENTS) if rng.random() < 0.15 else ""
    form = _form(rng, dst.path, same_host)
    link = Link(host, dst.path, kind, form, nofollow, fragment, text=dst.title)
    src.links.append(link)


def _form(rng: random.Random, path: str, same_host: bool) -> Form:
    if not same_host:
        return rng.choices((Form.ABSOLUTE, Form.PROTOCOL_RELATIVE, Form.MESSY), (3, 1, 1))[0]
    forms = [Form.ROOT, Form.RELATIVE, Form.ABSOLUTE, Form.PROTOCOL_RELATIVE, Form.MESSY]
    weights = [3, 3, 2, 1, 1]
    if "~" in path:
        forms.append(Form.TILDE)
        weights.append(2)
    return rng.choices(forms, weights)[0]


def _link_host(
    rng: random.Random, host: str, drafts: list[_Draft], per_page: tuple[int, int]
) -> None:
    """Spanning tree over plain pages, one parent per hidden role, then random extras."""
    plain = [d for d in drafts if d.role is Role.PLAIN]
    by_role = {role: [d for d in drafts if d.role is role] for role in Role}
    for index, draft in enumerate(plain[1:], start=1):
        _add(rng, rng.choice(plain[:index]), host, draft)
    for draft in by_role[Role.PRIVATE] + by_role[Role.META_NOFOLLOW]:
        _add(rng, rng.choice(plain), host, draft)
    for draft in by_role[Role.PRIVATE_CHILD]:
        _add(rng, rng.choice(by_role[Role.PRIVATE]), host, draft)
    for draft in by_role[Role.NOFOLLOW_ONLY]:
        for src in rng.sample(plain, min(2, len(plain))):
            _add(rng, src, host, draft, nofollow=True)
    for draft in by_role[Role.META_ONLY]:
        _add(rng, by_role[Role.META_NOFOLLOW][0], host, draft)
    for draft in by_role[Role.AREA_ONLY]:
        _add(rng, rng.choice(plain), host, draft, kind=LinkKind.AREA)
    for draft in by_role[Role.NEXT_ONLY]:
        _add(rng, rng.choice(plain), host, draft, kind=LinkKind.NEXT)
    linkable = plain + by_role[Role.META_NOFOLLOW] + by_role[Role.PRIVATE]
    for draft in drafts:
        _add_extras(rng, host, draft, linkable, per_page)


def _add_extras(
    rng: random.Random,
    host: str,
    draft: _Draft,
    linkable: list[_Draft],
    per_page: tuple[int, int],
) -> None:
    for _ in range(rng.randint(*per_page)):
        kind = LinkKind.AREA if rng.random() < 0.1 else LinkKind.A
        _add(rng, draft, host, rng.choice(linkable), kind=kind, nofollow=rng.random() < 0.1)
    has_next = any(link.kind is LinkKind.NEXT for link in draft.links)
    if not has_next and rng.random() < 0.2:
        _add(rng, draft, host, rng.choice(linkable), kind=LinkKind.NEXT)
    if rng.random() < 0.3:
        _add_duplicate(rng, draft)


def _add_duplicate(rng: random.Random, draft: _Draft) -> None:
    """Link once more to a page already linked, spelled differently."""
    original = rng.choice([link for link in draft.links if link.kind is LinkKind.A])
    form = Form.TILDE if "~" in original.target else Form.MESSY
    fragment = rng.choice(FRAGMENTS)
    copy = Link(original.host, original.target, LinkKind.A, form, original.nofollow, fragment)
    draft.links.append(copy)


def _link_cross(
    rng: random.Random, names: list[str], drafts: dict[str, list[_Draft]], rate: float
) -> None:
    """A ring of root-to-root links, then random links to other hosts' pages."""
    if len(names) < 2:
        return
    for index, name in enumerate(names):
        nxt = names[(index + 1) % len(names)]
        _add(rng, drafts[name][0], nxt, drafts[nxt][0], same_host=False)
    for name in names:
        for draft in drafts[name]:
            if rng.random() >= rate:
                continue
            other = rng.choice([n for n in names if n != name])
            wanted = Role.PRIVATE if rng.random() < 0.2 else Role.PLAIN
            targets = [d for d in drafts[other] if d.role is wanted] or drafts[other][:1]
            _add(rng, draft, other, rng.choice(targets), same_host=False)


def _robots(index: int, crawl_delay: float | None) -> Robots:
    private = ("/private/",)
    if index == 1:
        ours = RobotsGroup(("gossamer",), private, crawl_delay)
        return Robots(RobotsKind.RULES, (ours, RobotsGroup(("*",), ("/",))))
    if index == 2:
        return Robots(RobotsKind.MISSING)
    if index == 3:
        return Robots(RobotsKind.ERROR)
    if index == 4:
        return Robots(RobotsKind.REDIRECT, (RobotsGroup(("*",), (*private, "/shop/")),))
    if index == 5:
        return Robots(RobotsKind.OFFSITE)
    return Robots(RobotsKind.RULES, (RobotsGroup(("*",), private),))


def _link_specials(
    rng: random.Random, names: list[str], drafts: dict[str, list[_Draft]], chosen: list[str]
) -> None:
    """Link each chosen special from a plain page of a host that allows it (0, 2 or 5+)."""
    hosts = [name for index, name in enumerate(names) if index in (0, 2) or index >= 5]
    for special in chosen:
        host = rng.choice(hosts)
        page = rng.choice([d for d in drafts[host] if d.role is Role.PLAIN])
        form = rng.choice((Form.ROOT, Form.ABSOLUTE))
        page.links.append(Link(host, SPECIALS[special], form=form, special=True, text=special))
