"""The crawl's wiring opens its resources on an exit stack: a start that fails closes what was
opened, and a close that fails does not skip the others."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tests.test_engine import settings_for

from gossamer.crawl import open_stages
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
