"""Sitemap files stay in the crawl's scope as links and page redirects do: a robots.txt's
``Sitemap:`` line on another port of its host, on the loopback address or on a host out of
scope, and a sitemap's redirect to another port, are never fetched (a listener on the other
port hears nothing), but counted; one with a port out of range is dropped as an invalid URL,
no internal error. A host the scope takes in (``--allow-domain``) has its sitemaps read, those
another host's robots.txt names (the protocol's cross-submission) too. A seed with a port out
of range is a clear error at start, and so is a ``--sitemap`` out of scope (a crawl, a
cluster submit). Real servers on loopback."""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import sys
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from tests.local_app import serve
from tests.sitemap_scope_site import LISTED, ScopeSite

from gossamer.crawl import run_crawl
from gossamer.crawl.fetching import scope_refusal
from gossamer.crawl.sitemapfiles import Counts, FileScope
from gossamer.crawl.sitemaps import GIVEN
from gossamer.settings import canonical_seeds, crawl_scope, load_settings
from gossamer.urls import InvalidURL, canonicalize

pytestmark = pytest.mark.timeout(60)

ROOT = Path(__file__).resolve().parents[1]


def _records(out: Path) -> list[dict[str, Any]]:
    lines = (out / "pages.jsonl").read_text("utf-8").splitlines()
    return [json.loads(line) for line in lines]


async def test_sitemaps_out_of_scope_are_counted_never_fetched(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    site = ScopeSite()
    out = tmp_path / "out"
    caplog.set_level(logging.DEBUG, "gossamer.crawl.sitemapfiles")
    async with serve(site.handle) as port, serve(site.listen) as listener:
        site.port, site.listener = port, listener
        settings = {
            "seeds": [site.url("a.test", "/")],
            "out": out,
            "resolve": ["a.test=127.0.0.1", "victim.test=127.0.0.1"],
            "delay": 0.01,
            "quiet": True,
        }
        stats = await asyncio.wait_for(run_crawl(load_settings(settings, env={})), 45)
    assert site.heard == []  # no request on the other port, robots.txt included
    assert [r for r in site.requests if not r[0].startswith("a.test:")] == []
    records = _records(out)
    maps = {r["url"]: r for r in records if r["kind"] == "sitemap"}
    assert set(maps) == {site.url("a.test", "/redirect.xml"), site.url("a.test", "/in-scope.xml")}
    redirect = maps[site.url("a.test", "/redirect.xml")]
    assert (redirect["status"], redirect["redirect_to"]) == (
        302,
        site.url("a.test", "/redirected.xml", site.listener),
    )
    assert all(r["error"] != "internal-error" for r in records)
    assert site.url("a.test", LISTED) in {r["url"] for r in records if r["kind"] == "page"}
    assert stats.sitemaps is not None
    # 4 Sitemap: lines (other port, loopback, victim.test on both ports) and the redirect
    assert stats.sitemaps["offscope_total"] == 5
    assert stats.sitemaps["invalid_total"] == 1  # port 99999
    refused = [r.getMessage() for r in caplog.records if "not fetched: offsite" in r.getMessage()]
    assert len(refused) == 5
    assert any("redirected.xml not fetched: offsite-port" in m for m in refused)


async def test_a_host_the_scope_takes_in_has_its_sitemaps_read(tmp_path: Path) -> None:
    """www.x.test's robots.txt names a sitemap on cdn.x.test listing a www page: read with
    ``--allow-domain x.test``."""
    asked: list[tuple[str, str]] = []

    async def handle(request: web.Request) -> web.StreamResponse:
        asked.append((request.host.partition(":")[0], request.path))
        port = request.host.partition(":")[2]
        if request.path == "/robots.txt" and request.host.startswith("www."):
            return web.Response(text=f"Sitemap: http://cdn.x.test:{port}/sitemap.xml\n")
        if request.path == "/sitemap.xml":
            body = f"<urlset><url><loc>http://www.x.test:{port}/from-cdn</loc></url></urlset>"
            return web.Response(text=body, content_type="application/xml")
        return web.Response(text="<html><body>page</body></html>", content_type="text/html")

    async with serve(handle) as port:
        settings = {
            "seeds": [f"http://www.x.test:{port}/"],
            "allow_domains": ["x.test"],
            "out": tmp_path / "out",
            "resolve": ["*.x.test=127.0.0.1"],
            "delay": 0.01,
            "quiet": True,
        }
        stats = await asyncio.wait_for(run_crawl(load_settings(settings, env={})), 45)
    assert ("cdn.x.test", "/sitemap.xml") in asked
    assert ("www.x.test", "/from-cdn") in asked
    assert stats.sitemaps is not None and stats.sitemaps["offscope_total"] == 0


@pytest.mark.parametrize("port", ["99999", "65536", "0"])
def test_a_port_out_of_range_is_an_invalid_url(port: str) -> None:
    with pytest.raises(InvalidURL, match="port out of range"):
        canonicalize(f"http://a.test:{port}/x")


def test_the_ports_at_the_ends_of_the_range_are_valid() -> None:
    assert canonicalize("http://a.test:65535/x") == "http://a.test:65535/x"
    assert canonicalize("http://a.test:1/x") == "http://a.test:1/x"


async def _refused(*argv: str) -> str:
    """The one line on stderr of a ``gossamer`` command that must exit 2."""
    proc = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "gossamer", *argv),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
    )
    _, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 2
    lines = err.decode().strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


async def test_a_seed_with_a_port_out_of_range_is_a_clear_error(tmp_path: Path) -> None:
    seed = "http://127.0.0.1:99999/"
    line = await _refused("crawl", seed, "--out", str(tmp_path / "o"))
    assert seed in line and "port out of range" in line


@pytest.mark.parametrize(
    ("sitemap", "reason"),
    [
        ("http://elsewhere.test/s.xml", "offsite"),
        ("http://127.0.0.1:8081/s.xml", "offsite-port"),
    ],
)
async def test_a_sitemap_given_out_of_scope_is_a_clear_error(
    tmp_path: Path, sitemap: str, reason: str
) -> None:
    """A ``--sitemap`` the crawl could not fetch stops it at the start, naming the way in (a
    warning in the log would be missed, and the file was asked for)."""
    seed = "http://127.0.0.1:8080/"
    line = await _refused("crawl", seed, "--sitemap", sitemap, "--out", str(tmp_path / "o"))
    assert sitemap in line and f"is {reason}," in line and "--allow-domain" in line
    assert not (tmp_path / "o").exists()  # refused before anything is written


async def test_a_sitemap_given_with_another_fault_is_named_so(tmp_path: Path) -> None:
    sitemap = "http://127.0.0.1:8080/" + "a/" * 5000
    argv = ["crawl", "http://127.0.0.1:8080/", "--sitemap", sitemap, "--out", str(tmp_path)]
    line = await _refused(*argv)
    assert "is url-too-long" in line and "--allow-domain" not in line


async def test_a_cluster_job_with_a_sitemap_out_of_scope_is_refused_at_submit() -> None:
    """``cluster submit`` refuses it before it reaches Redis (none listens here): no worker
    would read the file, so none is left to stop on it."""
    argv = ["cluster", "submit", "--redis", "redis://127.0.0.1:9/0", "http://127.0.0.1:8080/"]
    line = await _refused(*argv, "--sitemap", "http://elsewhere.test/s.xml")
    assert "elsewhere.test/s.xml is offsite," in line


def test_a_worker_skips_a_given_sitemap_out_of_scope_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A job an older gossamer submitted may hold a ``--sitemap`` out of its scope (its
    worker has no flag to widen the scope, so it does not stop on it): the sitemap stage's
    scope skips the file, counts it and names it in a warning."""
    settings = load_settings(
        {"seeds": ["http://127.0.0.1:8080/"], "sitemap": ["http://elsewhere.test/s.xml"]},
        env={},
    )
    scope = crawl_scope(settings, canonical_seeds(settings))
    counts = Counts()
    files = FileScope(functools.partial(scope_refusal, scope), counts, GIVEN)
    with caplog.at_level(logging.WARNING, "gossamer.crawl.sitemapfiles"):
        assert not files.allows("http://elsewhere.test/s.xml", GIVEN)
    assert counts.offscope == 1
    assert [r.getMessage() for r in caplog.records] == [
        "sitemap http://elsewhere.test/s.xml not fetched: offsite, named by --sitemap"
    ]
