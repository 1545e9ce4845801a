"""The dashboard served in-process on a free loopback port, for the UI tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web

from gossamer.ui.app import Sources, build_app, mount
from gossamer.ui.cli import listen
from gossamer.ui.security import Guard


@dataclass(frozen=True)
class Served:
    base: str
    """``http://127.0.0.1:PORT``"""
    guard: Guard

    @property
    def login_url(self) -> str:
        return f"{self.base}/?token={self.guard.token}"


def editor_stub() -> web.Application:
    """A stand-in for the rule editor: a sub-application with a GET and a POST."""

    async def ping(request: web.Request) -> web.Response:
        return web.json_response({"pong": True})

    sub = web.Application()
    sub.router.add_get("/ping", ping)
    sub.router.add_post("/ping", ping)
    return sub


@asynccontextmanager
async def dashboard(
    outs: list[Path],
    redis: str | None = None,
    token: str = "t" * 8 + "-test-token-0123",
    public: frozenset[str] = frozenset(),
    editor: Callable[[int], web.Application] | None = None,
) -> AsyncIterator[Served]:
    """Serve the dashboard of ``outs`` (and the jobs of ``redis``), with ``editor(port)``
    mounted at ``/editor`` (default: a stub)."""
    sock = listen("127.0.0.1", 0)
    port = sock.getsockname()[1]
    guard = Guard.for_server(token, "127.0.0.1", port, public)
    app = build_app(guard, Sources(outs, redis))
    mount(app, "/editor", editor_stub() if editor is None else editor(port))
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.SockSite(runner, sock).start()
    try:
        yield Served(f"http://127.0.0.1:{port}", guard)
    finally:
        await runner.cleanup()
