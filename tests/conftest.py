"""Fixtures shared by every test package, and the event loop async tests run on: the one a
gossamer process runs on (:func:`gossamer.eventloop.chosen`: uvloop when it is installed,
the standard loop with ``GOSSAMER_EVENT_LOOP=asyncio``); a test marked
``@pytest.mark.asyncio(loop_factories=["asyncio", "uvloop"])`` runs on both."""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest
from tests.tls_certs import TlsFiles, make_tls_files

from gossamer import eventloop


@pytest.fixture(scope="session")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    """A throwaway CA, server and client certificates (made once per session)."""
    return make_tls_files(tmp_path_factory.mktemp("tls"))


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 3 MiB tmpfs, unmounted at the end."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, Callable[[], asyncio.AbstractEventLoop]]:
    """The loop of a process (see the module docstring); every installed one for a test
    that names the loops it runs on."""
    uvloop = eventloop.loop_factory("uvloop")
    loops = {"asyncio": asyncio.new_event_loop} | ({"uvloop": uvloop} if uvloop else {})
    marker = item.get_closest_marker("asyncio")
    if marker is not None and "loop_factories" in marker.kwargs:
        return loops
    chosen = eventloop.chosen()
    return {chosen: loops[chosen]} if chosen in loops else {"asyncio": asyncio.new_event_loop}
