"""--render as a process: no browser process outlives a crawl stopped by SIGTERM, SIGINT or
kill -9; without Playwright or the browser, --render exits with status 2; a plain crawl
never imports Playwright."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil  # type: ignore[import-untyped]
import pytest
from tests.fetch.render.site import serve_site

pytestmark = [pytest.mark.slow, pytest.mark.timeout(60)]

ROOT = Path(__file__).resolve().parents[3]
ENV = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}"}


def _browsers(pid: int) -> list[psutil.Process]:
    """The browser processes under ``pid`` (Chromium and its helpers)."""
    try:
        children = psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []
    return [p for p in children if "chrom" in _name(p)]


def _name(process: psutil.Process) -> str:
    try:
        return str(process.name())
    except psutil.Error:
        return ""


def _alive(processes: list[psutil.Process]) -> list[psutil.Process]:
    alive = []
    for process in processes:
        try:
            if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                alive.append(process)
        except psutil.Error:
            pass
    return alive


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
async def test_no_browser_outlives_the_crawler(tmp_path: Path, signum: int) -> None:
    async with serve_site() as (_, port):
        crawler = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "gossamer.cli", "crawl", f"http://127.0.0.1:{port}/js/poll",
            "--out", str(tmp_path / "out"), "--render", "always", "--render-timeout", "3",
            "--quiet", "--no-text",
            env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        browsers: list[psutil.Process] = []
        for _ in range(300):  # the browser starts within a few seconds
            browsers = _browsers(crawler.pid)
            if len(browsers) >= 2:  # the browser and at least its first helper
                break
            await asyncio.sleep(0.05)
        assert browsers, "no browser started"
        await asyncio.sleep(0.5)  # a render under way
        browsers = _browsers(crawler.pid)
        crawler.send_signal(signum)
        await asyncio.wait_for(crawler.wait(), 30)
        for _ in range(200):
            if not _alive(browsers):
                break
            await asyncio.sleep(0.05)
        left = _alive(browsers)
        for process in left:
            process.kill()
        assert not left, [p.cmdline()[:2] for p in left]


def _run(args: list[str], tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], env=env, capture_output=True, text=True, timeout=30,
        cwd=tmp_path,
    )  # fmt: skip


def _without_playwright(tmp_path: Path) -> dict[str, str]:
    """An environment whose Python cannot import Playwright (a sitecustomize hides it)."""
    hide = tmp_path / "hide"
    hide.mkdir()
    (hide / "sitecustomize.py").write_text("import sys\nsys.modules['playwright'] = None\n")
    return {**ENV, "PYTHONPATH": f"{hide}{os.pathsep}{ROOT / 'src'}"}


@pytest.mark.parametrize("mode", ["auto", "always"])
def test_render_without_playwright_exits_2(tmp_path: Path, mode: str) -> None:
    crawl = ["-m", "gossamer.cli", "crawl", "http://127.0.0.1:9/", "--render", mode]
    done = _run([*crawl, "--out", str(tmp_path / "out")], tmp_path, _without_playwright(tmp_path))
    assert done.returncode == 2, done.stderr
    assert "Playwright" in done.stderr
    assert "pip install 'gossamer[render]'" in done.stderr
    assert not (tmp_path / "out" / "crawl.db").exists()


def test_render_without_the_browser_exits_2(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-chromium"
    crawl = ["-m", "gossamer.cli", "crawl", "http://127.0.0.1:9/", "--render", "always"]
    done = _run([*crawl, "--render-browser", str(missing), "--out", "out"], tmp_path, ENV)
    assert done.returncode == 2, done.stderr
    assert str(missing) in done.stderr and "chromium-headless-shell" in done.stderr


def test_a_plain_crawl_never_imports_playwright(tmp_path: Path) -> None:
    code = (
        "import sys, gossamer.cli, gossamer.crawl, gossamer.fetch.render\n"
        "assert not [m for m in sys.modules if m.startswith('playwright')]\n"
    )
    done = _run(["-c", code], tmp_path, ENV)
    assert done.returncode == 0, done.stderr
    env = _without_playwright(tmp_path)
    crawl = ["-m", "gossamer.cli", "crawl", "http://127.0.0.1:9/", "--max-pages", "1"]
    done = _run([*crawl, "--out", "out", "--quiet", "--max-retries", "0"], tmp_path, env)
    assert done.returncode == 0, done.stderr
