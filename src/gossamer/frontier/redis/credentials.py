"""A seed's user name and password in a Redis job: kept once, out of every queue entry.

A seed may carry user info (``https://user:password@host/``, or a user name alone, which may
be a token: ``https://TOKEN@host/``), and the URLs found on its pages keep it. The
partitions' keys (entries in ``queue``, ``ranked`` and ``claimed``, host names in ``hosts``, a
continuous job's page states in ``revisits``) name such an authority masked,
``https://user:***@host`` (``https://***.TAG@host``), as the embedded frontier's ``urls`` table
does; the authority with its password is stored once a job, in the HASH
``gs:{J}:credentials`` (masked authority -> authority), like crawl.db's owner-only
``credentials`` row. A worker writes it before the entries that name it (:meth:`store`) and
reads it only for the claims it is about to fetch (:meth:`reveal`), keeping what it read.

What it reads tells the worker's admission too (:class:`Trusts`), and so does the user info
of a claim that names an empty password (``user:@host``, nothing stored): the seeds of a job were
admitted by whoever submitted them, so without it the URLs a claimed page names with no page
of their own (its redirect's target, a focused job's scored links, a canonical URL) would be
turned away as someone else's user info. They keep the seed's user info on its origin only
(the authority: user info, host and port); another origin's URL naming it is still refused.

Whoever can read the job's Redis can read that one key, as a crawl.db's owner can read its
row: a worker must send the password to fetch the pages. A Redis ACL may keep it from other
readers (everything else of the job works without it), and ``cluster clear`` removes it with
the job's other keys.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

from gossamer.frontier.redis.keys import MASK, mask_authority
from gossamer.frontier.redis.scripts import RedisClient

__all__ = ["Credentials", "Trusts", "credentials_key", "masked_url"]

_MASKED = (f":{MASK}@", f"://{MASK}.")
"""What a masked authority holds: a password masked, or a user name alone."""


def masked_url(url: str) -> str:
    """``url`` with its user info masked (``https://user:***@host/path``, a user name alone as
    ``https://***.TAG@host/path``), as
    a job's keys name it anywhere but in ``credentials``: a continuous job's page states, and
    the keys of sitemap claims, which hash it."""
    slash = url.find("/", url.find("://") + 3)
    return mask_authority(url) if slash < 0 else mask_authority(url[:slash]) + url[slash:]


def credentials_key(job: str) -> str:
    """The job's HASH of masked authority -> authority with its password (tag ``{job}``)."""
    return f"gs:{{{job}}}:credentials"


class Trusts(Protocol):
    """What takes the credentials a seed gave as the user's own (the worker's
    :class:`~gossamer.frontier.admission.Admission`)."""

    def trust(self, credentials: Iterable[str]) -> None:
        """Take ``credentials`` (``user:password@host[:port]``) as a seed's."""


class Credentials:
    """The job's seed credentials as one worker writes and reads them (see the module
    docstring)."""

    __slots__ = ("_key", "_known", "_redis", "_trusts")

    def __init__(self, redis: RedisClient, job: str, trusts: Trusts | None = None) -> None:
        """The credentials of ``job`` on ``redis``; ``trusts`` learns those :meth:`reveal`
        reads."""
        self._redis = redis
        self._key = credentials_key(job)
        self._trusts = trusts
        self._known: dict[str, str] = {}
        """Masked authority -> authority, as stored in Redis (written or read here); an
        authority with a user name alone (no password, nothing stored) -> itself."""

    async def store(self, secrets: Mapping[str, str]) -> None:
        """Store the ``secrets`` (masked authority -> authority) this worker has not stored or
        read yet."""
        new = {masked: real for masked, real in secrets.items() if self._known.get(masked) != real}
        if new:
            await self._redis.hset(self._key, items=[x for pair in new.items() for x in pair])
            self._known.update(new)

    async def reveal(self, raws: Iterable[bytes | str]) -> Mapping[str, str]:
        """Masked authority -> authority for the entries ``raws`` (as claimed) whose host is
        masked: read from Redis once each, then kept. ``trusts`` learns the credentials of
        each host they name with user info (an empty password is in the entry itself)."""
        named = {host for host in map(_named_host, raws) if host and host not in self._known}
        if named:
            asked = sorted(host for host in named if _masked(host))
            if asked:
                replies = await self._redis.hmget(self._key, asked)
                for masked, real in zip(asked, replies, strict=True):
                    if real is not None:
                        self._known[masked] = real.decode() if isinstance(real, bytes) else real
            self._known.update((host, host) for host in named if not _masked(host))
            self._trust(sorted(named))
        return self._known

    def _trust(self, masked: list[str]) -> None:
        """Tell ``trusts`` the credentials of the authorities ``masked`` (as entries name them)
        known now: each whose masked form is that name (a seed's, not another origin's)."""
        known = self._known
        read = [known[m] for m in masked if m in known and mask_authority(known[m]) == m]
        if read and self._trusts is not None:
            self._trusts.trust(real.partition("://")[2] for real in read)


def _masked(host: str) -> bool:
    return _MASKED[0] in host or _MASKED[1] in host


def _named_host(raw: bytes | str) -> str | None:
    """The host of an entry (``scheme://user:***@host|...``) when it names user info (masked
    or an empty password), else None."""
    head = raw[:2048].decode("utf-8", "replace") if isinstance(raw, bytes) else raw[:2048]
    host = head.partition("|")[0]
    return host if "@" in host else None
