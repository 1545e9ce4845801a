"""What to do with a fetch result: the retry rules by status.

2xx: store. 3xx with a Location: record and send the target back through the pipeline.
404/410 and other 4xx: record and drop. 429, 5xx, timeouts and connection errors: retry with
exponential backoff and jitter (or the server's Retry-After) up to a limit, then record. A
2xx whose body the connection cut short (`cut_short`): retry the same way, then store the last
partial copy, flagged truncated. A malformed answer (``protocol-error``, ``headers-too-long``):
record at once.
"""

from __future__ import annotations

import enum
import random

import msgspec

_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_RETRY_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504, 507, 509, 520, 521, 522, 523, 524})
_MAX_BACKOFF = 300.0


class Action(enum.Enum):
    """The fate of one fetched URL."""

    STORE = "store"
    REDIRECT = "redirect"
    DROP = "drop"
    RETRY = "retry"


class Decision(msgspec.Struct, frozen=True):
    """The action, and for retries how long to wait; ``error`` names a final failure."""

    action: Action
    after: float = 0.0
    error: str | None = None


_PERMANENT_ERRORS = frozenset(
    {"invalid-url", "blocked-address", "headers-too-long", "protocol-error"}
)
"""Failures that trying again cannot change, and that tell nothing of the host's health: no
request could go out, or the server answered with a head no client may accept, whole or not:
over the parser's limits, or malformed (a NUL byte, a bad status line, a header line without
a colon, an invalid Content-Length, ...). The same URL sends the same head; browsers and curl
give such an answer up at once too. Recorded at once, and not counted against the host's
pace. An answer cut short (``server-disconnected``, ``connection-reset``) or late (the
timeouts) is no such thing: it is retried, and counts against the host."""
_PROXY_ERRORS = frozenset({"proxy-error", "no-proxy"})
"""Failures of the proxy pool (retried), not of the host."""
DISCONNECTS = frozenset(
    {"connection-reset", "incomplete-body", "server-disconnected", "connection-error"}
)
"""Errors of a connection that closed or broke (the reasons `gossamer.fetch.exchange.cut_by`
archives as ``WARC-Truncated: disconnect``). After the head (the answer has a status) the body
is cut short there: the server or the network dropped it, and a second try usually gets it
whole. Not our own cuts: the body caps (no error, or ``decompression-bomb``) and the timeouts
(``time``) keep their copy at once."""


def cut_short(status: int | None, error: str | None) -> bool:
    """Whether a 2xx answer's body was cut by its connection (see `DISCONNECTS`): retried as
    a reset is, and once the retries are spent, its last partial copy stored."""
    return status is not None and 200 <= status < 300 and error in DISCONNECTS


def classify(status: int | None, error: str | None, location: str | None) -> Action:
    """The action a response (or its absence) calls for, before retry limits."""
    if status is None:
        return Action.DROP if error in _PERMANENT_ERRORS else Action.RETRY
    if 200 <= status < 300:
        return Action.RETRY if error in DISCONNECTS else Action.STORE
    if status in _REDIRECTS and location:
        return Action.REDIRECT
    if status in _RETRY_STATUSES:
        return Action.RETRY
    return Action.DROP


def is_failure(status: int | None, error: str | None) -> bool:
    """Whether the host misbehaved (for adaptive politeness)."""
    if status is None:
        return error not in _PERMANENT_ERRORS and error not in _PROXY_ERRORS
    return status in _RETRY_STATUSES or cut_short(status, error)


class RetryPolicy(msgspec.Struct, frozen=True):
    """How many times and how long to wait before trying a URL again."""

    max_retries: int = 3
    backoff: float = 1.0
    max_retry_after: float = 600.0

    def decide(
        self,
        action: Action,
        attempts: int,
        retry_after: float | None,
        rng: random.Random,
        error: str | None = None,
        status: int | None = None,
    ) -> Decision:
        """Turn a RETRY into a wait or a final failure; other actions pass through. A 2xx
        cut short (`cut_short`) that is not tried again is stored, partial, not dropped."""
        if action is not Action.RETRY:
            return Decision(action)
        spent = attempts >= self.max_retries
        if spent or (retry_after is not None and retry_after > self.max_retry_after):
            if cut_short(status, error):
                return Decision(Action.STORE)  # its last partial copy, flagged truncated
            why = (error or "retries-exhausted") if spent else "retry-after-too-long"
            return Decision(Action.DROP, error=why)
        if retry_after is not None:
            return Decision(Action.RETRY, after=retry_after)
        base = min(self.backoff * (2**attempts), _MAX_BACKOFF)
        return Decision(Action.RETRY, after=base * rng.uniform(0.5, 1.5))


class Outcome(enum.Enum):
    """How a URL's record counts in the crawl's figures, decided where the record is made."""

    FETCHED = "fetched"
    """An answer and no error (``ok`` when its status is 2xx)."""
    FAILED = "failed"
    """An error, or no answer at all."""
    ROBOTS = "robots"
    """robots.txt forbids the URL: never asked for."""
    BUDGET = "budget"
    """Its host's page budget (``--max-pages-per-host``) was spent: never asked for."""
    INTERNAL_ERROR = "internal-error"
    """Handling the answer failed (a bug the input revealed)."""
    HOOK_ERROR = "hook-error"
    """The user's ``--hook`` failed on the page."""

    @classmethod
    def of(cls, status: int | None, error: str | None) -> Outcome:
        """The outcome of a record read back from the journal (``--resume``), where only its
        status and error text are kept."""
        if error == "robots":
            return cls.ROBOTS
        if error == "budget":
            return cls.BUDGET
        if error == "internal-error":
            return cls.INTERNAL_ERROR
        if error is not None and error.startswith("hook-error"):
            return cls.HOOK_ERROR
        if error is not None or status is None:
            return cls.FAILED
        return cls.FETCHED
