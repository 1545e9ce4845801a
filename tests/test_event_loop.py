"""The event loop a process runs on (:mod:`gossamer.eventloop`): ``gossamer crawl`` and
:func:`gossamer.run` crawl on uvloop when it is installed and on the standard loop when
``GOSSAMER_EVENT_LOOP=asyncio`` asks for it (crawl.log's crawl-started event names the loop);
a name the variable does not know is a settings error (exit status 2)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.local_app import serve_pages

from gossamer import eventloop
from gossamer.settings import InvalidSetting

PAGES = {"/": '<title>Home</title><a href="/a">a</a>', "/a": "<p>a page</p>"}
HAS_UVLOOP = eventloop.loop_factory("uvloop") is not None


def _started(out: Path) -> dict[str, object]:
    """crawl.log's crawl-started event."""
    events = [json.loads(line) for line in (out / "crawl.log").read_text().splitlines()]
    return next(e for e in events if e.get("event") == "crawl-started")


def test_the_environment_chooses_the_loop() -> None:
    assert eventloop.chosen({}) == "uvloop"
    assert eventloop.chosen({eventloop.ENV: " AsyncIO "}) == "asyncio"
    assert eventloop.chosen({eventloop.ENV: "uvloop"}) == "uvloop"
    with pytest.raises(InvalidSetting, match="GOSSAMER_EVENT_LOOP"):
        eventloop.chosen({eventloop.ENV: "trio"})


@pytest.mark.parametrize("loop", ["uvloop", "asyncio"])
def test_run_runs_on_the_loop_it_is_given(loop: eventloop.Loop) -> None:
    async def kind() -> str:
        return eventloop.running()

    expected = "uvloop" if loop == "uvloop" and HAS_UVLOOP else "asyncio"
    assert eventloop.run(kind(), loop) == expected


@pytest.mark.parametrize(("env", "expected"), [(None, "uvloop"), ("asyncio", "asyncio")])
async def test_the_crawl_command_runs_on_the_chosen_loop(
    tmp_path: Path, env: str | None, expected: str
) -> None:
    if expected == "uvloop" and not HAS_UVLOOP:
        pytest.skip("uvloop is not installed")
    environ = {k: v for k, v in os.environ.items() if k != eventloop.ENV}
    environ |= {eventloop.ENV: env} if env else {}
    out = tmp_path / "out"
    async with serve_pages(PAGES) as port:
        crawl = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "gossamer", "crawl", f"http://127.0.0.1:{port}/",
            "--out", str(out), "--quiet", "--delay", "0", "--no-text",
            env=environ,
        )  # fmt: skip
        assert await asyncio.wait_for(crawl.wait(), 50) == 0
    assert _started(out)["event_loop"] == expected
    assert len((out / "pages.jsonl").read_text().splitlines()) == 2


def test_the_python_api_runs_on_the_chosen_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gossamer

    for env, expected in (
        ("asyncio", "asyncio"),
        ("uvloop", "uvloop" if HAS_UVLOOP else "asyncio"),
    ):
        monkeypatch.setenv(eventloop.ENV, env)
        out = tmp_path / env
        stats = gossamer.run("http://127.0.0.1:9/", out=out, quiet=True, max_retries=0)
        assert stats.errors == 1
        assert _started(out)["event_loop"] == expected


def test_an_unknown_loop_is_a_settings_error(tmp_path: Path) -> None:
    environ = os.environ | {eventloop.ENV: "trio"}
    done = subprocess.run(
        [sys.executable, "-m", "gossamer", "crawl", "http://127.0.0.1:9/", "--out", str(tmp_path)],
        env=environ, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.startswith("gossamer: invalid setting 'GOSSAMER_EVENT_LOOP'")
    assert not (tmp_path / "crawl.log").exists()
