"""The ``gossamer`` command."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, NoReturn, get_args, get_origin

from gossamer import __version__
from gossamer.cluster.errors import ClusterError
from gossamer.redact import redact_text
from gossamer.settings import CrawlSettings, SettingsError, load_settings

EXIT_BAD_CONFIG = 2
EXIT_FAILURE = 1


def _crawl_parser(sub: Any) -> None:
    crawl = sub.add_parser("crawl", help="crawl from seed URLs on this machine")
    _add_crawl_flags(crawl)
    crawl.set_defaults(handler=_crawl)


def _add_crawl_flags(crawl: argparse.ArgumentParser) -> None:
    """Seeds and every crawl setting as a flag (``crawl`` and ``cluster submit``)."""
    crawl.add_argument("seeds", nargs="*", metavar="SEED", help="start URLs")
    crawl.add_argument("--seeds-file", type=Path, help="file with one seed URL per line")
    crawl.add_argument("--config", type=Path, help="TOML settings file")
    crawl.add_argument("--out", type=Path, help="output directory (default ./crawl-out)")
    crawl.add_argument(
        "--allow-domain",
        dest="allow_domains",
        action="append",
        metavar="DOMAIN",
        help="also crawl this domain and its subdomains (repeatable)",
    )
    crawl.add_argument(
        "--allow-port",
        dest="allow_ports",
        action="append",
        type=int,
        metavar="PORT",
        help="also crawl this port of allowed hosts (repeatable; the seeds' ports, 80 and 443 "
        "are allowed)",
    )
    crawl.add_argument("--max-pages", type=int, help="stop after this many records")
    crawl.add_argument("--max-depth", type=int, help="skip links deeper than this")
    crawl.add_argument("--concurrency", type=int, help="requests in flight in all (64)")
    crawl.add_argument("--per-host", type=int, help="requests in flight per host (2)")
    crawl.add_argument("--delay", type=float, help="minimum seconds between starts per host")
    crawl.add_argument("--user-agent", help="User-Agent header")
    crawl.add_argument(
        "--no-robots", dest="robots", action="store_const", const=False, help="ignore robots.txt"
    )
    crawl.add_argument(
        "--resolve",
        action="append",
        metavar="HOST=IP",
        help="map a host (or *.domain) to an address, like curl (repeatable)",
    )
    crawl.add_argument(
        "--resume", action="store_const", const=True, help="continue the crawl in --out"
    )
    crawl.add_argument(
        "--overwrite", action="store_const", const=True, help="discard a crawl in --out"
    )
    crawl.add_argument(
        "--quiet", action="store_const", const=True, help="no progress line or summary"
    )
    _add_setting_flags(crawl)


_FLAG_TYPES: dict[Any, Any] = {int: int, float: float, str: str, Path: Path}


def _add_setting_flags(parser: argparse.ArgumentParser) -> None:
    """A ``--field-name`` flag for every remaining scalar field of the settings model."""
    taken = {action.dest for action in parser._actions}
    for name, info in CrawlSettings.model_fields.items():
        if name in taken:
            continue
        flag = "--" + name.replace("_", "-")
        kinds = [info.annotation]
        if get_origin(info.annotation) is not Literal:
            kinds = [a for a in get_args(info.annotation) if a is not type(None)] or kinds
        if kinds[0] is bool:
            on = info.default is not True  # a setting on by default gets a --no-NAME flag
            flag = flag if on else "--no-" + name.replace("_", "-")
            parser.add_argument(
                flag, dest=name, action="store_const", const=on, help=info.description
            )
        elif get_origin(kinds[0]) is Literal:
            choices = list(get_args(kinds[0]))
            parser.add_argument(flag, dest=name, choices=choices, help=info.description)
        elif kinds[0] in _FLAG_TYPES:
            parser.add_argument(flag, dest=name, type=_FLAG_TYPES[kinds[0]], help=info.description)


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (exit status 2), like invalid settings."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_CONFIG, f"gossamer: invalid flag: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = _Parser(prog="gossamer", description=__doc__)
    parser.add_argument("--version", action="version", version=f"gossamer {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    _crawl_parser(sub)
    from gossamer.cluster.cli import add_cluster_parser

    add_cluster_parser(sub, _add_crawl_flags)
    from gossamer.balance.plan import add_plan_parser

    add_plan_parser(sub)
    return parser


def crawl_settings(args: argparse.Namespace, skip: tuple[str, ...] = ()) -> CrawlSettings:
    """The settings given by the crawl flags of ``args`` (plus --config and environment)."""
    ignored = ("command", "handler", "config", "cluster_command", *skip)
    flags = {k: v for k, v in vars(args).items() if k not in ignored}
    if not flags["seeds"]:
        flags["seeds"] = None
    return load_settings(flags, config=args.config)


def _crawl(args: argparse.Namespace) -> int:
    from gossamer.crawl import run_crawl, summary

    settings = crawl_settings(args)
    stats = asyncio.run(run_crawl(settings))
    if not settings.quiet:
        print(summary(stats, settings.out))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``gossamer`` console script."""
    args = build_parser().parse_args(argv)
    try:
        code: int = args.handler(args)
    except SettingsError as exc:
        print(f"gossamer: {redact_text(str(exc))}", file=sys.stderr)
        return EXIT_BAD_CONFIG
    except ClusterError as exc:
        print(f"gossamer: {redact_text(str(exc))}", file=sys.stderr)
        return EXIT_FAILURE
    return code


if __name__ == "__main__":
    sys.exit(main())
