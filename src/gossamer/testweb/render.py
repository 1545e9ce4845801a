"""Turn page specs into HTML (and sitemaps) for one concrete port. Deterministic."""

from __future__ import annotations

import random
from collections.abc import Iterable
from html import escape

from gossamer.testweb import text
from gossamer.testweb.model import Form, Host, Link, LinkKind, Page, Role, origin

NOFOLLOW_RELS = ("nofollow", "noopener nofollow", "external NoFollow")
OTHER_RELS = ("", "", "", "noopener", "external")
JUNK_LINKS = (
    "mailto:webmaster@{host}",
    "javascript:void(0)",
    "tel:+15550100",
    "#top",
    "",
    "ftp://{host}/pub/",
)


def relative(from_dir: str, to_path: str) -> str:
    """A relative reference from directory ``from_dir`` to ``to_path`` (both absolute)."""
    src = [seg for seg in from_dir.split("/") if seg]
    dst = to_path.split("/")[1:]
    common = 0
    while common < len(src) and common < len(dst) - 1 and src[common] == dst[common]:
        common += 1
    rel = "../" * (len(src) - common) + "/".join(dst[common:])
    return rel or "./"


def messy(path: str) -> str:
    """An equivalent path with dot segments and ``~`` spelled ``%7E``."""
    segments = [seg for seg in path.split("/") if seg]
    if not segments:
        return "/./"
    head = "".join(seg + "/" for seg in segments[:-1])
    return f"/{head}./zz/../{segments[-1]}/".replace("~", "%7E")


def href(link: Link, page: Page, host: str, port: int) -> str:
    """The href text for ``link`` on ``page`` of ``host`` served on ``port``."""
    full = origin(link.host, port)
    form = link.form
    if link.host != host and form in (Form.ROOT, Form.RELATIVE, Form.TILDE):
        form = Form.ABSOLUTE
    if form is Form.ROOT:
        out = link.target
    elif form is Form.RELATIVE:
        out = relative(page.base or page.path, link.target)
    elif form is Form.ABSOLUTE:
        out = full + link.target
    elif form is Form.PROTOCOL_RELATIVE:
        out = full.removeprefix("http:") + link.target
    elif form is Form.MESSY:
        out = full.upper() + messy(link.target)
    else:
        out = link.target.replace("~", "%7e")
    return f"{out}#{link.fragment}" if link.fragment else out


def _anchor(link: Link, page: Page, host: str, port: int, rng: random.Random) -> str:
    rel = rng.choice(NOFOLLOW_RELS if link.nofollow else OTHER_RELS)
    rel_attr = f' rel="{rel}"' if rel else ""
    target = escape(href(link, page, host, port))
    return f'<a href="{target}"{rel_attr}>{escape(link.text)}</a>'


def _head(host: Host, page: Page, port: int) -> list[str]:
    lines = [
        "<!DOCTYPE html>",
        '<html lang="en"><head>',
        '<meta charset="utf-8">',
        f"<title>{escape(page.title)}</title>",
    ]
    if page.base is not None:
        lines.append(f'<base href="{origin(host.name, port)}{page.base}">')
    if page.meta_nofollow:
        lines.append('<meta name="robots" content="nofollow">')
    for link in page.links:
        if link.kind is LinkKind.NEXT:
            lines.append(f'<link rel="next" href="{escape(href(link, page, host.name, port))}">')
    lines.append("</head>")
    return lines


def _body(host: Host, page: Page, port: int, rng: random.Random) -> list[str]:
    anchors = [link for link in page.links if link.kind is LinkKind.A]
    areas = [link for link in page.links if link.kind is LinkKind.AREA]
    paras = text.paragraphs(page.text_seed, page.size)
    nav, rest = anchors[:1], anchors[1:]
    lines = ['<body><a name="top"></a>']
    lines += [f"<nav>{_anchor(link, page, host.name, port, rng)}</nav>" for link in nav]
    lines.append(f"<h1>{escape(page.title)}</h1>")
    per_para = -(-len(rest) // len(paras))
    for index, para in enumerate(paras):
        chunk = rest[index * per_para : (index + 1) * per_para]
        extra = "".join(" " + _anchor(link, page, host.name, port, rng) for link in chunk)
        lines.append(f"<p>{para}{extra}</p>")
    if areas:
        lines.append('<map name="m">')
        for link in areas:
            url = escape(href(link, page, host.name, port))
            lines.append(f'<area shape="rect" coords="0,0,8,8" href="{url}" alt="map">')
        lines.append("</map>")
    # On a <base href> page "" and "#top" would resolve against the base, not the page.
    kept = [item for item in JUNK_LINKS if page.base is None or item not in ("", "#top")]
    junk = (escape(item.format(host=host.name)) for item in kept)
    lines.append("<footer>" + " | ".join(f'<a href="{j}">more</a>' for j in junk) + "</footer>")
    lines.append("</body></html>")
    return lines


def render_page(host: Host, page: Page, port: int) -> str:
    """The full HTML document for ``page``; identical for equal (web, port)."""
    rng = random.Random(page.text_seed ^ 0x5EED)
    return "\n".join(_head(host, page, port) + _body(host, page, port, rng)) + "\n"


def sitemap(host: Host, port: int) -> str:
    """A sitemap.xml listing the host's plain pages (never hidden-role pages)."""
    locs = (
        f"<url><loc>{origin(host.name, port)}{page.path}</loc></url>"
        for page in host.pages.values()
        if page.role is Role.PLAIN
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
        + "\n".join(locs)
        + "\n</urlset>\n"
    )


def index_page(hosts: Iterable[str], port: int) -> str:
    """A page linking to every host's root (served for Host: 127.0.0.1 or localhost)."""
    items = "".join(f'<li><a href="{origin(h, port)}/">{h}</a></li>' for h in hosts)
    return f"<!DOCTYPE html><html><head><title>testweb</title></head><body><ul>{items}</ul>"
