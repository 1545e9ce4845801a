"""The image's install steps, run here: the files deploy/Dockerfile's build stage COPYs, and its
`RUN sh deploy/install.sh ...`, into a fresh virtualenv; then a worker started from that
virtualenv crawls a job. The Dockerfile is read, not restated, so the image cannot drift from
what this test installs."""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.redis_server import RedisServer

from gossamer.testweb import TestWebServer, generate

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "deploy" / "Dockerfile"

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]


def build_stage() -> list[str]:
    """The instructions of the Dockerfile's `build` stage (continuation lines joined)."""
    text = DOCKERFILE.read_text().replace("\\\n", " ")
    lines = [line.strip() for line in text.splitlines()]
    start = next(i for i, line in enumerate(lines) if re.fullmatch(r"FROM \S+ AS build", line))
    stage: list[str] = []
    for line in lines[start + 1 :]:
        if line.startswith("FROM "):
            break
        if line and not line.startswith("#"):
            stage.append(line)
    return stage


def copy_sources(stage: list[str], tree: Path) -> None:
    """What the stage COPYs from the build context, copied into ``tree``."""
    workdir = next(line.split()[1] for line in stage if line.startswith("WORKDIR "))
    for line in stage:
        if not line.startswith("COPY "):
            continue
        *sources, dest = line.split()[1:]
        target = tree / Path(dest if dest.startswith("/") else f"{workdir}/{dest}").relative_to(
            workdir
        )
        for source in sources:
            path = ROOT / source
            if path.is_dir():
                shutil.copytree(
                    path, target, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "*.so")
                )
            else:
                file = target / path.name if dest.endswith("/") else target
                file.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, file)


def test_the_image_install_steps_give_a_working_worker(tmp_path: Path) -> None:
    stage = build_stage()
    runs = [line.removeprefix("RUN ") for line in stage if line.startswith("RUN ")]
    # the first installs the C compiler, which this machine has (it built the tests' tree)
    assert runs[0].startswith("apt-get update ") and "gcc" in runs[0], runs
    assert runs[1:] == ["sh deploy/install.sh /opt/gossamer"], runs
    tree = tmp_path / "src"
    copy_sources(stage, tree)
    venv = tmp_path / "venv"
    command = [arg.replace("/opt/gossamer", str(venv)) for arg in shlex.split(runs[1])]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PYTHON"] = sys.executable  # a Python 3.11 like the image's; install.sh makes the venv
    result = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, timeout=400)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]

    python = venv / "bin" / "python"
    where = subprocess.run(
        [python, "-c", "import gossamer, importlib.util as u; print(gossamer.__file__); "
         "print(u.find_spec('pytest') is None, u.find_spec('playwright') is None); "
         "from gossamer.parse import native; print(all(native.in_use().values()))"],
        env=env, capture_output=True, text=True, check=True, timeout=60,
    ).stdout.split()  # fmt: skip
    assert where[0].startswith(str(venv)), where
    assert where[1:3] == ["True", "True"], "dev or render packages in the runtime install"
    assert where[3] == "True", "a C part was not built"
    asyncio.run(_crawl_with(venv / "bin" / "gossamer", tmp_path, env))


async def _crawl_with(gossamer: Path, tmp_path: Path, env: dict[str, str]) -> None:
    """Submit a small job and crawl it with one worker, both run from ``gossamer``."""
    web = generate(2, hosts=2, pages_per_host=5, specials=())
    with RedisServer(appendonly=True, password="s3cret") as redis:
        async with TestWebServer(web, flaky_failures=0) as server:
            seed = server.url(0)
            web_args = ["--resolve", "*.test=127.0.0.1", "--allow-domain", "test", "--quiet"]
            submit = await asyncio.create_subprocess_exec(
                gossamer, "cluster", "submit", "--redis", redis.url, seed, *web_args, env=env,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
            )  # fmt: skip
            out, _ = await asyncio.wait_for(submit.communicate(), 60)
            assert submit.returncode == 0, out.decode()
            worker = await asyncio.create_subprocess_exec(
                gossamer, "cluster", "worker", "--redis", redis.url, "--out",
                str(tmp_path / "out"), "--quiet", env=env,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
            )  # fmt: skip
            try:
                out, _ = await asyncio.wait_for(worker.communicate(), 90)
            finally:
                if worker.returncode is None:
                    worker.kill()
                    await worker.wait()
            assert worker.returncode == 0, out.decode()
            reachable = web.reachable([seed], port=server.port)
    pages = (tmp_path / "out" / "pages.jsonl").read_text().splitlines()
    assert len(pages) >= len(reachable) > 0
