"""Focused crawls of the topical test web (:mod:`gossamer.testweb.topical`): soft focus finds
the topic early where breadth first does not; records carry their relevance and stats their
harvest rate; bad focus input stops the CLI with exit status 2; a plain crawl imports nothing
of :mod:`gossamer.focus`."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from gossamer.crawl import build_crawler, prepare_out_dir
from gossamer.settings import CrawlSettings, canonical_seeds, load_model
from gossamer.stats import CrawlStats
from gossamer.testweb.topical import TopicalServer, generate_topical

PHRASE = "database transactions, isolation levels and locking"
EXAMPLE = "/reference/storage/engine/concurrency/0/"


@pytest.fixture
async def server() -> AsyncIterator[TopicalServer]:
    async with TopicalServer(generate_topical()) as running:
        yield running


def flags(server: TopicalServer, out: Path, **more: Any) -> dict[str, Any]:
    return {
        "seeds": [server.url("www.test")],
        "out": out,
        "resolve": ["*.test=127.0.0.1"],
        "allow_domains": ["test"],
        "quiet": True,
        "concurrency": 16,
        **more,
    }


async def crawl(settings: CrawlSettings) -> tuple[CrawlStats, list[dict[str, Any]]]:
    seeds = canonical_seeds(settings)
    prepare_out_dir(settings)
    async with build_crawler(settings, seeds) as crawler:
        stats = await crawler.run(seeds)
    lines = (settings.out / "pages.jsonl").read_text().splitlines()
    return stats, [json.loads(line) for line in lines]


def recall(records: list[dict[str, Any]], relevant: set[str]) -> float:
    return sum(r["url"] in relevant for r in records) / len(relevant)


async def test_soft_focus_finds_the_topic_early(server: TopicalServer, tmp_path: Path) -> None:
    relevant = server.web.relevant(server.port)
    plain = load_model(CrawlSettings, flags(server, tmp_path / "bfs", max_pages=150), env={})
    focused = load_model(
        CrawlSettings,
        flags(
            server,
            tmp_path / "soft",
            max_pages=150,
            focus_phrase=PHRASE,
            focus_examples=[server.url("docs.test", EXAMPLE)],
        ),
        env={},
    )
    _, breadth_first = await crawl(plain)
    stats, soft = await crawl(focused)
    assert recall(breadth_first, relevant) < 0.1
    assert recall(soft, relevant) >= 0.3
    judged = [r for r in soft if r["relevance"] is not None]
    assert len(judged) >= 100
    on = [r["relevance"] for r in judged if r["url"] in relevant]
    off = [r["relevance"] for r in judged if r["url"] not in relevant]
    assert sum(v >= 0.5 for v in on) >= 0.9 * len(on)
    assert sum(v < 0.5 for v in off) >= 0.9 * len(off)
    assert all(r["relevance"] is None for r in breadth_first)
    assert stats.focus is not None
    assert stats.focus["judged"] == len(judged)
    assert stats.focus["harvest_rate"] == round(
        sum(r["relevance"] >= 0.5 for r in judged) / len(judged), 4
    )
    assert 0 <= stats.focus["recent_harvest_rate"] <= 1
    assert "harvest" in stats.progress_line()


async def test_hard_focus_fetches_no_link_of_an_irrelevant_page_past_the_tolerance(
    server: TopicalServer, tmp_path: Path
) -> None:
    settings = load_model(
        CrawlSettings,
        flags(server, tmp_path / "hard", max_pages=60, focus_phrase=PHRASE, focus_mode="hard"),
        env={},
    )
    stats, records = await crawl(settings)
    # The portal (irrelevant, tolerance 1) gives its links; its irrelevant children do not.
    assert {r["depth"] for r in records} == {0, 1}
    assert stats.focus is not None and stats.focus["links_dropped"] > 0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def run_cli(args: list[str], tmp_path: Path) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gossamer.cli", "crawl", *args, "--out", str(tmp_path / "out"),
        "--resolve", "*.test=127.0.0.1", "--allow-domain", "test", "--quiet",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    output, _ = await asyncio.wait_for(proc.communicate(), 30)
    return proc.returncode or 0, output.decode()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("example", "message"),
    [
        ("/no/such/page/", "HTTP 404"),
        ("/robots.txt", "not an HTML page"),
        ("closed-port", "cannot be fetched"),
    ],
)
async def test_a_bad_example_page_exits_2(
    server: TopicalServer, tmp_path: Path, example: str, message: str
) -> None:
    url = (
        f"http://docs.test:{_free_port()}/"
        if example == "closed-port"
        else server.url("docs.test", example)
    )
    args = [server.url("www.test"), "--focus-phrase", PHRASE, "--focus-example", url]
    if example == "closed-port":
        args += ["--allow-port", url.split(":")[2].strip("/"), "--max-retries", "0"]
    code, output = await run_cli(args, tmp_path)
    assert code == 2, output
    assert "focus_examples" in output and message in output, output


@pytest.mark.slow
@pytest.mark.parametrize("phrase", ["", "  "])
async def test_an_empty_phrase_exits_2(tmp_path: Path, phrase: str) -> None:
    code, output = await run_cli(["http://www.test/", "--focus-phrase", phrase], tmp_path)
    assert code == 2, output
    assert "focus_phrase" in output, output


@pytest.mark.slow
async def test_focus_settings_without_a_topic_exit_2(tmp_path: Path) -> None:
    code, output = await run_cli(["http://www.test/", "--focus-mode", "hard"], tmp_path)
    assert code == 2, output


@pytest.mark.slow
def test_a_plain_crawl_imports_nothing_of_focus(tmp_path: Path) -> None:
    """None of the focused crawl's modules (content digests, which every crawl may use, are
    not part of it)."""
    script = (
        "import sys, gossamer.cli, gossamer.crawl, gossamer.cluster.worker\n"
        "focus = {'policy', 'topic', 'text', 'learner', 'anchors', 'examples'}\n"
        "loaded = [m for m in sys.modules if m.rpartition('.')[2] in focus\n"
        "          and m.startswith('gossamer.focus.')]\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=30)


def test_the_focus_table_of_a_config_file(tmp_path: Path) -> None:
    config = tmp_path / "gossamer.toml"
    config.write_text(
        'seeds = ["http://a.test/"]\n[focus]\nphrase = "bread baking"\n'
        'examples = ["http://a.test/x"]\nthreshold = 0.6\nmode = "hard"\n'
    )
    settings = load_model(CrawlSettings, {}, config=config, env={})
    assert settings.focus_phrase == "bread baking"
    assert settings.focus_examples == ["http://a.test/x"]
    assert (settings.focus_threshold, settings.focus_mode) == (0.6, "hard")
    env = {"GOSSAMER_FOCUS_PHRASE": "sourdough", "GOSSAMER_FOCUS_EXAMPLES": "http://b.test/"}
    from_env = load_model(CrawlSettings, {"seeds": ["http://a.test/"]}, env=env)
    assert from_env.focused and from_env.focus_examples == ["http://b.test/"]


def test_a_cluster_job_carries_the_focus_settings() -> None:
    from gossamer.settings import JobSettings, settings_from_json, settings_to_json

    job = load_model(
        JobSettings,
        {
            "seeds": ["http://a.test/"],
            "focus_phrase": "bread baking",
            "focus_examples": ["http://a.test/x"],
            "focus_mode": "hard",
        },
        env={},
    )
    stored = settings_from_json(JobSettings, settings_to_json(job))
    assert stored.focused and stored.focus_mode == "hard"
    assert stored.focus_examples == ["http://a.test/x"]
