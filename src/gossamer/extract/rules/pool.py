"""Rules evaluated in worker processes, each page within a time bound.

A rule is written by whoever runs the crawl, but what it reads is what the pages hold, and
some of its work has no bound a check of the rule can prove: an XPath axis such as
``//h2/following-sibling::p`` costs the square of a page's size inside lxml (40 s of CPU on a
110 KB page), a ``call``ed function runs the user's code. Code in C cannot be stopped inside a
thread, so every page a rule reads goes to one of a few long-lived worker processes (``python
-m gossamer.extract.rules.pool``), whose address space is capped (``RLIMIT_AS``); a page that
takes longer than ``timeout`` seconds gets its worker killed and replaced, and becomes a page
whose errors say so (:func:`timed_out`). The crawl's loop, ``rules try`` and the editor's
other requests never wait on a rule for longer than that.

Pages no rule is for cost nothing: the rule is chosen in this process (its URL patterns are
RE2's, linear in the URL). Their cost is the URL's length times the patterns' size at worst
(`schema.MAX_SELECT_PROGRAM` bounds the size): past `INLINE_SELECT` the choice runs in a
thread (RE2 lets go of the GIL while it matches), so the crawl's loop goes on meanwhile. A
worker compiles a rule set once, when first sent it (its documents and functions, keyed by
digest), and keeps the last few.

Protocol (stdin and stdout of the worker): a request is an 8-byte big-endian length and a
pickle of ``(key, documents or None, url, body, charset, follow_nofollow)`` (the documents
sent only when that worker has not compiled them yet, in a request of their own whose url is
None, before the page's time starts); an answer an 8-byte length and JSON (``{"found": ...}``,
``{"ready": true}``, ``{"bad_url": ...}`` or ``{"error": ...}``). Requests come from this
process only; answers, made from pages, are JSON so reading one runs no code.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import pickle
import resource
import signal
import struct
import sys
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, BinaryIO

from gossamer.eventloop import send
from gossamer.extract.rules.evaluate import PageItems, evaluate_body
from gossamer.extract.rules.schema import Document, Rule, RuleSet, rules_from_documents
from gossamer.urls import Resolver

__all__ = ["INLINE_SELECT", "RULE_TIMEOUT", "RulePool", "RulePoolStats", "select", "timed_out"]

log = logging.getLogger(__name__)

RULE_TIMEOUT = 5.0
"""Seconds a page's rule may take (ordinary pages take milliseconds)."""
_START_TIMEOUT = 60.0
"""Seconds a new worker may take to start and compile a rule set."""
_KEPT_RULE_SETS = 4
INLINE_SELECT = 100_000
"""The most URL characters x RE2 instructions of a rule choice made in the crawl's loop (at
worst about 12 ns each: 1 ms); a costlier choice is made in a thread."""
_HEAD = struct.Struct(">Q")


@dataclass(frozen=True, slots=True)
class RulePoolStats:
    """What the pool did so far."""

    pages: int
    timed_out: int
    workers_started: int


def timed_out(rule: str, seconds: float, links: bool) -> PageItems:
    """The page of a rule stopped at its time bound: no items, its error; with link rules
    (``links``), no links followed either."""
    error = f"rule {rule!r} stopped after {seconds:g} s on this page (the time bound of a page)"
    return PageItems(rule, [], [] if links else None, [error])


class RulePool:
    """At most ``workers`` pages at a time, each in a worker process limited to ``memory_mb``
    of address space and ``timeout`` seconds. Workers start on first use and stay; `close`
    stops them (and a page waiting on one gets a worker error)."""

    def __init__(
        self, workers: int = 2, timeout: float = RULE_TIMEOUT, memory_mb: int = 2048
    ) -> None:
        self._timeout = timeout
        self._memory = memory_mb << 20
        self._idle: list[_Worker] = []
        self._slots = asyncio.Semaphore(workers)
        self._all: set[_Worker] = set()
        self._killed: list[_Worker] = []
        """Workers killed while their page was cancelled: waited for by `close`."""
        self._closed = False
        self._pages = self._timed_out = self._started = 0

    @property
    def timeout(self) -> float:
        return self._timeout

    async def evaluate(
        self,
        rules: RuleSet,
        url: str,
        body: bytes,
        charset: str | None = None,
        *,
        follow_nofollow: bool = False,
    ) -> PageItems | None:
        """What :func:`gossamer.extract.rules.evaluate_body` gives, read in a worker: the
        items and links of ``url``'s rule, None when no rule is for it, a page with its
        error when the rule passed its time or the worker failed. Raises ``ValueError`` for
        a URL that is not an absolute http(s) URL."""
        Resolver(url)  # raises ValueError as the page's parse would
        rule = await select(rules, url)
        if rule is None:
            return None
        async with self._slots:
            if self._closed:
                return _failed(rule.name, "the rule workers were stopped")
            worker = await self._worker()
            request = (url, body, charset, follow_nofollow)
            try:
                if not worker.knows(rules):  # compiled before the page's time starts
                    await asyncio.wait_for(worker.ask(rules, None), _START_TIMEOUT)
                answer = await asyncio.wait_for(worker.ask(rules, request), self._timeout)
            except TimeoutError:
                self._timed_out += 1
                log.warning(  # the page's record names the page; its URL may hold secrets
                    "rule %r passed %g s on a page: its worker killed", rule.name, self._timeout
                )
                await self._discard(worker)
                return timed_out(rule.name, self._timeout, rule.links is not None)
            except (OSError, EOFError, asyncio.IncompleteReadError, ValueError):
                await self._discard(worker)
                return _failed(rule.name, "the rule's worker process ended without an answer")
            except asyncio.CancelledError:  # the crawl stops: the page goes back, unread
                self._all.discard(worker)
                with contextlib.suppress(ProcessLookupError):
                    worker.process.kill()
                self._killed.append(worker)
                raise
            self._pages += 1
            self._idle.append(worker)
        return _found(answer, rule.name)

    def stats(self) -> RulePoolStats:
        """A snapshot of the pool's counts."""
        return RulePoolStats(self._pages, self._timed_out, self._started)

    async def close(self) -> None:
        """Stop every worker (a page being read in one gets a worker error)."""
        self._closed = True
        for worker in list(self._all):
            await self._discard(worker)
        self._idle.clear()
        for worker in self._killed:
            await worker.process.wait()
        self._killed.clear()

    async def _worker(self) -> _Worker:
        """An idle worker still running (one killed from outside while idle, by the OOM
        killer or a user, is replaced rather than failing the page), else a new one."""
        while self._idle:
            worker = self._idle.pop()
            if worker.process.returncode is None:
                return worker
            log.warning("a rule worker ended while idle (status %s)", worker.process.returncode)
            await self._discard(worker)
        return await self._start()

    async def _start(self) -> _Worker:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "gossamer.extract.rules.pool",
            str(self._memory),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=None,
        )
        worker = _Worker(process)
        self._all.add(worker)
        self._started += 1
        return worker

    async def _discard(self, worker: _Worker) -> None:
        self._all.discard(worker)
        with contextlib.suppress(ProcessLookupError):
            worker.process.kill()
        await worker.process.wait()


async def select(rules: RuleSet, url: str) -> Rule | None:
    """``rules.select(url)``, in a thread when it could cost the loop over `INLINE_SELECT`."""
    if len(url) * rules.url_program <= INLINE_SELECT:
        return rules.select(url)
    return await asyncio.to_thread(rules.select, url)


def _found(answer: dict[str, Any], rule: str) -> PageItems:
    if "bad_url" in answer:
        raise ValueError(str(answer["bad_url"]))
    found = answer.get("found")
    if not isinstance(found, dict):
        return _failed(rule, str(answer.get("error", "the rule's worker failed")))
    return PageItems(
        found["rule"], found["items"], found["links"], found["errors"], found["dropped"]
    )


def _failed(rule: str, why: str) -> PageItems:
    return PageItems(rule, [], None, [f"internal error: {why}"])


class _Worker:
    """One worker process and the rule sets it has compiled."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.compiled: set[tuple[str, tuple[tuple[str, str], ...]]] = set()

    def knows(self, rules: RuleSet) -> bool:
        """Whether the worker has compiled ``rules``."""
        return (rules.digest, rules.functions) in self.compiled

    async def ask(self, rules: RuleSet, request: tuple[Any, ...] | None) -> dict[str, Any]:
        """The worker's answer to ``request`` (url, body, charset, follow_nofollow) read with
        ``rules``; None: compile ``rules``, read no page."""
        assert self.process.stdin is not None and self.process.stdout is not None
        key = (rules.digest, rules.functions)
        documents = None if key in self.compiled else (rules.documents, rules.functions)
        message = (key, documents, *(request or (None, b"", None, False)))
        data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        await send(self.process.stdin, _HEAD.pack(len(data)) + data)
        (size,) = _HEAD.unpack(await self.process.stdout.readexactly(_HEAD.size))
        answer = json.loads(await self.process.stdout.readexactly(size))
        if not isinstance(answer, dict):
            raise ValueError("not an answer")
        if "found" in answer or "ready" in answer:
            self.compiled.add(key)
        return answer


def _serve(memory_bytes: int) -> None:
    """A worker: cap the address space, then answer requests from stdin until it closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the crawl decides when its workers stop
    _die_with_parent()
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    stdin, stdout = sys.stdin.buffer, _answers_out()
    compiled: OrderedDict[Any, RuleSet] = OrderedDict()
    while head := stdin.read(_HEAD.size):
        (size,) = _HEAD.unpack(head)
        key, documents, url, body, charset, nofollow = pickle.loads(stdin.read(size))
        try:
            rules = _rule_set(compiled, key, documents)
            answer = (
                {"ready": True} if url is None else _answer(rules, url, body, charset, nofollow)
            )
        except MemoryError:
            answer = {"error": "the rule ran out of memory on this page"}
        except Exception as exc:  # the page's error, never the worker's end
            answer = {"error": f"{type(exc).__name__}: {exc}"[:300]}
        del body
        data = json.dumps(answer, ensure_ascii=False).encode("utf-8", "surrogatepass")
        stdout.write(_HEAD.pack(len(data)) + data)
        stdout.flush()


def _answers_out() -> BinaryIO:
    """The answers' stream: a copy of stdout kept for them alone, stdout itself (file
    descriptor 1, and ``sys.stdout``) pointed at stderr. A ``call``ed function's ``print``
    went into the answers: the crawl read its text as an answer's length, and every page of
    the rule passed its time."""
    answers = os.fdopen(os.dup(1), "wb")
    try:
        os.dup2(2, 1)
    except OSError:  # the crawl runs with stderr closed: prints go nowhere
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.close(null)
    sys.stdout = sys.stderr  # None without a stderr: print() then writes nothing
    return answers


def _rule_set(compiled: OrderedDict[Any, RuleSet], key: Any, documents: Any) -> RuleSet:
    if documents is not None:
        texts: list[Document] = documents[0]
        compiled[key] = rules_from_documents(texts, dict(documents[1]))
        while len(compiled) > _KEPT_RULE_SETS:
            compiled.popitem(last=False)
    compiled.move_to_end(key)
    return compiled[key]


def _answer(
    rules: RuleSet, url: str, body: bytes, charset: str | None, nofollow: bool
) -> dict[str, Any]:
    try:
        _page, found = evaluate_body(rules, url, body, charset=charset, follow_nofollow=nofollow)
    except ValueError as exc:  # the URL is not an absolute http(s) URL
        return {"bad_url": str(exc)}
    if found is None:
        return {"error": "no rule is for the page"}
    fields = ("rule", "items", "links", "errors", "dropped")
    return {"found": {name: getattr(found, name) for name in fields}}


def _die_with_parent() -> None:
    """Ask Linux to kill this worker when the process that started it dies (a crawl killed
    with -9 leaves no worker running a rule)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


if __name__ == "__main__":
    _serve(int(sys.argv[1]))
