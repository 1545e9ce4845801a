"""A real aiohttp server on 127.0.0.1 for tests: every GET goes to one handler."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@asynccontextmanager
async def serve(handler: Handler) -> AsyncIterator[int]:
    """Serve ``handler`` on a free port of 127.0.0.1; yields the port."""
    app = web.Application()
    app.router.add_get("/{tail:.*}", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    finally:
        await runner.cleanup()


async def cut_short(
    request: web.Request, body: bytes, headers: Mapping[str, str]
) -> web.StreamResponse:
    """A 200 of ``body`` with ``headers``, then the connection closed: 100 bytes short of the
    Content-Length its head announced."""
    response = web.StreamResponse(headers=headers)
    response.content_length = len(body) + 100
    await response.prepare(request)
    await response.write(body)
    assert request.transport is not None
    request.transport.close()
    return response


@asynccontextmanager
async def serve_pages(pages: Mapping[str, str] | Callable[[str], str | None]) -> AsyncIterator[int]:
    """Serve HTML pages by path (a mapping, or a function of the path; None is a 404) on a free
    port of 127.0.0.1; yields the port."""
    find = pages.get if isinstance(pages, Mapping) else pages

    async def page(request: web.Request) -> web.Response:
        body = find(request.path)
        if body is None:
            raise web.HTTPNotFound()
        return web.Response(text=body, content_type="text/html")

    async with serve(page) as port:
        yield port
