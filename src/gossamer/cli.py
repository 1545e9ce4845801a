"""The ``gossamer`` command: a thin layer over the Python API (:mod:`gossamer.api`); a crawl
runs through :class:`gossamer.Crawl` and a cluster worker through :class:`gossamer.Worker`, as
a Python program's do."""

from __future__ import annotations

import argparse
import gc
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

from gossamer import __version__

EXIT_BAD_CONFIG = 2
EXIT_FAILURE = 1


def _crawl_parser(sub: Any) -> None:
    from gossamer.flags import add_crawl_flags

    crawl = sub.add_parser("crawl", help="crawl from seed URLs on this machine")
    add_crawl_flags(crawl)
    crawl.set_defaults(handler=_crawl)


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (exit status 2), like invalid settings."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_CONFIG, f"gossamer: invalid flag: {message}\n")


def _cluster_parser(sub: Any) -> None:
    from gossamer.cluster.cli import add_cluster_parser

    add_cluster_parser(sub, _cluster_worker)


def _plan_parser(sub: Any) -> None:
    from gossamer.balance.plan import add_plan_parser

    add_plan_parser(sub)


def _rules_parser(sub: Any) -> None:
    from gossamer.rules_cli import add_rules_parser

    add_rules_parser(sub)


def _wacz_parser(sub: Any) -> None:
    from gossamer.wacz.cli import add_wacz_parser

    add_wacz_parser(sub)


def _ui_parser(sub: Any) -> None:
    from gossamer.ui.cli import add_ui_parser

    add_ui_parser(sub)


_COMMANDS: dict[str, tuple[Callable[[Any], None], str]] = {
    "cluster": (_cluster_parser, "crawl one job with many workers through Redis"),
    "plan": (_plan_parser, "node cost plan: first-fit placement and cost curve"),
    "rules": (_rules_parser, "check, test and try rule documents"),
    "ui": (_ui_parser, "serve the web dashboard of crawls and cluster jobs"),
    "wacz": (_wacz_parser, "package crawls' WARC files as a WACZ file"),
}
"""Commands whose modules are imported and parsers built only when they run (or for
``--help``): ``gossamer crawl`` starts without loading the cluster commands (and their
thirty-odd flags per subcommand), the planner, the rule commands or the web app."""


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The argument parser of every subcommand; with ``argv``, the commands of
    :data:`_COMMANDS` other than the one ``argv`` runs get a placeholder with their help line."""
    parser = _Parser(prog="gossamer", description=__doc__)
    parser.add_argument("--version", action="version", version=f"gossamer {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    _crawl_parser(sub)
    command = next((arg for arg in argv or () if not arg.startswith("-")), None)
    # No command (``--version``, ``--help``): the placeholders' help lines are all it shows.
    unknown = command is not None and command not in ("crawl", *_COMMANDS)
    for name, (add_parser, summary) in _COMMANDS.items():
        if argv is None or unknown or name == command:
            add_parser(sub)
        else:
            sub.add_parser(name, help=summary, add_help=False)
    return parser


@contextmanager
def _no_collection() -> Iterator[None]:
    """No garbage collection while the block runs: the modules a command imports allocate
    for good, so the collections their imports would set off find nothing; what the block
    built is frozen out of the collector at its end (`gc.freeze`), as the crawl freezes what
    start-up built (`gossamer.crawl.tune_gc`), or the first collection after it would walk it
    all once more. The event loop's and the settings' modules, then the crawl's: 25 M
    instructions of a one-page crawl's 705 M. Only a block that loaded modules freezes: a
    program calling ``main`` again loads none, and its garbage stays collectable."""
    enabled = gc.isenabled()
    loaded = len(sys.modules)
    gc.disable()
    try:
        yield
    finally:
        if len(sys.modules) > loaded:
            gc.freeze()
        if enabled:
            gc.enable()


def _crawl(args: argparse.Namespace) -> int:
    with _no_collection():
        from gossamer import eventloop, tls

        tls.defer_ca_file()  # no https page, no CA bundle read (see gossamer.tls)
        from gossamer.api import Crawl
        from gossamer.crawl import summary
        from gossamer.flags import settings_from_args
        from gossamer.settings import CrawlSettings

        # The same entry a Python program uses: the command adds signals and the progress
        # line.
        crawl = Crawl(settings_from_args(args, CrawlSettings), signals=True, progress=None)
    stats = eventloop.run(crawl.run())
    if not crawl.settings.quiet:
        print(summary(stats, crawl.settings.out))
        from gossamer.wacz.cli import default_target

        wacz = default_target(crawl.settings.out)
        if crawl.settings.wacz and wacz.exists():
            print(f"WACZ: {wacz} (docs/wacz.md)")
    return 0


def _cluster_worker(args: argparse.Namespace) -> int:
    from gossamer import tls

    with _no_collection():
        tls.defer_ca_file()  # as ``gossamer crawl`` does
        from gossamer.api import Worker
        from gossamer.cluster.cli import worker_options
        from gossamer.cluster.resilient import run
        from gossamer.crawl import summary

        # The entry a Python program uses; a lost Redis ends the command with one line.
        worker = Worker.from_options(worker_options(args), signals=True)
    stats = run(worker.run())
    if not args.quiet:
        print(summary(stats, worker.options.out or Path("crawl-out")))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``gossamer`` console script. Importing this module loads none of
    gossamer's other modules: they are loaded here, with no garbage collection."""
    argv = sys.argv[1:] if argv is None else argv
    with _no_collection():
        from gossamer.errors import CommandError
        from gossamer.logs import DEFAULT_LEVEL, logging_to_stderr
        from gossamer.redact import redact_text
        from gossamer.settings import SettingsError

        parser = build_parser(argv)
    args = parser.parse_args(argv)
    level = getattr(args, "log_level", DEFAULT_LEVEL)
    try:
        with logging_to_stderr(level, getattr(args, "log_json", False)):
            code: int = args.handler(args)
    except SettingsError as exc:
        print(f"gossamer: {redact_text(str(exc))}", file=sys.stderr)
        return EXIT_BAD_CONFIG
    except CommandError as exc:
        print(f"gossamer: {redact_text(str(exc))}", file=sys.stderr)
        return exc.exit_status or EXIT_FAILURE
    return code


if __name__ == "__main__":
    sys.exit(main())
