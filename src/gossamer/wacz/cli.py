"""``gossamer wacz OUT [OUT ...]``: package finished crawls' WARC files into one WACZ file.

One OUT gives ``OUT/crawl.wacz`` unless ``--output`` names another file; several (a cluster's
workers, each with its own ``--out``) are merged into the one ``--output`` names: their WARC
files, one sorted index and one pages list. Running it again (after a ``--resume``) writes
the file anew from everything the crawls hold.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from gossamer.errors import CommandError

__all__ = ["DEFAULT_NAME", "add_wacz_parser", "default_target"]

DEFAULT_NAME = "crawl.wacz"


def default_target(out: Path) -> Path:
    """Where a crawl's WACZ goes unless told: ``OUT/crawl.wacz``."""
    return out / DEFAULT_NAME


def add_wacz_parser(sub: Any) -> None:
    """``gossamer wacz``."""
    wacz = sub.add_parser("wacz", help="package crawls' WARC files as a WACZ file")
    wacz.add_argument(
        "outs", type=Path, nargs="+", metavar="OUT", help="a crawl's output directory (--out)"
    )
    wacz.add_argument(
        "-o",
        "--output",
        type=Path,
        help=f"the WACZ file to write (default with one OUT: OUT/{DEFAULT_NAME})",
    )
    wacz.add_argument("--quiet", action="store_true", help="print nothing on success")
    wacz.set_defaults(handler=_wacz)


class _OutputError(CommandError):
    """The WACZ file cannot be written where told (a usage error: exit status 2)."""

    exit_status = 2


def _wacz(args: argparse.Namespace) -> int:
    from gossamer.wacz import write_wacz

    outs: list[Path] = args.outs
    for out in outs:
        if not out.is_dir():
            raise CommandError(f"{out} is not a crawl's output directory")
    if args.output is None and len(outs) > 1:
        raise CommandError("several OUT directories are merged into one file: give --output")
    target = args.output or default_target(outs[0])
    if target.is_dir():
        raise _OutputError(f"{target} is a directory: --output names the WACZ file to write")
    try:
        summary = write_wacz(outs, target)
    except OSError as exc:
        raise _OutputError(f"cannot write {target}: {exc}") from None
    if not args.quiet:
        print(
            f"{summary.path}: {summary.captures} captures ({summary.revisits} revisits) from "
            f"{summary.warc_files} WARC file(s), {summary.pages} pages, {summary.bytes} bytes"
        )
        if summary.withheld:
            print(f"  {summary.withheld} captures withheld by the crawl (noindex) not indexed")
        for name in summary.torn:
            print(f"  {name}: torn or corrupt, indexed up to its last readable record")
    return 0
