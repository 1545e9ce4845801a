"""The crawl's wiring opens its resources on an exit stack: a start that fails closes what was
opened, and a close that fails does not skip the others."""

from __future__ import annotations

import os
from pathlib import Path

import msgspec
import pytest
from tests.test_engine import settings_for

from gossamer.crawl import Stages, open_stages
from gossamer.fetch.http import Fetcher
from gossamer.settings import SettingsError
from gossamer.sinks.jsonl import JsonlSink


def open_files(under: Path) -> list[str]:
    """The files below ``under`` this process holds open."""
    names = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(under)):
            names.append(target)
    return names


async def test_a_bad_setting_after_the_outputs_opened_closes_them(tmp_path: Path) -> None:
    out = tmp_path / "out"
    settings = settings_for(out, proxies=["http://127.0.0.1:9"])  # and no seed to check with
    with pytest.raises(SettingsError, match="proxy_check_url"):
        async with open_stages(settings, []):
            pass
    assert (out / "crawl.db").exists()  # opened before the setting was refused
    assert open_files(out) == []


async def test_a_close_that_fails_skips_no_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    settings = settings_for(out, seeds=["http://a.test/"])
    close = JsonlSink.close

    def failing(sink: JsonlSink) -> None:
        close(sink)
        raise RuntimeError("disk gone")

    monkeypatch.setattr(JsonlSink, "close", failing)
    with pytest.raises(RuntimeError, match="disk gone"):
        async with open_stages(settings, ["http://a.test/"]):
            pass
    assert open_files(out) == []


async def test_a_browser_that_cannot_start_closes_the_fetcher_and_the_outputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    settings = settings_for(
        out, seeds=["http://a.test/"], warc=True, render="always", render_browser=tmp_path / "no"
    )
    closed: list[Fetcher] = []
    close = Fetcher.close

    async def closing(fetcher: Fetcher) -> None:
        closed.append(fetcher)
        await close(fetcher)

    monkeypatch.setattr(Fetcher, "close", closing)
    with pytest.raises(SettingsError, match="render"):
        async with open_stages(settings, ["http://a.test/"]):
            pass
    assert len(closed) == 1  # built before the browser was looked for
    assert (out / "crawl.db").exists()
    assert open_files(out) == []


def test_stages_hold_what_was_built_and_do_nothing() -> None:
    """Starting the stages and fetching focus examples are functions of their own
    (``gossamer.crawl.assembly``); the bundle is data only."""
    assert issubclass(Stages, msgspec.Struct)
    fields = set(Stages.__struct_fields__)
    assert {"db", "fetcher", "proxies", "gate", "renderer"} <= fields
    behaviour = [
        name for name, value in vars(Stages).items() if callable(value) and name[:2] != "__"
    ]
    assert behaviour == []


async def test_only_a_cluster_worker_meters_its_bandwidth(tmp_path: Path) -> None:
    # The meter feeds a worker's capability figures alone: a crawl of one process reports
    # none, so its fetcher counts no body chunk into one.
    settings = settings_for(tmp_path / "local", seeds=["http://a.test/"])
    async with open_stages(settings, ["http://a.test/"]) as stages:
        assert stages.meter is None
        assert stages.fetcher.meter is None
    settings = settings_for(tmp_path / "worker", seeds=["http://a.test/"])
    async with open_stages(settings, ["http://a.test/"], worker="w1") as stages:
        assert stages.meter is not None
        assert stages.fetcher.meter is stages.meter
