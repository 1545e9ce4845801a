"""The Python extension point: ``--hook module:function``, called once per fetched page.

The function takes a read-only :class:`Page` and returns either nothing, a mapping of extra
fields for the page's record (they land in the record's ``extra`` object, in every sink), or a
:class:`HookResult` that can also replace the links the crawl follows from the page::

    from gossamer.hooks import HookResult, Page

    def prices(page: Page) -> HookResult | None:
        if page.tree is None:
            return None
        found = [n.text(strip=True) for n in page.tree.css("span.price")]
        return HookResult(fields={"prices": found}, links=[l for l in page.links if "/shop/" in l])

It runs for every page answered 2xx, on the event loop (keep it quick: a slow hook slows the
whole crawl). What it returns must be JSON (str, int, float, bool, None, lists and string-keyed
mappings of those), at most ``MAX_EXTRA_BYTES`` once encoded. An exception in the hook, or a
value that breaks those rules, is recorded on that page's record (``error``:
``hook-error: <ExceptionType>``), counted in the stats, and the crawl goes on; the page's
default links are followed then. ``examples/hook_words.py`` is a complete example.

A page handler (:class:`Handler`, registered for a URL pattern through the Python API,
:class:`gossamer.Handlers`) is the hook's twin for pages of one kind: it takes the same
:class:`Page` and yields the items it reads (mappings of JSON values, each under the same
bound as a hook's fields) and the :class:`Link` values to follow; :func:`run_handler` checks
what it gives as :func:`run_hook` checks a hook's, and a failure is recorded the same way
(``handler-error: <ExceptionType>``).

This module imports nothing of the crawl's other stages (the extractor's ``Content`` only as
a type; user code is imported by :mod:`gossamer.usercode`): a hook module may import it freely.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
from collections.abc import AsyncIterable, Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:
    from selectolax.lexbor import LexborHTMLParser

    from gossamer.extract import Content

from gossamer.redact import redact_url
from gossamer.usercode import load_function

__all__ = [
    "HANDLER_TIMEOUT",
    "MAX_EXTRA_BYTES",
    "MAX_HANDLER_BYTES",
    "MAX_HANDLER_OUTPUTS",
    "Handler",
    "HandlerOutput",
    "Hook",
    "HookError",
    "HookResult",
    "Link",
    "Page",
    "let_go_abandoned",
    "load_hook",
    "run_handler",
    "run_hook",
]

MAX_EXTRA_BYTES = 1 << 20
"""The most a hook's fields (or one item of a handler) may take, encoded as JSON."""
MAX_HANDLER_OUTPUTS = 10_000
"""The most items and links one handler call may give for one page."""
MAX_HANDLER_BYTES = 10 << 20
"""The most all the items of one handler call may take together, encoded as JSON."""
HANDLER_TIMEOUT = 30.0
"""Seconds a handler call may take by default (see :class:`gossamer.Handlers`)."""
HANDLER_GRACE = 1.0
"""Seconds a cancelled handler call is given to end before it is abandoned."""
_ABANDONED: dict[asyncio.Task[BaseException | None], str] = {}
"""Handler calls that ignored their cancellation, still running, with their handlers' names
(a task nothing references may be collected while it runs)."""
log = logging.getLogger(__name__)


class HookError(Exception):
    """A hook failed, or returned what a record cannot hold; the message says which."""


class Page(msgspec.Struct, frozen=True):
    """What a hook sees of one fetched page (read-only; a frozen msgspec Struct, as the
    crawl's other per-page values are)."""

    url: str
    status: int
    headers: Mapping[str, str]
    """Response headers, names lower-cased, repeated ones joined."""
    body: bytes
    """The body as decoded from its Content-Encoding (bytes, before any charset)."""
    content_type: str | None
    encoding: str | None
    """The Python codec the HTML was read with (None for a page that is not HTML)."""
    tree: LexborHTMLParser | None
    """The parsed HTML (selectolax lexbor), or None for a page that is not HTML."""
    links: tuple[str, ...] = ()
    """The absolute links the crawl would follow from the page."""
    title: str | None = None
    content: Content | None = None
    """The extracted main text and metadata (:class:`gossamer.extract.Content`), or None
    with ``--no-text`` or for a page without text."""

    @property
    def html(self) -> str | None:
        """The HTML as text (decoded with :attr:`encoding`), or None for a page not HTML."""
        if self.encoding is None:
            return None
        return self.body.decode(self.encoding, "replace")

    def __repr__(self) -> str:  # the tree and the content are left out: too long to read
        return (
            f"Page(url={self.url!r}, status={self.status!r}, headers={self.headers!r}, "
            f"body={self.body!r}, content_type={self.content_type!r}, "
            f"encoding={self.encoding!r}, links={self.links!r}, title={self.title!r})"
        )


class HookResult(msgspec.Struct, frozen=True):
    """Extra record fields and, unless None, the links to follow instead of the page's own."""

    fields: Mapping[str, Any] = msgspec.field(default_factory=dict)
    links: Sequence[str] | None = None


Hook = Callable[[Page], "Mapping[str, Any] | HookResult | None"]


class Link(msgspec.Struct, frozen=True):
    """A link a page handler gives to follow: absolute, or relative to the page's URL. It goes
    through the crawl's scope, depth and dedup like any link the page holds."""

    url: str


HandlerOutput = Mapping[str, Any] | Link
"""What a page handler yields: an item (a mapping of JSON values) or a :class:`Link`."""
Handler = Callable[
    [Page],
    "Iterable[HandlerOutput] | AsyncIterable[HandlerOutput] | "
    "Awaitable[Iterable[HandlerOutput] | None] | None",
]
"""A page handler: a function (or generator, coroutine function or async generator) of a
:class:`Page`, giving items and links (see :func:`run_handler`)."""


def load_hook(spec: str) -> Hook:
    """Import ``module:function`` (a module on the path or in the working directory) or
    ``path/to/file.py:function``; raises ``ValueError`` with a clear message."""
    hook: Hook = load_function(spec)
    return hook


def run_hook(hook: Hook, page: Page) -> tuple[dict[str, Any] | None, list[str] | None]:
    """Call the hook: (extra fields or None, replacement links or None). Raises `HookError`."""
    try:
        returned = hook(page)
    except Exception as exc:
        raise HookError(f"hook-error: {type(exc).__name__}") from exc
    if returned is None:
        return None, None
    if isinstance(returned, HookResult):
        fields, links = returned.fields, returned.links
    elif isinstance(returned, Mapping):
        fields, links = returned, None
    else:
        raise HookError("hook-error: returned neither a mapping nor a HookResult")
    extra = _json_fields(fields)
    if links is not None and (
        isinstance(links, str) or not all(isinstance(link, str) for link in links)
    ):
        raise HookError("hook-error: links must be a list of strings")
    return extra, (list(links) if links is not None else None)


def _json_fields(fields: Mapping[str, Any]) -> dict[str, Any] | None:
    return _encoded_fields(fields)[0]


def _encoded_fields(fields: Mapping[str, Any]) -> tuple[dict[str, Any] | None, int]:
    """``fields`` as a record holds them (a copy through JSON) and their size in bytes once
    encoded; raises `HookError` when they are not JSON, too large or not valid text."""
    if not fields:
        return None, 0
    try:
        text = json.dumps(dict(fields), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise HookError("hook-error: fields are not JSON") from exc
    except RecursionError as exc:
        raise HookError("hook-error: fields nested too deep") from exc
    if len(text.encode("utf-8", "surrogatepass")) > MAX_EXTRA_BYTES:
        raise HookError("hook-error: fields over 1 MiB")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise HookError("hook-error: fields hold invalid text") from None
    decoded: dict[str, Any] = json.loads(text)
    return decoded, len(text.encode("utf-8"))


async def run_handler(
    handler: Handler, page: Page, bound: float = HANDLER_TIMEOUT
) -> tuple[list[dict[str, Any]], list[str]]:
    """Call a page handler: (the items it gave, each checked as a hook's fields are; the
    links it gave, as written). Raises `HookError` (``handler-error: ...``) when it fails,
    takes over ``bound`` seconds (its awaits and async iteration: a plain function's own
    work cannot be cut short on the event loop), or gives what a record cannot hold (over
    `MAX_HANDLER_OUTPUTS` items and links, an item over `MAX_EXTRA_BYTES`, all its items over
    `MAX_HANDLER_BYTES`); the items it gave before a failure are dropped.

    The call runs in a task of its own. At its bound, or when the task calling it is
    cancelled (the crawl being stopped), it is cancelled and given `HANDLER_GRACE` seconds
    to end; one that ignores its cancellation (a retry loop with a bare ``except:``) is then
    abandoned, still running, with a warning: the page ends ``handler-error: timeout`` and a
    stop goes through all the same, never waiting on user code without a bound. The crawl's
    end lets the abandoned calls still running go (:func:`let_go_abandoned`), so that the
    program's ``asyncio.run()`` does not wait for them at its exit either.

    Any exception of the handler is its failure, ``SystemExit``, ``KeyboardInterrupt`` and
    a ``CancelledError`` it raised itself included; only the cancellation of the task calling
    it (the crawl being stopped) goes through."""
    collected = _Collected()
    call = asyncio.get_running_loop().create_task(_call(handler, page, collected))
    try:
        done, _ = await asyncio.wait((call,), timeout=bound)
    except asyncio.CancelledError:  # the crawl itself is cancelled (stop, SIGTERM)
        await _cancel(call, handler, page.url)
        raise
    if not done:
        await _cancel(call, handler, page.url)
        raise HookError("handler-error: timeout")
    failure = call.result()
    if failure is None:
        return collected.items, collected.links
    if isinstance(failure, HookError):
        raise failure
    raise HookError(f"handler-error: {type(failure).__name__}") from failure


async def _call(handler: Handler, page: Page, collected: _Collected) -> BaseException | None:
    """Run the handler; what it raised, as a value (``SystemExit`` and ``KeyboardInterrupt``
    raised in a task would stop the event loop)."""
    try:
        await _collect(handler(page), collected)
    except BaseException as exc:  # every failure of user code is its own
        return exc
    return None


async def _cancel(call: asyncio.Task[BaseException | None], handler: Handler, url: str) -> None:
    """Cancel a handler's call and give it `HANDLER_GRACE` seconds to end; one still running
    then is abandoned (kept referenced until it ends) and logged."""
    call.cancel()
    try:
        await asyncio.wait((call,), timeout=HANDLER_GRACE)
    finally:
        if not call.done():
            name = _handler_name(handler)
            log.warning(
                "page handler %s on %s ignored its cancellation for %.0f s: left running, "
                "the page recorded as a handler timeout",
                name,
                redact_url(url),
                HANDLER_GRACE,
                extra={"event": "handler-abandoned", "handler": name},
            )
            _ABANDONED[call] = name
            call.add_done_callback(_forget)


def _forget(call: asyncio.Task[BaseException | None]) -> None:
    _ABANDONED.pop(call, None)


def _handler_name(handler: Handler) -> str:
    """A handler as a log line names it: its module and qualified name (its class's, for a
    callable object)."""
    named = handler if hasattr(handler, "__qualname__") else type(handler)
    module = getattr(named, "__module__", None)
    qualname = getattr(named, "__qualname__", repr(named))
    return f"{module}.{qualname}" if module else qualname


async def let_go_abandoned(bound: float = HANDLER_GRACE) -> list[str]:
    """At a crawl's end: the handler calls of this event loop that ignored their cancellation
    (:func:`run_handler`) and still run are cancelled once more and given ``bound`` seconds;
    those still running then are logged, naming their handler, and taken off the loop's
    list of tasks (``asyncio.all_tasks``). ``asyncio.run()`` cancels every task of that list
    at its exit and waits for all, without a bound: one such call held the program there
    for good. Taken off, it runs on until it ends or the loop closes. Returns the names of
    the handlers let go."""
    loop = asyncio.get_running_loop()
    calls = [call for call in _ABANDONED if call.get_loop() is loop and not call.done()]
    if not calls:
        return []
    for call in calls:
        call.cancel()
    await asyncio.wait(calls, timeout=bound)
    names = []
    for call in calls:
        if call.done():
            continue
        name = _ABANDONED[call]
        names.append(name)
        log.warning(
            "page handler %s still ignores its cancellation %.0f s after the crawl's end: "
            "left running, no longer a task asyncio.run() waits for at its exit",
            name,
            bound,
            extra={"event": "handler-let-go", "handler": name},
        )
        _untracked(call)
    return names


def _untracked(call: asyncio.Task[BaseException | None]) -> None:
    """Take ``call`` off ``asyncio.all_tasks``. asyncio has no public way to: its
    ``_unregister_task`` (Python 3.11 to 3.14, there for other task implementations) is
    what a task's end does; without it, the call stays listed."""
    unregister = getattr(asyncio.tasks, "_unregister_task", None)
    if unregister is not None:
        unregister(call)


class _Collected:
    """A handler call's items and links, each checked as it comes, so a handler over a
    bound is stopped there, not after holding all it would give."""

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []
        self.links: list[str] = []
        self._given = 0
        self._bytes = 0

    def add(self, output: Any) -> None:
        self._given += 1
        if self._given > MAX_HANDLER_OUTPUTS:
            raise HookError(f"handler-error: over {MAX_HANDLER_OUTPUTS} items and links")
        if isinstance(output, Link) and isinstance(output.url, str):
            self.links.append(output.url)
            return
        if not isinstance(output, Mapping):
            raise HookError("handler-error: gave neither a mapping nor a Link")
        try:
            fields, size = _encoded_fields(output)
        except HookError as exc:
            raise HookError(str(exc).replace("hook-error", "handler-error", 1)) from exc
        self._bytes += size
        if self._bytes > MAX_HANDLER_BYTES:
            raise HookError("handler-error: output too large")
        self.items.append(fields or {})


async def _collect(returned: Any, collected: _Collected) -> None:
    """Add what a handler's call gave to ``collected``, whatever kind of function it is."""
    if inspect.isawaitable(returned):
        returned = await returned
    if returned is None:
        return
    if isinstance(returned, AsyncIterable):
        async for output in returned:
            collected.add(output)
    elif isinstance(returned, Mapping | Link) or not isinstance(returned, Iterable):
        collected.add(returned)  # one item or link given alone
    else:
        for output in returned:
            collected.add(output)
