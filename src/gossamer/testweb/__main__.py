"""``python -m gossamer.testweb``: serve a generated web until SIGINT or SIGTERM.

Once listening it prints one line (flushed), which callers parse for the port::

    serving 5 hosts on http://127.0.0.1:PORT (hosts: site0.test site1.test ...)
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections.abc import Sequence

from gossamer.testweb.catalog import ALL_SPECIALS, QUICK_SPECIALS, SPECIALS
from gossamer.testweb.server import TestWebServer
from gossamer.testweb.site import generate
from gossamer.testweb.trapweb import generate_traps

SPECIAL_SETS = {"all": ALL_SPECIALS, "quick": QUICK_SPECIALS, "none": frozenset[str]()}


def _specials(value: str) -> frozenset[str]:
    if value in SPECIAL_SETS:
        return SPECIAL_SETS[value]
    names = frozenset(name.strip() for name in value.split(",") if name.strip())
    unknown = sorted(names - set(SPECIALS))
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown special endpoints: {', '.join(unknown)}")
    return names


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(prog="python -m gossamer.testweb", description=__doc__)
    parser.add_argument("--bind", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=8080, help="port (0: any free port)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--hosts", type=int, default=5)
    parser.add_argument("--pages", type=int, default=40, help="pages per host")
    parser.add_argument("--big-pages", action="store_true", help="10-60 KB pages")
    parser.add_argument(
        "--crawl-delay", type=float, default=1.0, help="host 1's Crawl-delay (0: none)"
    )
    parser.add_argument(
        "--specials",
        type=_specials,
        default=ALL_SPECIALS,
        help="special endpoints linked from pages: all, quick, none or a comma list",
    )
    parser.add_argument("--flaky-failures", type=int, default=2)
    parser.add_argument(
        "--traps",
        action="store_true",
        help="serve the trap web instead: traps0.test, --pages real pages beside crawler traps",
    )
    parser.add_argument("--log", default=None, help="append the request log as JSON lines")
    return parser.parse_args(argv)


def banner(server: TestWebServer) -> str:
    """The one line printed once the server listens."""
    names = server.web.host_names
    shown = names if len(names) <= 10 else [*names[:3], "...", names[-1]]
    return (
        f"serving {len(names)} hosts on http://{server.host}:{server.port} "
        f"(hosts: {' '.join(shown)})"
    )


async def serve(args: argparse.Namespace) -> None:
    """Serve until a stop signal arrives."""
    if args.traps:
        web = generate_traps(args.seed, args.pages)
    else:
        web = generate(
            args.seed,
            args.hosts,
            args.pages,
            big_pages=args.big_pages,
            crawl_delay=args.crawl_delay or None,
            specials=args.specials,
        )
    server = TestWebServer(
        web, args.bind, args.port, log_path=args.log, flaky_failures=args.flaky_failures
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        print(banner(server), flush=True)
        await stop.wait()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point."""
    asyncio.run(serve(parse_args(argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
