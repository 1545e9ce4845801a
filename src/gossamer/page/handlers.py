"""Page handlers by URL pattern: the Python twin of a rule document and of ``--hook``.

:class:`Handlers` holds the functions a Python program registers (``@handlers.handler(
r"/product/\\d+")``); the page stage's ``handler`` step picks the first whose pattern finds
the page's URL (a rule document's URL patterns, compiled alike: RE2, searched anywhere in the
URL), calls it with the hook's :class:`~gossamer.hooks.Page` and keeps what it gives: its
items in the record (``found``, as a rule's; items.jsonl and the store keep them), its links
instead of the page's own (or besides them, ``keep_links``). A handler that fails is recorded
on its page as a failing hook is (``error``: ``handler-error: <ExceptionType>``); the crawl
goes on. So is one that takes over its time bound (``handler-error: timeout``) or gives over
10 MiB of items for one page (``handler-error: output too large``).

A handler that is a plain function (or a generator) runs on the event loop, as ``--hook``
does: it must be quick, since nothing can cut it short there and the whole crawl waits for
it; its time bound applies to what it awaits. Slow or blocking work belongs in an ``async``
handler that awaits it (``await asyncio.to_thread(work, page)``), which the bound does end.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

import msgspec

from gossamer.hooks import HANDLER_TIMEOUT, Handler

if TYPE_CHECKING:
    from gossamer.extract.rules.patterns import Pattern

__all__ = ["Handlers", "Route"]

H = TypeVar("H", bound=Handler)


class Route(msgspec.Struct, frozen=True):
    """One registered handler: the pattern a page's URL must hold, its name (the record's
    ``rule`` and its items' ``rule``), and whether the page's own links are kept too."""

    pattern: Pattern
    name: str
    function: Handler
    keep_links: bool = False
    timeout: float = HANDLER_TIMEOUT
    """Seconds one call may take (its awaits): past it, ``handler-error: timeout``."""


class Handlers:
    """Page handlers by URL pattern, tried in the order they were registered; the first whose
    pattern finds a page's URL handles the page (see the module docstring). ``timeout``:
    the seconds one handler call may take (default 30; a positive number)."""

    def __init__(self, *, timeout: float = HANDLER_TIMEOUT) -> None:
        if not timeout > 0:
            raise ValueError(f"handler timeout must be a positive number of seconds: {timeout}")
        self._routes: list[Route] = []
        self._timeout = float(timeout)

    def handler(
        self, pattern: str, *, name: str | None = None, keep_links: bool = False
    ) -> Callable[[H], H]:
        """Register the decorated function for the pages whose URL ``pattern`` finds (a
        regular expression, searched in the whole URL as a rule's ``url`` is). ``name``
        (default: the function's name) names it in the records; with ``keep_links``, the
        links it gives are followed besides the page's own, else instead of them (when it
        gives none, the page's own are followed). A bad pattern raises ``ValueError``."""
        from gossamer.extract.rules.patterns import compile_url_pattern

        compiled = compile_url_pattern(pattern)

        def register(function: H) -> H:
            label = name or str(getattr(function, "__name__", "handler"))
            if not callable(function):
                raise ValueError(f"a page handler must be callable, not {function!r}")
            self._routes.append(Route(compiled, label, function, keep_links, self._timeout))
            return function

        return register

    def add(
        self, pattern: str, function: Handler, *, name: str | None = None, keep_links: bool = False
    ) -> None:
        """Register ``function`` as :meth:`handler` does, without a decorator."""
        self.handler(pattern, name=name, keep_links=keep_links)(function)

    def select(self, url: str) -> Route | None:
        """The route that handles ``url``: the first whose pattern finds it, if any."""
        return next((route for route in self._routes if route.pattern.search(url)), None)

    def __len__(self) -> int:
        return len(self._routes)

    def __bool__(self) -> bool:
        return bool(self._routes)
