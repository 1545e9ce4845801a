"""Write a generated web as static files, for serving the same pages from nginx.

Layout: ``root/<host>/<path>/index.html`` for each normal page, ``root/<host>/robots.txt``
for hosts that answer robots.txt with rules, ``root/<host>/robots-real.txt`` for the host
whose robots.txt redirects (the 301 itself, the 500 host and the special endpoints need
server configuration and are not written), and ``root/<host>/sitemap.xml``.
Pages are written with identity encoding whatever their ``encoding`` field says.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from gossamer.testweb import render
from gossamer.testweb.model import ROBOTS_REDIRECT_PATH, Host, RobotsKind


def write_static(hosts: Iterable[Host], root: Path, port: int) -> list[Path]:
    """Write the static files of ``hosts`` (a web's) under ``root``; returns the files
    written."""
    written: list[Path] = []

    def put(path: Path, content: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        written.append(path)

    for host in hosts:
        base = root / host.name
        for page in host.pages.values():
            put(base / page.path.strip("/") / "index.html", render.render_page(host, page, port))
        if host.robots.kind is RobotsKind.RULES:
            put(base / "robots.txt", host.robots.render(host.name, port))
        elif host.robots.kind is RobotsKind.REDIRECT:
            put(base / ROBOTS_REDIRECT_PATH.lstrip("/"), host.robots.render(host.name, port))
        put(base / "sitemap.xml", render.sitemap(host, port))
    return written
