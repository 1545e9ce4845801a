"""A whole crawl through a proxy pool of real proxies on 127.0.0.1: the records name the proxy
that fetched each page, stats.json holds the pool's figures, and no credential reaches any
output."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from tests.fetch.proxy_servers import HttpProxy, dead_port
from tests.local_app import serve

from gossamer.crawl import run_crawl
from gossamer.settings import SettingsError, load_settings

pytestmark = pytest.mark.timeout(60)

PAGES = 12


async def _page(request: web.Request) -> web.Response:
    links = "".join(f'<a href="/p{i}">{i}</a>' for i in range(PAGES)) if request.path == "/" else ""
    return web.Response(text=f"<html><body>{links}leaf</body></html>", content_type="text/html")


async def test_crawl_through_the_pool(tmp_path: Path) -> None:
    plain = await HttpProxy().start()
    guarded = await HttpProxy(credentials=("carol", "pa55word")).start()
    dead = f"http://127.0.0.1:{dead_port()}"
    listed = tmp_path / "proxies.txt"
    listed.write_text(f"# collected\n{guarded.url}\n{dead}\n")
    try:
        async with serve(_page) as port:
            settings = load_settings(
                {
                    "seeds": [f"http://127.0.0.1:{port}/"],
                    "out": tmp_path / "out",
                    "robots": False,
                    "quiet": True,
                    "text": False,
                    "proxies": [plain.url],
                    "proxies_file": listed,
                    "per_host": 4,
                },
                env={},
            )
            stats = await asyncio.wait_for(run_crawl(settings), 30)
    finally:
        await plain.stop()
        await guarded.stop()
    assert stats.ok == PAGES + 1
    out = tmp_path / "out"
    lines = [json.loads(line) for line in (out / "pages.jsonl").read_text().splitlines()]
    used = {r["proxy"] for r in lines}
    assert used == {f"http://127.0.0.1:{plain.port}", f"http://127.0.0.1:{guarded.port}"}
    pool: dict[str, Any] = json.loads((out / "stats.json").read_text())["proxies"]
    by_proxy = {p["proxy"]: p for p in pool["proxies"]}
    assert by_proxy[dead]["state"] == "dead"
    assert sum(p["requests"] for p in pool["proxies"]) == PAGES + 1
    assert pool["live"] == 2
    for path in out.iterdir():
        if path.is_file():
            assert b"pa55word" not in path.read_bytes(), path.name


def test_a_bad_proxy_is_a_settings_error() -> None:
    with pytest.raises(SettingsError, match=r"invalid setting 'proxies'.*scheme") as info:
        load_settings({"seeds": ["http://a.example/"], "proxies": ["ftp://u:hunter2@p:1"]})
    assert "hunter2" not in str(info.value)
    settings = load_settings({}, env={"GOSSAMER_PROXIES": "http://p:1,socks5://q:2"})
    assert settings.proxies == ["http://p:1", "socks5://q:2"]


def test_a_cluster_job_stores_its_proxies_without_passwords() -> None:
    from gossamer.cluster.jobs import job_settings
    from gossamer.settings import JobSettings

    settings = JobSettings(seeds=["http://a.example/"], proxies=["http://u:pw@p.example:3128"])
    stored = job_settings(settings, ["http://a.example/"])
    assert stored.proxies == ["http://u@p.example:3128"]
