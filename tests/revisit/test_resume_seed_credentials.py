"""A seed's password across ``--resume`` of an embedded crawl (real site on loopback behind
basic auth): the resumed crawl takes the seed's credentials from crawl.db (its ``meta``
credentials row), not from the command line, and still fetches the seed's pages, the targets
of their redirects on its origin (``/r`` -> ``/t``) and their revisits with them, turns away
what names them on another origin and sends them nowhere else; after a stop, after kill -9,
with ``--recrawl``. Seeds given again: without credentials they take the stored ones; with
other credentials for the same origin (a changed password, another user), the given ones
replace the stored ones."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import signal
import sqlite3
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from tests.credentials_site import PLAIN, guarded_site, serve_on

from gossamer.crawl import run_crawl
from gossamer.crawldb import CrawlDB
from gossamer.settings import load_settings

pytestmark = pytest.mark.timeout(60)

HOST, ADDRESS, PASSWORD, _ = PLAIN
PAGES = ("/", "/a", "/b", "/r", "/t", "/away", "/away-pw")
"""What a whole crawl of the site's origin fetches (``/t``: the target of ``/r``)."""
Seen = list[tuple[str, str, str | None]]


def basic(user: str, password: str) -> str:
    """The Authorization header of ``user:password``."""
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


class Site:
    """`guarded_site` on one port for both runs; the password it asks for may change between
    them (``expect``)."""

    def __init__(self) -> None:
        self.seen: Seen = []
        self.port = 0
        self._handler: Any = None
        self.expect(basic("alice", PASSWORD))

    def expect(self, authorization: str) -> None:
        self._handler = guarded_site(self.seen, authorization)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        response: web.StreamResponse = await self._handler(request)
        return response

    def seed(self, userinfo: str = f"alice:{PASSWORD}@") -> str:
        return f"http://{userinfo}{HOST}:{self.port}/"

    def mine(self, since: int = 0) -> list[tuple[str, str | None]]:
        """(path, Authorization) of the requests to the seed's origin from ``since`` on."""
        return [(p, a) for h, p, a in self.seen[since:] if not h.startswith("other.test")]

    def away(self, since: int = 0) -> list[tuple[str, str | None]]:
        """(path, Authorization) of the requests to the other origin from ``since`` on."""
        return [(p, a) for h, p, a in self.seen[since:] if h.startswith("other.test")]


@asynccontextmanager
async def serving() -> AsyncIterator[Site]:
    site = Site()
    async with serve_on(ADDRESS, site.handle) as port:
        site.port = port
        yield site


def settings(site: Site, out: Path, seeds: list[str], **flags: Any) -> dict[str, Any]:
    return {
        "seeds": seeds,
        "resolve": [f"{HOST}={ADDRESS}", f"other.test={ADDRESS}"],
        "allow_domains": [HOST, "other.test"],
        "out": out,
        "robots": False,
        "sitemaps": False,
        "quiet": True,
        "delay": 0.01,
        "checkpoint_interval": 0.05,
        **flags,
    }


async def crawl(site: Site, out: Path, seeds: list[str], **flags: Any) -> dict[str, int]:
    """Crawl in this process; what the frontier turned away, by reason."""
    stats = await asyncio.wait_for(
        run_crawl(load_settings(settings(site, out, seeds, **flags))), 30
    )
    return dict(stats.rejected)


async def stopped_after(site: Site, out: Path, pages: int, seed: str | None = None) -> int:
    """Crawl from the ``seed`` (default `Site.seed`) and stop after ``pages`` pages (the
    others stay queued, ``/r`` among them); how many requests the site had then."""
    await crawl(site, out, [seed or site.seed()], max_pages=pages)
    assert "/r" not in {path for path, _ in site.mine()}  # queued, not fetched
    return len(site.seen)


def urls_in(db: Path) -> int:
    """The URLs crawl.db holds (committed); 0 before it is made."""
    if not db.exists():
        return 0
    with contextlib.closing(sqlite3.connect(db)) as conn, contextlib.suppress(sqlite3.Error):
        return int(conn.execute("SELECT count(*) FROM urls").fetchone()[0])
    return 0  # its tables not made yet


async def queued(db: Path, count: int) -> None:
    """Wait until crawl.db holds ``count`` URLs (committed)."""
    for _ in range(1500):
        if urls_in(db) >= count:
            return
        await asyncio.sleep(0.02)
    raise TimeoutError(f"fewer than {count} URLs in {db}")


def assert_resumed(site: Site, since: int, expected: str) -> None:
    """What the resumed crawl sent (from the request ``since`` on): the rest of the origin's
    pages, ``/t`` among them, with ``expected``; nothing else to the seed's origin; the other
    origin got the redirect of ``/away`` without any Authorization."""
    before = {path for path, _ in site.mine()[: len(site.mine()) - len(site.mine(since))]}
    later = site.mine(since)
    assert {path for path, _ in later} | before >= set(PAGES), later
    assert "/t" in {path for path, _ in later}
    assert {auth for _, auth in later} == {expected}, later
    assert set(site.away(since)) == {("/x", None)}


async def test_a_whole_crawl_fetches_every_page_with_the_seed_s_password(tmp_path: Path) -> None:
    """The reference: what a crawl that is not resumed sends and turns away."""
    async with serving() as site:
        rejected = await crawl(site, tmp_path / "out", [site.seed()])
    assert set(site.mine()) == {(path, basic("alice", PASSWORD)) for path in PAGES}
    assert site.away() == [("/x", None)]
    assert rejected == {"userinfo": 1}  # /away-pw's target: the seed's user info elsewhere


@pytest.mark.parametrize("password", [PASSWORD, ""], ids=["password", "user"])
async def test_a_stopped_crawl_resumed_keeps_the_seed_s_password(
    tmp_path: Path, password: str
) -> None:
    """A seed's user name and password (or its user name alone, which crawl.db keeps as a
    password: ``***.TAG@`` in its URLs) are the resumed crawl's, given no seed."""
    out = tmp_path / "out"
    async with serving() as site:
        site.expect(basic("alice", password))
        userinfo = f"alice:{password}@" if password else "alice@"
        since = await stopped_after(site, out, 2, site.seed(userinfo))
        rejected = await crawl(site, out, [], resume=True)
    assert_resumed(site, since, basic("alice", password))
    assert rejected == {"userinfo": 1}  # as the whole crawl's: /t is not turned away


async def test_a_crawl_killed_then_resumed_keeps_the_seed_s_password(tmp_path: Path) -> None:
    """kill -9 after the seed's page: the resumed crawl (another process, no seed given)
    reads the password back from crawl.db."""
    out = tmp_path / "out"
    async with serving() as site:
        command = [sys.executable, "-m", "gossamer.cli", "crawl", "--out", str(out)]
        command += ["--resolve", f"{HOST}={ADDRESS}", "--resolve", f"other.test={ADDRESS}"]
        command += ["--allow-domain", "other.test", "--no-robots", "--sitemaps", "off"]
        command += ["--quiet", "--checkpoint-interval", "0.05"]
        proc = await asyncio.create_subprocess_exec(*command, "--delay", "2", site.seed())
        try:
            await queued(out / "crawl.db", len(PAGES) - 1)  # the seed's links, /t not yet
        finally:
            proc.send_signal(signal.SIGKILL)
            await proc.wait()
        assert [path for path, _ in site.mine()] == ["/"]
        since = len(site.seen)
        proc = await asyncio.create_subprocess_exec(*command, "--delay", "0.01", "--resume")
        assert await asyncio.wait_for(proc.wait(), 30) == 0
    assert_resumed(site, since, basic("alice", PASSWORD))
    stats = json.loads((out / "stats.json").read_text())
    assert stats["rejected"] == {"userinfo": 1}


async def test_a_crawl_resumed_continuous_revisits_with_the_seed_s_password(
    tmp_path: Path,
) -> None:
    """``--resume --recrawl``: the revisits (of ``/t``, the target of ``/r``, too) send the
    password; each of ``/away-pw``'s redirects is the only thing turned away."""
    out = tmp_path / "out"
    async with serving() as site:
        since = await stopped_after(site, out, 2)
        revisits = {"revisit_initial": 1, "revisit_min": 1, "revisit_max": 1}
        rejected = await crawl(site, out, [], resume=True, recrawl=True, max_duration=3, **revisits)
    assert_resumed(site, since, basic("alice", PASSWORD))
    later = [path for path, _ in site.mine(since)]
    assert later.count("/t") >= 2 and later.count("/b") >= 2, later  # revisited
    assert rejected == {"userinfo": later.count("/away-pw")}


async def test_a_seed_given_again_without_credentials_takes_the_stored_ones(
    tmp_path: Path,
) -> None:
    """``--resume`` with the seed as the user gives it to keep the password off the command
    line: the stored credentials are sent, the seed is not fetched (or refused) without."""
    out = tmp_path / "out"
    async with serving() as site:
        since = await stopped_after(site, out, 2)
        rejected = await crawl(site, out, [site.seed("")], resume=True)
    assert_resumed(site, since, basic("alice", PASSWORD))
    assert "/" not in [path for path, _ in site.mine(since)]  # the same seed: crawled already
    assert rejected == {"userinfo": 1}


@pytest.mark.parametrize(("user", "password"), [("alice", "n3w-pw"), ("bob", "b0b-pw")])
async def test_a_seed_given_again_with_other_credentials_overrides_the_stored_ones(
    tmp_path: Path, user: str, password: str
) -> None:
    """``--resume`` with other credentials for the seed's origin (its password changed,
    another account): every later request to the origin sends the given ones, the queued
    pages too; the stored ones are sent no more, and the given ones nowhere else."""
    out = tmp_path / "out"
    async with serving() as site:
        since = await stopped_after(site, out, 2)
        site.expect(basic(user, password))
        await crawl(site, out, [site.seed(f"{user}:{password}@")], resume=True)
    assert_resumed(site, since, basic(user, password))
    with sqlite3.connect(out / "crawl.db") as conn:
        (stored,) = conn.execute("SELECT value FROM meta WHERE key = 'credentials'").fetchone()
    # a line a user's (``masked<TAB>authority`` where the user changed)
    kept = {line.rpartition("\t")[2] for line in stored.splitlines()}
    assert kept == {f"{user}:{password}@{HOST}:{site.port}"}


async def test_credentials_another_user_gave_on_a_resume_are_kept_for_the_next(
    tmp_path: Path,
) -> None:
    """The stored user info a resume replaced with another user's is read back so by the
    next resume: the URLs stored under the first user are fetched as the second."""
    path = tmp_path / "crawl.db"
    db = CrawlDB(path)
    stored = db.hide("http://alice:pw@h.test:81/a")
    db.renew(["bob:b0b@h.test:81", "carol:c@other.test"])
    await db.commit()
    db.close()
    again = CrawlDB(path)
    try:
        assert again.reveal(stored) == "http://bob:b0b@h.test:81/a"
        assert again.credentials() == {"bob:b0b@h.test:81"}
    finally:
        again.close()
