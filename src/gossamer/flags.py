"""Command-line flags of the settings models, shared by ``gossamer crawl`` and the cluster
commands: every field of a model becomes a ``--field-name`` flag, and the flags given become
settings (merged with ``--config`` and the environment by :func:`gossamer.settings.load_model`).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import msgspec

from gossamer.logs import DEFAULT_LEVEL, LEVELS
from gossamer.settings import (
    ClusterSettings,
    CrawlSettings,
    Settings,
    SettingsModel,
    load_model,
    setting_description,
    setting_type,
)

_FLAG_TYPES: dict[Any, Any] = {int: int, float: float, str: str, Path: Path}
_NOT_SETTINGS = ("command", "handler", "config", "cluster_command", "log_level", "log_json")
"""Parsed arguments that are no settings: the command's own, and the logging flags."""


def add_crawl_flags(parser: argparse.ArgumentParser, *, cluster: bool = False) -> None:
    """Seeds and every crawl setting as a flag; with ``cluster`` every cluster setting too,
    in a group of its own (``cluster submit``, ``cluster up``)."""
    parser.add_argument("seeds", nargs="*", metavar="SEED", help="start URLs")
    parser.add_argument("--seeds-file", type=Path, help="file with one seed URL per line")
    parser.add_argument("--config", type=Path, help="TOML settings file")
    parser.add_argument("--out", type=Path, help="output directory (default ./crawl-out)")
    parser.add_argument(
        "--allow-domain",
        dest="allow_domains",
        action="append",
        metavar="DOMAIN",
        help="also crawl this domain and its subdomains (repeatable)",
    )
    parser.add_argument(
        "--allow-port",
        dest="allow_ports",
        action="append",
        type=int,
        metavar="PORT",
        help="also crawl this port of allowed hosts (repeatable; the seeds' ports, 80 and 443 "
        "are allowed)",
    )
    parser.add_argument(
        "--rules",
        action="append",
        type=Path,
        metavar="PATH",
        help="rule documents: a file, or a directory of *.toml and *.json (repeatable); "
        "items go to OUT/items.jsonl (see docs/rules.md)",
    )
    parser.add_argument(
        "--rule-timeout", type=float, metavar="SECONDS", help="time a page's rule may take (5)"
    )
    parser.add_argument("--max-pages", type=int, help="stop after this many records")
    parser.add_argument("--max-depth", type=int, help="skip links deeper than this")
    parser.add_argument("--concurrency", type=int, help="requests in flight in all (64)")
    parser.add_argument("--per-host", type=int, help="requests in flight per host (2)")
    parser.add_argument(
        "--per-domain",
        type=int,
        help="requests in flight over the hosts of one registrable domain "
        "(a quarter of --concurrency, at least --per-host)",
    )
    parser.add_argument("--delay", type=float, help="minimum seconds between starts per host")
    parser.add_argument("--user-agent", help="User-Agent header")
    parser.add_argument(
        "--no-robots", dest="robots", action="store_const", const=False, help="ignore robots.txt"
    )
    parser.add_argument(
        "--resolve",
        action="append",
        metavar="HOST=IP",
        help="map a host (or *.domain) to an address, like curl (repeatable)",
    )
    parser.add_argument(
        "--proxy",
        dest="proxies",
        action="append",
        metavar="URL",
        help="send requests through this proxy: http://, https:// or socks5://, with "
        "user:password@ if needed (repeatable; credentials are safer in --proxies-file or "
        "GOSSAMER_PROXIES, which ps does not show)",
    )
    parser.add_argument(
        "--render-url",
        dest="render_url",
        action="append",
        metavar="REGEX",
        help="always render URLs matching this regular expression (RE2 syntax) in headless "
        "Chromium (repeatable; see --render)",
    )
    parser.add_argument(
        "--focus-example",
        dest="focus_examples",
        action="append",
        metavar="URL",
        help="an example page of the --focus-phrase topic, fetched first (repeatable)",
    )
    parser.add_argument(
        "--sitemaps",
        choices=("on", "off"),
        help="read the sitemaps and feeds robots.txt names and --sitemap gives (on)",
    )
    parser.add_argument(
        "--sitemap",
        action="append",
        metavar="URL",
        help="a sitemap or feed to read at the start: its URLs are queued (repeatable)",
    )
    parser.add_argument(
        "--resume", action="store_const", const=True, help="continue the crawl in --out"
    )
    parser.add_argument(
        "--overwrite", action="store_const", const=True, help="discard a crawl in --out"
    )
    parser.add_argument(
        "--quiet", action="store_const", const=True, help="no progress line or summary"
    )
    add_setting_flags(parser, CrawlSettings)
    add_log_flags(parser)
    if cluster:
        group = parser.add_argument_group("cluster settings (stored with the job)")
        add_setting_flags(group, ClusterSettings, taken=parser)


def add_log_flags(parser: argparse.ArgumentParser) -> None:
    """``--log-level`` and ``--log-json`` (see :mod:`gossamer.logs`)."""
    parser.add_argument(
        "--log-level",
        choices=LEVELS,
        default=DEFAULT_LEVEL,
        help=f"least important log records shown on stderr ({DEFAULT_LEVEL}; info adds leader "
        "changes, partition moves, reclaims, hosts slowed down...)",
    )
    parser.add_argument(
        "--log-json",
        action="store_true",
        help="log one JSON object per line (time, level, logger, message, event fields)",
    )


def add_setting_flags(
    parser: argparse._ActionsContainer,
    model: type[SettingsModel],
    taken: argparse.ArgumentParser | None = None,
) -> None:
    """A ``--field-name`` flag for every scalar field of ``model`` that has no flag yet in
    ``taken`` (default: ``parser`` itself)."""
    owner = taken if taken is not None else parser
    have = {action.dest for action in owner._actions}
    for info in msgspec.structs.fields(model):
        name = info.name
        if name in have:
            continue
        flag = "--" + name.replace("_", "-")
        kind = setting_type(info.type)
        if get_origin(kind) is not Literal and get_args(kind):
            kind = setting_type(get_args(kind)[0])  # a list or table: a string of its items
        description = setting_description(info.type)
        if kind is bool:
            on = info.default is not True  # a setting on by default gets a --no-NAME flag
            flag = flag if on else "--no-" + name.replace("_", "-")
            parser.add_argument(flag, dest=name, action="store_const", const=on, help=description)
        elif get_origin(kind) is Literal:
            parser.add_argument(flag, dest=name, choices=list(get_args(kind)), help=description)
        elif kind in _FLAG_TYPES:
            parser.add_argument(flag, dest=name, type=_FLAG_TYPES[kind], help=description)


def settings_from_args(
    args: argparse.Namespace, model: type[Settings], skip: tuple[str, ...] = ()
) -> Settings:
    """The ``model`` settings given by the flags of ``args`` (plus --config and environment);
    ``skip`` names the command's own arguments that are no settings."""
    ignored = (*_NOT_SETTINGS, *skip)
    flags = {k: v for k, v in vars(args).items() if k not in ignored}
    if not flags["seeds"]:
        flags["seeds"] = None
    return load_model(model, flags, config=args.config)
