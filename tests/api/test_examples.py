"""Every API example in ``examples/`` runs to its end against the bundled test web (and the
worker's against a private redis-server), each within a bounded time."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import gossamer

EXAMPLES = Path(__file__).parents[2] / "examples"
LAST_LINE = {
    "api_records.py": r"^\d+ pages, 0 errors, in [\d.]+s$",
    "api_stop_resume.py": r"^resumed: \d+ pages in all \([1-9]\d* new\)$",
    "api_handlers.py": r"^items: .*items\.jsonl$",
    "api_worker.py": r"^w0: \d+ pages w1: \d+ pages$",
}
"""What each example prints last when it worked."""


def test_every_api_example_is_run() -> None:
    assert {path.name for path in EXAMPLES.glob("api_*.py")} == set(LAST_LINE)


@pytest.mark.parametrize("name", sorted(LAST_LINE))
def test_the_example_runs(name: str, tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(Path(gossamer.__file__).parents[1]))
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        env=env,
        timeout=50,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    last = done.stdout.strip().splitlines()[-1]
    assert re.match(LAST_LINE[name], last), done.stdout
    assert (tmp_path / "out").exists()
