"""``gossamer ui``: serve the dashboard.

Building the parser imports nothing of aiohttp: the other commands start without it."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import re
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gossamer import eventloop
from gossamer.cluster.cli import add_redis_password_flag
from gossamer.redact import redact_url
from gossamer.settings import SettingsError

DEFAULT_BIND = "127.0.0.1:8077"
TOKEN_ENV = "GOSSAMER_UI_TOKEN"
MAX_TOKEN_FILE = 4 << 10
"""The largest ``--token-file`` read (a token is a line)."""
PUBLIC = frozenset({"/healthz"})
"""What a GET reads without the token: the health check of a container's probes."""
_BIND = re.compile(r"(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<host>[A-Za-z0-9.-]+)):(?P<port>\d{1,5})")


def add_ui_parser(sub: Any) -> None:
    """The ``ui`` command."""
    ui = sub.add_parser("ui", help="serve the web dashboard of crawls and cluster jobs")
    ui.add_argument(
        "--bind",
        default=DEFAULT_BIND,
        metavar="HOST:PORT",
        help=f"address to serve on ({DEFAULT_BIND}; port 0 picks a free one); an address "
        f"other than loopback needs a token of yours (${TOKEN_ENV} or --token-file)",
    )
    ui.add_argument(
        "--out",
        dest="outs",
        action="append",
        type=Path,
        default=[],
        metavar="DIR",
        help="a crawl's output folder, or a folder of them (repeatable; default crawl-out)",
    )
    ui.add_argument(
        "--redis",
        metavar="URL",
        help="show the cluster jobs of this Redis (its password: --redis-password-file or "
        "$GOSSAMER_REDIS_PASSWORD)",
    )
    add_redis_password_flag(ui)
    ui.add_argument(
        "--token-file", type=Path, help=f"read the access token from this file (or ${TOKEN_ENV})"
    )
    editor = ui.add_argument_group("rule editor (/editor)")
    editor.add_argument(
        "--rules-dir",
        type=Path,
        metavar="DIR",
        help="the folder the rule editor opens and saves rule documents in (and samples/)",
    )
    editor.add_argument(
        "--editor-allow",
        action="append",
        default=[],
        metavar="HOST:PORT|ADDRESS|NETWORK|HOST",
        help="let the editor read sample pages at this private or loopback address or host "
        "on this port (127.0.0.1:8642, *.test:8642), or on every port of an address, network "
        "(10.0.0.0/8) or host (*.test); refused by default (repeatable)",
    )
    editor.add_argument(
        "--resolve", action="append", default=[], metavar="HOST=IP", help="as crawl's --resolve"
    )
    editor.add_argument(
        "--no-robots", dest="robots", action="store_false", help="ignore robots.txt"
    )
    editor.add_argument("--user-agent", help="User-Agent of the editor's fetches")
    editor.add_argument(
        "--render",
        choices=("never", "auto", "always"),
        help="render sample pages in headless Chromium, as crawl's --render (default never)",
    )
    editor.add_argument(
        "--proxy", dest="proxies", action="append", metavar="URL", help="as crawl's --proxy"
    )
    editor.add_argument(
        "--config",
        type=Path,
        help="TOML crawl settings the editor fetches and evaluates with (proxies, rendering, "
        "rule_functions)",
    )
    ui.set_defaults(handler=_ui)


def parse_bind(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[v6]:PORT``) -> (host, port); SettingsError when malformed."""
    match = _BIND.fullmatch(text)
    if match is None or int(match["port"]) > 65535:
        raise SettingsError(f"invalid setting 'bind': {text[:80]!r} is not HOST:PORT")
    return match["v6"] or match["host"], int(match["port"])


def user_token(token_file: Path | None, env: dict[str, str]) -> str | None:
    """The token the user set (``--token-file`` first, then the environment), checked."""
    from gossamer.ui.security import MIN_TOKEN_CHARS

    if token_file is not None:
        try:
            with token_file.open("rb") as file:
                raw = file.read(MAX_TOKEN_FILE + 1)
            token = raw.decode("utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            reason = getattr(exc, "strerror", None) or "not UTF-8"
            raise SettingsError(
                f"invalid setting 'token-file': cannot read {token_file}: {reason}"
            ) from None
        if len(raw) > MAX_TOKEN_FILE:
            raise SettingsError(
                f"invalid setting 'token-file': {token_file} is larger than "
                f"{MAX_TOKEN_FILE >> 10} KiB"
            )
    else:
        token = env.get(TOKEN_ENV, "").strip()
        if not token:
            return None
    if len(token) < MIN_TOKEN_CHARS or not token.isprintable() or " " in token:
        raise SettingsError(
            f"invalid UI token: give at least {MIN_TOKEN_CHARS} printable characters, no spaces"
        )
    return token


def _ui(args: argparse.Namespace) -> int:
    from gossamer.ui.security import is_loopback

    host, port = parse_bind(args.bind)
    token = user_token(args.token_file, dict(os.environ))
    if token is None and not is_loopback(host):
        raise SettingsError(
            f"refusing to serve on {host} (not loopback) with a generated token: set one of "
            f"yours with ${TOKEN_ENV} or --token-file, or bind to 127.0.0.1"
        )
    outs = args.outs or [Path("crawl-out")]
    redis = None
    if args.redis is not None:
        from gossamer.cluster.redisurl import resolve_redis_url

        redis = resolve_redis_url(args.redis, password_file=args.redis_password_file)
    elif args.redis_password_file is not None:
        raise SettingsError("invalid setting 'redis-password-file': give --redis too")
    editor = editor_options(args)
    eventloop.run(serve(host, port, token, outs, redis, editor))
    return 0


def editor_options(args: argparse.Namespace) -> EditorOptions:
    """The editor's options, checked (SettingsError)."""
    from gossamer.crawl import auth_logins
    from gossamer.settings import load_settings
    from gossamer.ui.editor import EditorGuard

    flags = {
        "resolve": args.resolve,
        "robots": args.robots,
        "user_agent": args.user_agent,
        "render": getattr(args, "render", None),
        "proxies": getattr(args, "proxies", None),
    }
    settings = load_settings({k: v for k, v in flags.items() if v is not None}, args.config)
    auth_logins(settings)  # a login whose secret cannot be read: exit status 2 now
    guard = EditorGuard.from_allow(args.editor_allow)
    rules_dir = args.rules_dir
    if rules_dir is not None and not rules_dir.is_dir():
        raise SettingsError(f"invalid setting 'rules_dir': {rules_dir} is not a folder")
    return EditorOptions(settings, guard, rules_dir)


@dataclass(frozen=True, slots=True)
class EditorOptions:
    """What ``gossamer ui`` hands the rule editor."""

    settings: Any
    """The CrawlSettings of its fetches (``--config``, ``--resolve``, ...)."""
    guard: Any
    """The EditorGuard of ``--editor-allow``."""
    rules_dir: Path | None


def editor_app(options: EditorOptions, own_port: int) -> Any:
    """The editor's application for a UI on ``own_port``."""
    from gossamer.ui.editor import EditorConfig, PageFetcher, build_editor
    from gossamer.ui.editor.documents import Rules

    guard = dataclasses.replace(options.guard, own_port=own_port)
    fetcher = PageFetcher.for_settings(options.settings, guard, own_port)
    rules = None if options.rules_dir is None else Rules(options.rules_dir)
    return build_editor(EditorConfig(fetcher, rules, dict(options.settings.rule_functions)))


async def serve(
    host: str,
    port: int,
    token: str | None,
    outs: list[Path],
    redis: str | None,
    editor: EditorOptions | None = None,
) -> None:
    """Serve until interrupted; print the URL to open (with the token when it was made here)."""
    from aiohttp import web

    from gossamer.metrics.serverlog import server_logger
    from gossamer.ui.app import Sources, build_app, mount
    from gossamer.ui.security import Guard, new_token

    secret = token or new_token()
    # The port is known once bound (port 0): bind first, then build the guard for it.
    site_socket = listen(host, port)
    bound = site_socket.getsockname()[1]
    guard = Guard.for_server(secret, host, bound, public=PUBLIC)
    app = build_app(guard, Sources(outs, redis))
    if editor is not None:
        mount(app, "/editor", editor_app(editor, bound))
    runner = web.AppRunner(app, access_log=None, logger=server_logger())
    await runner.setup()
    site = web.SockSite(runner, site_socket)
    await site.start()
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{bound}/"
    if token is None:
        print(f"gossamer ui: open {url}?token={secret}", flush=True)
    else:
        print(f"gossamer ui: open {url}?token=<your token> (set by you)", flush=True)
    where = ", ".join(str(o) for o in outs)
    jobs = f"; jobs of {redact_url(redis)}" if redis else ""
    print(f"showing crawls in {where}{jobs}; Ctrl-C stops", file=sys.stderr, flush=True)
    if editor is not None:
        saves = f"saves in {editor.rules_dir}" if editor.rules_dir else "no --rules-dir: no saving"
        print(f"rule editor: {url}editor/ ({saves})", file=sys.stderr, flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()


def listen(host: str, port: int) -> Any:
    """A listening, non-blocking TCP socket on ``host:port`` (port 0: a free one)."""
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        reason = exc.strerror or str(exc)
        raise SettingsError(f"invalid setting 'bind': {host}:{port}: {reason}") from None
    sock.listen(128)
    sock.setblocking(False)
    return sock
