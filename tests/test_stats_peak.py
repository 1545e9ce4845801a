"""The crawl's peak RSS is its own, not that of the process that started it."""

from __future__ import annotations

import subprocess
import sys

import pytest

PARENT = """
import mmap, subprocess, sys
held = mmap.mmap(-1, 200 << 20)
for offset in range(0, len(held), 4096):
    held[offset] = 1
held.close()  # the parent's peak stays 200 MB; its RSS is small again
child = "from gossamer.stats import peak_rss_mb; print(peak_rss_mb())"
print(subprocess.run([sys.executable, "-c", child], capture_output=True, text=True,
                     check=True).stdout.strip())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="VmHWM is Linux's")
def test_peak_is_not_inherited_from_the_parent() -> None:
    """Linux hands a process started by ``subprocess`` its parent's ``ru_maxrss``: a crawl
    started from a process that once held 200 MB must not report 200 MB."""
    done = subprocess.run([sys.executable, "-c", PARENT], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    peak = float(done.stdout.strip())
    assert 1 < peak < 120, peak
