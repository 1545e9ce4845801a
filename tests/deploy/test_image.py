"""Build deploy/Dockerfile and run the image, where a container engine works (docker or podman
with a daemon or rootless setup, and a registry to pull python:3.11-slim from); skipped
elsewhere. The install steps themselves are tested everywhere by test_install.py."""

from __future__ import annotations

import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]


def engine() -> str:
    for name in ("docker", "podman"):
        path = shutil.which(name)
        if path and subprocess.run([path, "info"], capture_output=True, timeout=30).returncode == 0:
            return path
    pytest.skip("no working container engine (docker or podman) on this machine")


def test_image_builds_and_runs_as_an_unprivileged_user() -> None:
    tool = engine()
    tag = f"gossamer-test:{uuid.uuid4().hex[:12]}"
    build = subprocess.run(
        [tool, "build", "-f", "deploy/Dockerfile", "-t", tag, "."],
        cwd=ROOT, capture_output=True, text=True, timeout=1100,
    )  # fmt: skip
    if build.returncode != 0 and "python:3.11-slim" in build.stderr and "pull" in build.stderr:
        pytest.skip("the base image cannot be pulled here")
    assert build.returncode == 0, build.stderr[-4000:]
    try:
        run = subprocess.run(
            [tool, "run", "--rm", "--entrypoint", "sh", tag, "-c",
             "id -u && gossamer cluster worker --help && test -x /usr/bin/tini"],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert run.returncode == 0, run.stderr
        assert run.stdout.splitlines()[0] == "10001"
        assert "--metrics-port" in run.stdout
    finally:
        subprocess.run([tool, "rmi", "-f", tag], capture_output=True, timeout=120)
