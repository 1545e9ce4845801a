"""The API's surface: its public names, typed for a user's ``mypy --strict``, and the
``gossamer crawl`` command going through it."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

import gossamer

USER_SCRIPT = """
from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gossamer
from gossamer import Crawl, CrawlSettings, CrawlStats, Handlers, Link, Page, PageRecord


handlers = Handlers()


@handlers.handler(r"/product/\\\\d+")
def product(page: Page) -> Iterator[dict[str, Any] | Link]:
    yield {"name": page.title, "url": page.url}
    yield Link("/related/")


async def main() -> CrawlStats:
    settings = CrawlSettings(seeds=["https://example.org/"], out=Path("out"), max_pages=10)
    crawl = Crawl(settings, handlers=handlers)

    @crawl.handler(r"/about/")
    async def about(page: Page) -> list[dict[str, Any]]:
        return [{"title": page.title}]

    async with crawl:
        async for record in crawl.records():
            assert isinstance(record, PageRecord)
            print(record.url, record.status, [item.fields for item in record.found])
            if record.status == 500:
                crawl.stop()
    return await crawl.wait()


def blocking() -> int:
    stats = gossamer.run("https://example.org/", out="out", resume=True, handlers=handlers)
    return stats.pages


async def worker() -> None:
    job = gossamer.JobSettings(seeds=["https://example.org/"])
    await gossamer.submit("redis://127.0.0.1:6379/0", job)
    w = gossamer.Worker("redis://127.0.0.1:6379/0", out="w0", handlers=handlers)
    stats = await w.run()
    print(stats.pages)
    options = gossamer.WorkerOptions("redis://127.0.0.1:6379/0", metrics_port=9101)
    print(gossamer.Worker.from_options(options, handlers=handlers, signals=True).options.store)


asyncio.run(main())
"""

BAD_SCRIPT = """
from gossamer import Crawl, Page

def wrong(page: Page) -> int:
    return 1

Crawl.handler  # exists
c: Crawl = Crawl("not settings")
"""


@pytest.mark.timeout(120)
def test_a_user_script_passes_mypy_strict(tmp_path: Path) -> None:
    """One run of ``mypy --strict`` over a good script and a bad one: the good one passes,
    the bad one's error is found (the API's types are seen, not ``Any``).

    The gossamer checked is the one under test, found through MYPYPATH, and read as a user's
    mypy reads an installed package: its own modules' errors not reported (``follow_imports =
    silent``). mypy reports errors in modules it finds through MYPYPATH unless the folder is
    also an installed package's (the editable install's): a worktree's ``src`` is not, and
    gossamer's imports of libraries without types (re2, lxml, brotli...), which its own
    config lets pass, were reported as the user's."""
    (tmp_path / "user.py").write_text(USER_SCRIPT, encoding="utf-8")
    (tmp_path / "bad.py").write_text(BAD_SCRIPT, encoding="utf-8")
    config = tmp_path / "mypy.ini"
    config.write_text(
        "[mypy]\nstrict = True\n\n[mypy-gossamer,gossamer.*]\nfollow_imports = silent\n"
    )
    env = dict(os.environ, MYPYPATH=str(Path(gossamer.__file__).parents[1]))
    command = [sys.executable, "-m", "mypy", "--config-file", str(config)]
    command += ["--strict", "--cache-dir", str(tmp_path / "cache")]
    done = subprocess.run(
        [*command, "user.py", "bad.py"],
        capture_output=True,
        text=True,
        env=env,
        timeout=100,
        cwd=tmp_path,
    )
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert errors, done.stdout + done.stderr
    assert all(line.startswith("bad.py:") for line in errors), done.stdout
    assert any('incompatible type "str"; expected "CrawlSettings"' in line for line in errors)


def test_every_public_name_is_exported_and_documented() -> None:
    for name in gossamer.__all__:
        value = getattr(gossamer, name)
        if name != "__version__" and not isinstance(value, type(gossamer.Handler)):
            assert getattr(value, "__doc__", None), name
    assert set(gossamer.__all__) <= set(dir(gossamer))
    with pytest.raises(AttributeError):
        gossamer.no_such_name  # noqa: B018


def test_no_public_name_is_hidden_by_a_module() -> None:
    """``gossamer.status`` or ``gossamer.crawl`` would be the module once it is imported."""
    root = Path(gossamer.__file__).parent
    for name in gossamer.__all__:
        assert not (root / name).exists() and not (root / f"{name}.py").exists(), name


def test_importing_gossamer_loads_no_crawl_code() -> None:
    code = "import sys, gossamer; print(sorted(m for m in sys.modules if m.startswith('gossamer')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "['gossamer']"


def test_the_crawl_command_runs_through_the_api() -> None:
    from tests.test_layers import import_graph

    graph = import_graph()
    assert "gossamer.api" in graph["gossamer.cli"]
    assert "gossamer.crawl.run" not in graph["gossamer.cli"]
    assert "gossamer.crawl.run" in graph["gossamer.api.crawl"]


def _names(module: str) -> set[str]:
    """The names a module of the package uses or imports (read from its source)."""
    path = Path(gossamer.__file__).parent.joinpath(*module.split(".")[1:]).with_suffix(".py")
    tree = ast.parse(path.read_text("utf-8"))
    used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    attributes = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    imported = {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    return used | attributes | imported


def test_the_cluster_worker_command_runs_through_the_api() -> None:
    """``gossamer cluster worker`` runs its worker as a Python program does, through
    :class:`gossamer.Worker`: its handler is the ``gossamer`` command's (``gossamer.cluster``
    lies below the API) and neither command module runs the worker loop itself."""
    from gossamer.cli import build_parser

    args = build_parser().parse_args(["cluster", "worker", "--redis", "redis://127.0.0.1:1"])
    assert args.handler.__module__ == "gossamer.cli"
    assert "Worker" in _names("gossamer.cli")
    assert "run_worker" not in _names("gossamer.cli") | _names("gossamer.cluster.cli")
