"""The generator: determinism, roles, robots, and links that resolve to their targets."""

from __future__ import annotations

import pytest

from gossamer.testweb import Form, LinkKind, RobotsKind, Role, Web, generate
from gossamer.testweb.catalog import SPECIALS
from gossamer.testweb.model import canonical_url
from gossamer.testweb.truth import split_url

from .support import extract_links

PORT = 8123


def test_same_seed_same_web_and_bytes() -> None:
    one, two = generate(3), generate(3)
    assert one.hosts.keys() == two.hosts.keys()
    for name, host in one.hosts.items():
        assert host.pages == two.hosts[name].pages
        assert host.robots == two.hosts[name].robots
        for path in host.pages:
            assert one.render_page(name, path, PORT) == two.render_page(name, path, PORT)


def test_different_seed_different_web() -> None:
    assert generate(3).host(0).pages != generate(4).host(0).pages


def test_sizes_and_counts() -> None:
    web = generate(1, hosts=3, pages_per_host=20)
    assert web.host_names == ["site0.test", "site1.test", "site2.test"]
    assert all(len(host.pages) == 20 for host in web.hosts.values())
    sizes = [len(web.render_page("site0.test", p, PORT)) for p in web.host(0).pages]
    assert min(sizes) > 2_000 and max(sizes) < 12_000
    big = generate(1, hosts=1, pages_per_host=5, big_pages=True)
    assert all(len(big.render_page("site0.test", p, PORT)) > 10_000 for p in big.host(0).pages)


def test_every_hidden_role_present(web: Web) -> None:
    for host in web.hosts.values():
        roles = {page.role for page in host.pages.values()}
        assert roles == set(Role)
        assert host.pages["/"].role is Role.PLAIN


def test_robots_roles(web: Web) -> None:
    kinds = [host.robots.kind for host in web.hosts.values()]
    assert kinds == [
        RobotsKind.RULES,
        RobotsKind.RULES,
        RobotsKind.MISSING,
        RobotsKind.ERROR,
        RobotsKind.REDIRECT,
    ]
    delayed = web.robots_txt("site1.test", PORT)
    assert delayed is not None and "Crawl-delay: 1" in delayed
    assert "Crawl-delay" not in (generate(7, crawl_delay=None).robots_txt("site1.test", PORT) or "")
    assert web.robots_txt("site2.test", PORT) is None
    moved = web.robots_txt("site4.test", PORT)
    assert moved is not None and "Disallow: /shop/" in moved
    assert f"Sitemap: http://site0.test:{PORT}/sitemap.xml" in (
        web.robots_txt("site0.test", PORT) or ""
    )


def test_rendered_links_resolve_to_their_targets(web: Web) -> None:
    """Every spelling (relative, ../, //host, HTTP://HOST/./x/.., %7e, base href) resolves."""
    forms = set()
    for host in web.hosts.values():
        for page in host.pages.values():
            url = canonical_url(host.name, page.path, PORT)
            html = web.render_page(host.name, page.path, PORT)
            followable, found = extract_links(html, url)
            expected = {canonical_url(link.host, link.target, PORT) for link in page.links}
            assert found - {url} == expected - {url}
            wanted = {
                canonical_url(link.host, link.target, PORT)
                for link in page.links
                if not link.nofollow and not page.meta_nofollow
            }
            assert wanted <= followable
            forms |= {link.form for link in page.links}
    assert forms == set(Form)


def test_equivalent_spellings_present(web: Web) -> None:
    html = "".join(web.render_page(h, p, PORT) for h in web.hosts for p in web.hosts[h].pages)
    assert f"HTTP://SITE0.TEST:{PORT}/" in html
    assert f'href="//site1.test:{PORT}/' in html
    assert "%7estaff" in html and "%7Estaff" in html and "/~staff/" in html
    assert 'href="../' in html and "<base href=" in html
    assert '<link rel="next"' in html and "<area " in html and 'rel="nofollow"' in html
    assert '<meta name="robots" content="nofollow">' in html and "#sec-2" in html


def test_specials_linked_as_asked() -> None:
    assert generate(7).special_links(PORT) == {
        url for url in generate(7).special_links(PORT) if split_url(url)[2] in SPECIALS.values()
    }
    assert len(generate(7).special_links(PORT)) == len(SPECIALS)
    assert generate(7, specials=()).special_links(PORT) == set()
    assert len(generate(7, specials=["hang", "slow"]).special_links(PORT)) == 2
    with pytest.raises(ValueError, match="unknown special"):
        generate(7, specials=["nope"])


def test_links_kinds_and_cross_host(web: Web) -> None:
    links = [link for h in web.hosts.values() for p in h.pages.values() for link in p.links]
    assert {link.kind for link in links} == set(LinkKind)
    for index, name in enumerate(web.host_names):
        following = web.host_names[(index + 1) % len(web.host_names)]
        assert any(link.host == following for link in web.hosts[name].pages["/"].links)


def test_write_static(web: Web, tmp_path: object) -> None:
    from pathlib import Path

    root = Path(str(tmp_path))
    written = web.write_static(root, PORT)
    assert len(written) > 200
    home = root / "site0.test" / "index.html"
    assert home.read_text() == web.render_page("site0.test", "/", PORT)
    staff = next(p for p in web.host(0).pages if p.startswith("/~staff/"))
    assert (root / "site0.test" / staff.strip("/") / "index.html").is_file()
    assert (root / "site0.test" / "robots.txt").is_file()
    assert not (root / "site2.test" / "robots.txt").exists()
    assert (root / "site4.test" / "robots-real.txt").is_file()
    assert (root / "site3.test" / "sitemap.xml").is_file()
