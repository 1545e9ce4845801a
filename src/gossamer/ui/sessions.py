"""The dashboard's logins: what its cookie holds instead of the token.

Browsers send a cookie set by ``http://127.0.0.1:8077`` to every port of 127.0.0.1 (cookies
do not tell ports apart, RFC 6265 section 8.5), so any other local web server the user opens
receives it. The cookie therefore never holds the token: opening the URL with ``?token=``
starts a session, and the cookie holds that session's id, 256 random bits that mean nothing
to any other server and nothing to this one once the session ends. A session ends
:data:`IDLE_SECONDS` after its last request (the page asks every second while open), at the
latest :data:`LIFETIME_SECONDS` after it began, when the user logs out (``POST
/api/logout``), or when the server stops (sessions live in its memory only).

The limit, which plain ``http://`` on loopback sets: a server that received the cookie
holds a bearer credential for this UI until the session ends; it can replay it (setting
``Host`` and ``Origin`` as it likes, since it is no browser). Nothing a browser offers on
``http://127.0.0.1`` binds a cookie to a port: the ``__Host-`` prefix needs ``Secure`` and
still does not restrict ports. The server keeps only SHA-256 digests of the ids, so a look-up
takes the same time whatever the id given.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["IDLE_SECONDS", "LIFETIME_SECONDS", "MAX_SESSIONS", "Sessions"]

log = logging.getLogger(__name__)

IDLE_SECONDS = 30 * 60.0
"""A session unused this long has ended."""
LIFETIME_SECONDS = 12 * 3600.0
"""A session ends this long after the login, used or not."""
MAX_SESSIONS = 100
"""Sessions kept at once; a new login past this ends the least recently used."""


@dataclass(slots=True)
class _Session:
    started: float
    seen: float


class Sessions:
    """The open sessions of one UI process, by the digest of their ids."""

    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        idle: float = IDLE_SECONDS,
        lifetime: float = LIFETIME_SECONDS,
        limit: int = MAX_SESSIONS,
    ) -> None:
        self._clock = clock
        self._idle = idle
        self._lifetime = lifetime
        self._limit = limit
        self._open: OrderedDict[bytes, _Session] = OrderedDict()

    def __len__(self) -> int:
        return len(self._open)

    def start(self) -> str:
        """A new session; its id, for the cookie."""
        ident = secrets.token_urlsafe(32)
        now = self._clock()
        self._open[_digest(ident)] = _Session(now, now)
        while len(self._open) > self._limit:
            self._open.popitem(last=False)
            log.info("ended the least recently used session: %d are open", self._limit)
        return ident

    def check(self, ident: str | None) -> bool:
        """Whether ``ident`` names an open session (which counts as a use of it)."""
        if not ident or len(ident) > 100:
            return False
        key = _digest(ident)
        session = self._open.get(key)
        if session is None:
            return False
        now = self._clock()
        if now - session.seen > self._idle or now - session.started > self._lifetime:
            del self._open[key]
            return False
        session.seen = now
        self._open.move_to_end(key)
        return True

    def end(self, ident: str | None) -> bool:
        """End the session ``ident`` (a logout); whether it was open."""
        if not ident or len(ident) > 100:
            return False
        return self._open.pop(_digest(ident), None) is not None


def _digest(ident: str) -> bytes:
    return hashlib.sha256(ident.encode("utf-8", "replace")).digest()
