"""``/metrics`` and ``/healthz`` of a real crawl of a local site, read with Prometheus' own
parser: names, labels (never a host or a URL), values equal to stats.json's."""

from __future__ import annotations

import asyncio
import json
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from tests.local_app import serve

from gossamer.cli import main
from gossamer.crawl import build_crawler
from gossamer.engine import Crawler, LoopState
from gossamer.fetch.http import Fetcher
from gossamer.fetch.proxies import PoolStats, ProxyStats
from gossamer.metrics.exporter import HELP, CrawlCollector, MetricsServer, Sources, health
from gossamer.settings import canonical_seeds, load_settings
from gossamer.stats import CrawlStats

ROOT = Path(__file__).parents[2]

pytestmark = pytest.mark.timeout(60)

PAGES = 8


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of a scrape, by name and labels."""
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[sample.name, frozenset(sample.labels.items())] = sample.value
    return out


def value(
    scrape: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str
) -> float:
    want = {"job": "local", "worker": "w", **labels}
    return scrape[name, frozenset(want.items())]


async def get(port: int, path: str) -> tuple[int, str, str]:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{port}{path}") as response,
    ):
        return response.status, response.headers["Content-Type"], await response.text()


async def test_a_crawl_s_metrics_agree_with_its_stats(tmp_path: Path) -> None:
    server = MetricsServer("local", "w")
    await server.start("127.0.0.1", 0)
    assert server.port
    mid_crawl: list[tuple[int, str, str]] = []

    async def page(request: web.Request) -> web.Response:
        if request.path in ("/missing", "/robots.txt"):
            return web.Response(status=404, text="gone")
        if request.path == "/p3":  # scraped while the crawl runs
            assert server.port
            mid_crawl.append(await get(server.port, "/healthz"))
            mid_crawl.append(await get(server.port, "/metrics"))
        links = "".join(f'<a href="/p{i}">{i}</a>' for i in range(PAGES))
        links += '<a href="/missing">x</a><a href="/p1">dup</a>'
        return web.Response(text=f"<html><body>{links}</body></html>", content_type="text/html")

    try:
        assert await get(server.port, "/healthz") == (
            200,
            "text/plain; charset=utf-8",
            "ok: waiting for the crawl to start\n",
        )
        async with serve(page) as port:
            settings = load_settings(
                {
                    "seeds": [f"http://127.0.0.1:{port}/"],
                    "out": tmp_path,
                    "quiet": True,
                    "text": False,
                },
                env={},
            )
            seeds = canonical_seeds(settings)
            async with build_crawler(settings, seeds, None, server) as crawler:
                stats = await asyncio.wait_for(crawler.run(seeds), 30)
                status, kind, text = await get(server.port, "/metrics")
                health_after = await get(server.port, "/healthz")
                stats.write(tmp_path / "stats.json")
    finally:
        await server.close()

    assert mid_crawl[0][0] == 200 and mid_crawl[0][2] == "ok\n"
    during = samples(mid_crawl[1][2])
    assert value(during, "gossamer_in_flight_urls") >= 1
    assert health_after[0] == 503 and health_after[2] == "stopped\n"
    assert status == 200 and kind.startswith("text/plain; version=")
    stored: dict[str, Any] = json.loads((tmp_path / "stats.json").read_text())
    scrape = samples(text)
    assert names_of(text) <= HELP.keys()
    for (name, labels), _ in scrape.items():
        assert name.startswith(("gossamer_", "process_")), name
        assert {k for k, _ in labels} <= {
            "job",
            "worker",
            "outcome",
            "status_class",
            "reason",
            "signal",
            "encoding",
            "le",
        }, name
        assert all("127.0.0.1" not in v and "/" not in v for _, v in labels), (name, labels)
    assert value(scrape, "gossamer_pages_total", outcome="ok") == stored["ok"] == PAGES + 1
    assert value(scrape, "gossamer_pages_total", outcome="error") == stored["errors"] == 0
    assert value(scrape, "gossamer_pages_total", outcome="other") == 1  # the 404
    assert (
        value(scrape, "gossamer_pages_total", outcome="robots_blocked") == stored["robots_blocked"]
    )
    pages = sum(v for (n, _), v in scrape.items() if n == "gossamer_pages_total")
    assert pages == stored["pages"]
    assert value(scrape, "gossamer_requests_total") == stored["requests"]
    assert value(scrape, "gossamer_retries_total") == stored["retries"]
    assert value(scrape, "gossamer_duplicates_total") == stored["duplicates"] > 0
    assert value(scrape, "gossamer_queued_urls") == stored["queued"] == 0
    assert value(scrape, "gossamer_in_flight_urls") == stored["in_flight"] == 0
    # robots.txt (404 here) counts as a response too
    assert (
        value(scrape, "gossamer_responses_total", status_class="2xx")
        == stored["status_counts"]["200"]
    )
    assert value(scrape, "gossamer_responses_total", status_class="4xx") == 2
    assert value(scrape, "gossamer_fetch_duration_seconds_count") == stored["requests"]
    assert value(scrape, "gossamer_fetch_duration_seconds_bucket", le="+Inf") == stored["requests"]
    assert value(scrape, "gossamer_fetch_duration_seconds_sum") > 0
    assert value(scrape, "gossamer_received_bytes_total", encoding="wire") > 0
    assert value(scrape, "gossamer_hosts_waiting", reason="politeness") == 0


def test_health_answers() -> None:
    assert health(None)[0] == 200
    assert health(LoopState("starting", 0.0)) == (200, "ok: starting\n")
    assert health(LoopState("running", 0.5)) == (200, "ok\n")
    assert health(LoopState("running", 61.0))[0] == 503
    assert "stuck" in health(LoopState("running", 61.0))[1]
    assert health(LoopState("stopping", 0.5)) == (503, "stopping\n")
    assert health(LoopState("failed", 0.5)) == (503, "failed\n")


def test_a_port_in_use_is_a_clear_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code = main(["crawl", "http://127.0.0.1:9/", "--out", str(tmp_path / "o"), "--quiet",
                     "--metrics-port", str(port)])  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err
    assert f"invalid setting 'metrics_port': cannot listen on 127.0.0.1:{port}" in err
    assert not (tmp_path / "o" / "crawl.db").exists()


@pytest.mark.parametrize("port", ["0", "70000", "http"])
def test_an_invalid_port_is_exit_2(
    tmp_path: Path, port: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        code = main(
            ["crawl", "http://127.0.0.1:9/", "--out", str(tmp_path), "--metrics-port", port]
        )
        raise SystemExit(code)
    assert exit_info.value.code == 2
    assert "metrics" in capsys.readouterr().err


def test_the_port_comes_from_the_environment_and_toml(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text('metrics_port = 9100\nmetrics_bind = "0.0.0.0"\n')
    settings = load_settings({}, config=config, env={})
    assert (settings.metrics_port, settings.metrics_bind) == (9100, "0.0.0.0")
    settings = load_settings({}, env={"GOSSAMER_METRICS_PORT": "9200"})
    assert settings.metrics_port == 9200


def names_of(text: str) -> set[str]:
    """The metric names of a scrape as HELP knows them (counters with ``_total``)."""
    return {
        family.name + ("_total" if family.type == "counter" else "")
        for family in text_string_to_metric_families(text)
        if not family.name.startswith("process_")
    }


@dataclass(frozen=True)
class RenderStats:
    """A stage's snapshot as a future one may look: numbers, and things that are not."""

    pages_total: int
    browsers: int
    mean_seconds: float
    crashed: bool
    engine: str


def test_proxies_and_further_sections() -> None:
    collector = CrawlCollector("j", "w")
    assert list(collector.collect()) == []  # nothing before the crawl is attached
    stats = CrawlStats(
        pages=3, ok=2, errors=1, robots_blocked=0, retries=0, requests=3, duplicates=0,
        rejected={f"reason-{i}": 1 for i in range(70)}, status_counts={}, queued=0,
        in_flight=0, elapsed=1.0, pages_per_second=3.0, peak_rss_mb=1.0,
    )  # fmt: skip
    pool = PoolStats(
        (
            ProxyStats("http://p1:3128", "live", 5, 1, 0.1, 0.05),
            ProxyStats("http://p2:3128", "dead", 2, 2, 0.0, None),
        ),
        retries=3,
        unserved=1,
    )
    collector.attach(
        Sources(
            crawl=lambda: stats,
            fetch=Fetcher().stats,
            waiting_hosts=lambda: (1, 2),
            loop=lambda: LoopState("running", 0.0),
            proxies=lambda: pool,
            extra={
                "render": lambda: RenderStats(4, 2, 0.5, False, "chromium"),
                "none": lambda: None,
            },
        )
    )
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    text = generate_latest(registry).decode()
    scrape = samples(text)
    labels = {"job": "j", "worker": "w"}
    assert scrape["gossamer_proxies", frozenset({**labels, "state": "live"}.items())] == 1
    assert scrape["gossamer_proxies", frozenset({**labels, "state": "dead"}.items())] == 1
    assert scrape["gossamer_proxy_requests_total", frozenset(labels.items())] == 7
    assert scrape["gossamer_proxy_failures_total", frozenset(labels.items())] == 3
    assert scrape["gossamer_proxy_retries_total", frozenset(labels.items())] == 3
    assert scrape["gossamer_proxy_unserved_total", frozenset(labels.items())] == 1
    assert scrape["gossamer_render_pages_total", frozenset(labels.items())] == 4
    assert scrape["gossamer_render_browsers", frozenset(labels.items())] == 2
    assert scrape["gossamer_render_mean_seconds", frozenset(labels.items())] == 0.5
    assert not any(name.startswith("gossamer_render_crashed") for name, _ in scrape)
    hosts = {"politeness": 1, "backoff": 2}
    for reason, count in hosts.items():
        assert (
            scrape["gossamer_hosts_waiting", frozenset({**labels, "reason": reason}.items())]
            == count
        )
    rejected = [v for (n, _), v in scrape.items() if n == "gossamer_rejected_urls_total"]
    assert len(rejected) == 65 and sum(rejected) == 70  # 64 reasons and "other"
    assert names_of(text) - HELP.keys() == {
        "gossamer_render_pages_total",
        "gossamer_render_browsers",
        "gossamer_render_mean_seconds",
    }


def test_revisits_have_their_help_and_docs(tmp_path: Path) -> None:
    """A continuous crawl's figures: revisits by result, bytes 304s saved, the due backlog."""
    from gossamer.crawldb import CrawlDB
    from gossamer.frontier.revisit import Bounds
    from gossamer.frontier.revisits import Revisits

    db = CrawlDB(tmp_path / "crawl.db")
    revisits = Revisits(db, lambda url, kind: Bounds(1.0, 1.0, 1.0))
    revisits.results.update({"changed": 2, "not-modified": 3, "gone": 1})
    revisits.bytes_saved = 4096
    collector = CrawlCollector("j", "w")
    counts = dict.fromkeys(("pages", "ok", "errors", "robots_blocked", "retries"), 0)
    counts |= {"requests": 0, "duplicates": 0, "queued": 0, "in_flight": 0}
    stats = CrawlStats(
        **counts, rejected={}, status_counts={}, elapsed=1.0, pages_per_second=0, peak_rss_mb=1
    )
    collector.attach(
        Sources(
            crawl=lambda: stats,
            fetch=Fetcher().stats,
            waiting_hosts=lambda: (0, 0),
            loop=lambda: LoopState("running", 0.0),
            extra={"revisits": revisits.metrics},
        )
    )
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    text = generate_latest(registry).decode()
    db.close()
    scrape = samples(text)
    labels = frozenset({"job": "j", "worker": "w"}.items())
    for result, count in (("changed", 2), ("unchanged", 0), ("not_modified", 3), ("gone", 1)):
        assert scrape[f"gossamer_revisits_{result}_total", labels] == count
    assert scrape["gossamer_revisits_bytes_saved_total", labels] == 4096
    assert scrape["gossamer_revisits_backlog", labels] == 0
    revisit_names = {name for name in names_of(text) if name.startswith("gossamer_revisits_")}
    assert len(revisit_names) == 8 and revisit_names <= HELP.keys()
    docs = (ROOT / "docs" / "metrics.md").read_text()
    assert all(f"`{name}`" in docs for name in revisit_names)


def test_the_docs_name_every_metric() -> None:
    docs = (ROOT / "docs" / "metrics.md").read_text()
    readme = (ROOT / "README.md").read_text()
    assert [name for name in HELP if f"`{name}`" not in docs] == []
    assert "docs/metrics.md" in readme and "--metrics-port" in readme


def test_worker_and_exporter_flags_are_checked(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    worker = ["cluster", "worker", "--redis", "redis://127.0.0.1:9/0"]
    with pytest.raises(SystemExit) as exit_info:
        main([*worker, "--metrics-port", "99999"])
    assert exit_info.value.code == 2
    assert "not a port number" in capsys.readouterr().err
    monkeypatch.setenv("GOSSAMER_METRICS_PORT", "http")
    assert main(worker) == 2
    assert "invalid setting 'metrics_port'" in capsys.readouterr().err
    monkeypatch.delenv("GOSSAMER_METRICS_PORT")
    assert main([*worker, "--metrics-port", "9100", "--metrics-bind", "a b"]) == 2
    assert "invalid setting 'metrics_bind'" in capsys.readouterr().err
    assert main(["cluster", "metrics", "--redis", "redis://127.0.0.1:9/0"]) == 2
    assert "give --metrics-port" in capsys.readouterr().err


async def test_healthz_says_stopping_once_the_crawl_is_asked_to_stop(tmp_path: Path) -> None:
    server = MetricsServer("local", "w")
    await server.start("127.0.0.1", 0)
    assert server.port
    crawlers: list[Crawler] = []
    answers: list[tuple[int, str, str]] = []

    async def page(request: web.Request) -> web.Response:
        if request.path == "/p1":
            assert server.port
            answers.append(await get(server.port, "/healthz"))
            crawlers[0].stop()  # as SIGTERM does
            answers.append(await get(server.port, "/healthz"))
        links = "".join(f'<a href="/p{i}">{i}</a>' for i in range(PAGES))
        return web.Response(text=f"<html><body>{links}</body></html>", content_type="text/html")

    try:
        async with serve(page) as port:
            flags = {"seeds": [f"http://127.0.0.1:{port}/"], "out": tmp_path, "quiet": True,
                     "text": False, "robots": False}  # fmt: skip
            settings = load_settings(flags, env={})
            seeds = canonical_seeds(settings)
            async with build_crawler(settings, seeds, None, server) as crawler:
                crawlers.append(crawler)
                await asyncio.wait_for(crawler.run(seeds), 30)
    finally:
        await server.close()
    assert [status for status, _, _ in answers] == [200, 503]
    assert answers[1][2] == "stopping\n"
