"""The event loop a gossamer process runs on: uvloop (libuv's loop, MagicStack's package) when
it is installed, else the standard asyncio loop; ``GOSSAMER_EVENT_LOOP=asyncio`` asks for the
standard one all the same (to compare, or to rule uvloop out of a problem).

Every command that runs a loop (``gossamer crawl``, ``cluster worker`` and the other cluster
commands, ``ui``, ``rules``) and :func:`gossamer.run` start it with :func:`run`. A program
that runs a :class:`gossamer.Crawl` in its own loop chooses that loop itself. The choice is
the process's, not a crawl setting: a cluster worker starts its loop before it reads its job.

What the crawl asks of its loop works on both: timers (uvloop counts whole milliseconds: a
timer may ring up to half of one early, one that rang in this millisecond shows ``when()`` as
now, and a delay that rounds to nothing gives a plain handle, with no ``when()``; so the lean
client and aiohttp's read timer keep the time they set theirs for, and the crawl loop takes an
alarm due within half a millisecond as rung), readers and writers on pipes and pidfds (the
parse sandbox), signal handlers, subprocesses (uvloop spawns its own, no child watcher),
threads, TLS, and aiohttp, redis-py and asyncpg over it.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, Literal, TypeVar, get_args

__all__ = ["ABOUT", "ENV", "Loop", "chosen", "loop_factory", "run", "running", "send"]

T = TypeVar("T")

ENV = "GOSSAMER_EVENT_LOOP"
"""The environment variable that chooses the loop: ``uvloop`` (the default) or ``asyncio``."""

Loop = Literal["uvloop", "asyncio"]
"""The loops a process can run on."""
ABOUT = (
    "The event loop: uvloop (libuv's; the standard loop when uvloop is not installed) or "
    "asyncio (the standard loop, to compare or to rule uvloop out of a problem)."
)
"""What the settings reference says of `ENV`."""


def chosen(env: Mapping[str, str] = os.environ) -> Loop:
    """The loop the environment asks for (``uvloop`` when it does not say); raises
    :class:`~gossamer.settings.InvalidSetting` for a name it does not know."""
    name = env.get(ENV, "").strip().lower() or "uvloop"
    loops: tuple[Loop, ...] = get_args(Loop)
    for loop in loops:
        if name == loop:
            return loop
    from gossamer.settings import InvalidSetting  # only for this error: a pipe's user is light

    raise InvalidSetting(ENV, f"give one of {', '.join(loops)}, not {name!r}")


def loop_factory(loop: Loop) -> Callable[[], asyncio.AbstractEventLoop] | None:
    """What makes a loop of the kind ``loop`` names; None for the standard loop, and for
    uvloop when it is not installed."""
    if loop == "asyncio":
        return None
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def run(main: Coroutine[Any, Any, T], loop: Loop | None = None) -> T:
    """Run ``main`` to its end on a new loop, as :func:`asyncio.run` does, of the kind
    ``loop`` names (None: :func:`chosen`)."""
    try:
        factory = loop_factory(chosen() if loop is None else loop)
    except BaseException:
        main.close()  # never to be awaited: no warning about it
        raise
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(main)


def running() -> Loop:
    """The kind of the loop this coroutine runs on."""
    module = type(asyncio.get_running_loop()).__module__
    return "uvloop" if module.split(".")[0] == "uvloop" else "asyncio"


async def send(stream: asyncio.StreamWriter, data: bytes) -> None:
    """Write ``data`` to ``stream`` (a worker's pipe) and drain it. A stream whose other end
    is gone raises :class:`ConnectionResetError` on either loop: asyncio drops a write to a
    closed transport or resets at the drain, uvloop raises RuntimeError from the write."""
    if stream.is_closing():
        raise ConnectionResetError("the stream is closed")
    try:
        stream.write(data)
    except RuntimeError as exc:  # uvloop: "unable to perform operation on ... closed=True"
        raise ConnectionResetError(str(exc)) from exc
    await stream.drain()
