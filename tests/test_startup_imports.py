"""What the ``gossamer`` command loads before it needs it: ``--version`` and ``--help`` build
no subcommand's parser but the crawl's, and the crawl's modules load no SOCKS client, no
Public Suffix List and no cookie date parser until a proxy or a cookie asks for them."""

from __future__ import annotations

import subprocess
import sys

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


def test_crawl_modules_load_no_socks_nor_public_suffixes() -> None:
    names = ["python_socks", "publicsuffixlist", "http.cookiejar", "gossamer.fetch.http"]
    names += ["gossamer.balance.probe"]  # a cluster worker's bandwidth meter
    loaded = _loaded(["--version"], names, extra="import gossamer.crawl.assembly")
    assert loaded == {"gossamer.fetch.http"}


def test_socks_error_still_named() -> None:
    from python_socks import ProxyError

    from gossamer.fetch.reasons import reason

    assert reason(ProxyError("refused"), "http://127.0.0.1/") == "socks-error"
