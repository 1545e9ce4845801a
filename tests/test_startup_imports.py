"""What the ``gossamer`` command loads before it needs it: ``--version`` and ``--help`` build
no subcommand's parser but the crawl's, the crawl's modules load no SOCKS client, no
Public Suffix List and no cookie date parser until a proxy or a cookie asks for them, and a
links-only crawl (``--no-text``) loads no content extraction, archive, focus, metrics,
browser or cluster module, nor aiohttp, nor ``logging.handlers``, and builds no dataclass
outside the modules that still have theirs (each costs start-up its generated methods'
compilation). A parse sandbox's worker loads no ``email`` parser until a page has a date,
and no msgspec (a third of its start-up: with what it imports, 95 M instructions of 290 M)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from tests.local_app import serve_pages

_PROBE = """
import sys
from gossamer.cli import main
try:
    main({argv!r})
except SystemExit:
    pass
{extra}
print()
print(" ".join(sorted(name for name in {names!r} if name in sys.modules)))
"""


def _loaded(argv: list[str], names: list[str], extra: str = "") -> set[str]:
    code = _PROBE.format(argv=argv, names=names, extra=extra)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    return set(done.stdout.splitlines()[-1].split())


def test_version_and_help_load_no_subcommand() -> None:
    names = ["gossamer.rules_cli", "gossamer.cluster.cli", "gossamer.ui.cli", "gossamer.crawl"]
    assert _loaded(["--version"], names) == set()
    assert _loaded(["--help"], names) == set()


def test_the_command_module_loads_nothing_before_main() -> None:
    """``gossamer.cli`` imports gossamer's modules (and asyncio, msgspec) in ``main``, where
    the collector is off: none of them when the module itself is imported."""
    code = "import sys, gossamer.cli\nprint(' '.join(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    modules = set(done.stdout.split())
    assert {name for name in modules if name.startswith("gossamer")} == {"gossamer", "gossamer.cli"}
    assert not modules & {"asyncio", "msgspec"}


def test_main_called_again_in_one_process_freezes_nothing() -> None:
    """The first ``main`` freezes what its imports built out of the collector; a program
    calling it again loads no module, and the garbage it made since stays collectable."""
    code = (
        "import gc\nfrom gossamer.cli import main\n"
        "argv = ['crawl', '--max-pages', '-1', 'http://127.0.0.1:9/']\n"
        "main(argv)\nfrozen = gc.get_freeze_count()\n"
        "cycle = []\ncycle.append(cycle)\ndel cycle\n"
        "main(argv)\nprint(frozen, gc.get_freeze_count())"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    first, second = map(int, done.stdout.split())
    assert first > 0
    assert second == first


def test_crawl_modules_load_no_socks_nor_public_suffixes() -> None:
    names = ["python_socks", "publicsuffixlist", "http.cookiejar", "gossamer.fetch.http"]
    names += ["gossamer.balance.probe"]  # a cluster worker's bandwidth meter
    loaded = _loaded(["--version"], names, extra="import gossamer.crawl.assembly")
    assert loaded == {"gossamer.fetch.http"}


_LINKS_ONLY_NEVER = [
    "gossamer.api.worker",
    "gossamer.cluster",
    "gossamer.extract",
    "gossamer.focus",
    "gossamer.metrics",
    "gossamer.fetch.render",
    "gossamer.sinks.warc",
    "gossamer.wacz",
    "gossamer.rules_cli",
    "playwright",
    "trafilatura",
    "prometheus_client",
    "aiohttp",  # direct requests go through the lean client (gossamer.fetch.lean)
    "tomllib",  # no config file given: no TOML to read
    "logging.handlers",  # crawl.log rotates without it (pickle, queue, socket)
    "email",  # its date parser: loaded by the first HTTP date read (Retry-After, a revisit)
]
"""Modules a ``--no-text`` crawl has no use for: each costs start-up time for nothing."""


async def test_links_only_crawl_loads_no_content_nor_cluster_modules(tmp_path: Path) -> None:
    pages = {"/": '<title>Home</title><a href="/a">a</a>', "/a": "<p>a page</p>"}
    async with serve_pages(pages) as port:
        argv = ["crawl", f"http://127.0.0.1:{port}/", "--no-text", "--quiet", "--delay", "0"]
        argv += ["--out", str(tmp_path / "out"), "--max-pages", "5"]
        records = str(tmp_path / "out" / "pages.jsonl")
        extra = f"print(open({records!r}).read().count(chr(10)))\n{_DATACLASSES}"
        code = _PROBE.format(argv=argv, names=_LINKS_ONLY_NEVER, extra=extra)
        probe = await asyncio.create_subprocess_exec(
            sys.executable, "-c", code, stdout=asyncio.subprocess.PIPE
        )
        out, _ = await asyncio.wait_for(probe.communicate(), 50)
    lines = out.decode().splitlines()
    assert lines[-4] == "2"  # both pages crawled
    assert [name for name in lines[-3].split() if not name.startswith(_STILL_DATACLASSES)] == []
    assert lines[-1].split() == []


_DATACLASSES = """
import dataclasses
print(" ".join(
    f"{name}.{key}" for name, module in list(sys.modules.items()) if name.startswith("gossamer")
    for key, value in vars(module).items()
    if isinstance(value, type) and dataclasses.is_dataclass(value) and value.__module__ == name
))
"""
_STILL_DATACLASSES = (
    "gossamer.fetch.login.Login",  # its cookies kept out of its repr
    "gossamer.fetch.exchange.Exchange",  # the WARC writer changes copies (dataclasses.replace)
    "gossamer.fetch.guard.AddressGuard",  # its verdicts' cache is no field
    "gossamer.fetch.result.FetchConfig",  # checked in __post_init__
    "gossamer.parse.guard.",
    "gossamer.parse.links.",
    "gossamer.frontier.robots.RobotsPolicy",  # its rules compare as equal whatever they hold
)
"""The modules whose dataclasses a links-only crawl still builds."""


def test_a_parse_worker_loads_no_email_parser(tmp_path: Path) -> None:
    found = tmp_path / "modules.txt"
    code = (
        "import runpy, sys\n"
        "sys.argv = ['gossamer.page.sandboxed', str(2 << 30), '1.0', '0']\n"
        "runpy.run_module('gossamer.page.sandboxed', run_name='__main__')\n"
        f"open({str(found)!r}, 'w').write(' '.join(sorted(sys.modules)))\n"
    )
    subprocess.run([sys.executable, "-c", code], stdin=subprocess.DEVNULL, check=True, timeout=60)
    modules = set(found.read_text().split())
    assert "gossamer.parse.links" in modules  # the worker did start
    assert "email.utils" not in modules
    assert "msgspec" not in modules  # the settings' library: the worker has no settings


def test_socks_error_still_named() -> None:
    from python_socks import ProxyError

    from gossamer.fetch.reasons import reason

    assert reason(ProxyError("refused"), "http://127.0.0.1/") == "socks-error"
