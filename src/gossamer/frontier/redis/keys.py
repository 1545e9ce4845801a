"""Where the Redis frontier keeps a job, and how a queue entry is written there.

Key layout (``J`` the job, ``p`` a partition). Every key of partition ``p`` carries the hash
tag ``{J:p}``, so a partition lives in one Redis Cluster slot and each script touches one slot
only::

    gs:{J:p}:seen:n     SET    fingerprints ever added (exact: a false positive would skip a
                               page), split by linear hashing (``lua/add.lua``, on six digits
                               of the fingerprint) into SETs of a few hundred integers, each
                               an intset (8 bytes a fingerprint) under Redis' default
                               ``set-max-intset-entries``
    gs:{J:p}:hosts      HASH   host key -> its number in the partition, and number -> host
                               key: an entry names its host by number (host names once)
    gs:{J:p}:queue      LIST   entries waiting, FIFO: RPUSH on add, LPUSH to give back to the
                               front, LPOP to claim (while every entry has priority 0)
    gs:{J:p}:ranked     ZSET   entries waiting, best first, once the partition met an entry
                               with a priority other than 0 (its list moved here then, once):
                               score -priority, member "<order>|<entry>" (16 characters of
                               order: arrival, or the front of the priority for an entry given
                               back); claimed lowest score first (``lua/_ranked.lua``)
    gs:{J:p}:ranks      HASH   "<host number>|<path>" -> member of ``ranked`` (``reprioritize``)
    gs:{J:p}:claimed    HASH   claim token -> entry held by some worker
    gs:{J:p}:deadlines  ZSET   claim token -> wall-clock deadline (renewed while held)
    gs:{J:p}:counts     HASH   queued, claimed, seen, finished; token (last claim token issued);
                               ranked (1 once ranked), order and front (order counters); hosts
                               (last host number given); sl and sp (the seen SETs' level and
                               split pointer)
    gs:{J:p}:fence      HASH   worker -> "ms:seq": Redis-clock ms before which no new owner
                               may claim, and the sequence of the worker's last fence call
    gs:{J:p}:holder     STRING "worker:version": the worker whose claims hold the partition
                               until it hands it over (host mode, see :mod:`.holders`)
    gs:{J:p}:pages      HASH   host key -> pages taken, for hosts with a page budget whose
                               partition is p (see :mod:`.pages`)
    gs:{J:p}:revisits   HASH   fingerprint -> revisit state of a page fetched, packed (a
                               continuous crawl's, see :mod:`.revisits`; its URL with a
                               password masked, as in entries)
    gs:{J:p}:due        ZSET   fingerprint -> wall-clock time its revisit is due (a page not
                               out: neither queued nor claimed)

Job-level keys, tagged ``{J}`` like the control plane's::

    gs:{J}:bad          LIST   bad entries as JSON {partition, reason, entry}, newest first
    gs:{J}:bad:count    STRING how many entries were ever set aside
    gs:{J}:aside        HASH   partition -> why it is set aside: a key of the wrong type, a
                               reply Redis refused (see :mod:`.faults`)
    gs:{J}:credentials  HASH   "scheme://user:***@host" (or "scheme://***.TAG@host") -> the same
                               with the seed's password (or user name): the one key that
                               holds it (see :mod:`.credentials`); likewise the user name
                               a proxy or the page store gives alone (the job's settings
                               name it masked: :mod:`gossamer.cluster.jobusers`)

The shared limiter of ``partition_by="url"`` keeps each host ``h`` (its host key's xxh3_64,
in hex) under its own hash tag ``{J:h:h}`` (see :mod:`.limiter`)::

    gs:{J:h:h}:slots    ZSET   holder -> deadline
    gs:{J:h:h}:pace     HASH   next (earliest next request start), delay

An entry, as workers write and read it, is ``host|numbers|path``: ``host`` the URL's
``scheme://authority`` (a password masked: ``user:***@host``; a user name alone too:
``***.TAG@host``, see :func:`mask_authority`), ``path`` the rest from its
first ``/``, ``numbers`` the depth alone when the others are 0, else
``depth,hops,attempts,not_before,priority`` (a number 0 written empty; ``not_before`` the
wall-clock time before which a retried URL may not be fetched). A partition stores it with
the host's number in place of its key (the host name is stored once per partition, in
``hosts``) and without its fingerprint (the worker computes it again from the URL); claims
hold it as written. :data:`FORMAT` names this layout: a job stores it, and a worker refuses
a job of a format it does not read (:data:`READS`).
What comes off Redis is checked where it is decoded (:meth:`Entry.decode`): an entry that
does not decode raises :class:`BadEntry` and is set aside (see :mod:`.claims`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import xxhash

from gossamer.frontier.hosts import Queued
from gossamer.redact import is_masked_user, mask_user_alone
from gossamer.urls import fingerprint, host_key

if TYPE_CHECKING:
    from gossamer.frontier.admission import Admitted

FORMAT = 9
"""The layout of a job's keys and entries this module writes (see the module docstring);
format 1 kept each entry's fingerprint and host name in the entry and one seen SET a
partition; format 2 placed a fingerprint in its seen SET by nine of its digits, not six, and
kept a seed's password in its entries; format 3 kept it in a continuous job's revisit states;
formats 3 and 4 split a seen SET in two, not four, each time the partition had seen 192 more,
not 100; format 5 kept a seed's user name given alone (a token, maybe) in its entries, format
6 masked every one of a host as one (``***@host``: two seeds' tokens there took one's);
format 7 kept a proxy's or the page store's user name given alone in the job's settings, not
in ``credentials`` (see :mod:`gossamer.cluster.jobusers`), format 8 the user info of the URL
that checks proxies (``--proxy-check-url``); their queues are as format 9's, so a worker
still reads them: :data:`READS`."""
READS = (7, 8, FORMAT)
"""The formats of the jobs a worker takes: formats 7 and 8 differ from 9 in their settings
only, whose user names a worker connects with as they are stored."""
_MAX_URL = 1 << 20
"""Characters of an entry's URL beyond which it is bad, whatever the job's max URL length."""
BAD_KEPT = 10_000
"""Bad entries kept in ``gs:{J}:bad`` (the newest)."""
_BAD_SHOWN = 8192
"""Characters of a bad entry kept in ``gs:{J}:bad``."""
_COUNT = re.compile(r"\d{0,9}")
MASK = "***"
"""A password, or a user name given alone, as entries show it (as :mod:`gossamer.redact`
shows one)."""


@dataclass(frozen=True, slots=True)
class Ownership:
    """The partitions one worker owns, as of one version of the job's assignment: a value
    the owner of the assignment hands to :meth:`RedisFrontier.own`."""

    partitions: frozenset[int]
    version: int = 0

    @classmethod
    def every(cls, partitions: int) -> Ownership:
        """Every partition: a frontier alone on its job."""
        return cls(frozenset(range(partitions)))


def partition_of(key: str, partitions: int) -> int:
    """The partition of a host key (``scheme://host[:port]``)."""
    return xxhash.xxh3_64_intdigest(key.encode("utf-8", "surrogatepass")) % partitions


def partition_keys(job: str, part: int) -> dict[str, str]:
    """The Redis keys of one partition, all with the hash tag ``{job:part}``."""
    tag = f"gs:{{{job}:{part}}}:"
    names = (
        *("seen", "queue", "claimed", "deadlines", "counts", "fence", "ranked", "ranks", "pages"),
        *("revisits", "due", "hosts", "holder"),
    )
    return {name: tag + name for name in names}


def bad_keys(job: str) -> dict[str, str]:
    """The job's keys of set-aside entries (``entries`` LIST, ``count`` STRING), tag ``{job}``."""
    return {"entries": f"gs:{{{job}}}:bad", "count": f"gs:{{{job}}}:bad:count"}


def aside_key(job: str) -> str:
    """The job's partitions set aside (HASH, tag ``{job}``, see :mod:`.faults`)."""
    return f"gs:{{{job}}}:aside"


def bad_json(part: int, raw: bytes | str, reason: str) -> str:
    """A set-aside entry as stored in ``gs:{J}:bad`` (cut at ``_BAD_SHOWN`` characters)."""
    text = raw.decode("utf-8", "backslashreplace") if isinstance(raw, bytes) else raw
    entry = text[:_BAD_SHOWN].encode("utf-8", "backslashreplace").decode("utf-8")
    return json.dumps({"partition": part, "reason": reason, "entry": entry})


def host_keys(job: str, key: str) -> dict[str, str]:
    """The Redis keys of one host's shared limiter (url mode), with the hash tag ``{job:h:…}``."""
    digest = xxhash.xxh3_64_hexdigest(key.encode("utf-8", "surrogatepass"))
    tag = f"gs:{{{job}:h:{digest}}}:"
    return {name: tag + name for name in ("slots", "pace")}


class PartitionKeys:
    """The keys of each partition of one job, built once per partition."""

    def __init__(self, job: str) -> None:
        if "{" in job or "}" in job or not job:
            raise ValueError(f"job name {job!r} must be non-empty and free of braces")
        self.job = job
        self._keys: dict[int, dict[str, str]] = {}

    def __call__(self, part: int) -> dict[str, str]:
        keys = self._keys.get(part)
        if keys is None:
            keys = self._keys[part] = partition_keys(self.job, part)
        return keys

    def of(self, part: int, *names: str) -> list[str]:
        """The keys ``names`` of ``part``, in that order (a script's KEYS)."""
        keys = self(part)
        return [keys[name] for name in names]


class BadEntry(ValueError):
    """A queue entry from Redis that does not decode; it is set aside (see :mod:`.claims`)."""


class Entry(Queued, kw_only=True):
    """A claimed entry: where it came from in Redis, and when it may be fetched."""

    not_before: float
    part: int
    claim: int
    orphan: bool = False
    """Its partition was given away while it was leased: it goes back to Redis when it
    returns."""

    def encode(self) -> str:
        return encode(self, self.not_before)

    @classmethod
    def decode(
        cls, raw: bytes | str, part: int, claim: int, reveal: Mapping[str, str] | None = None
    ) -> Entry:
        """The entry ``raw`` from Redis (a masked password put back from ``reveal``, masked
        authority -> authority); :class:`BadEntry` saying why when it is malformed."""
        try:
            text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        except UnicodeDecodeError:
            raise BadEntry("not UTF-8") from None
        fields = text.split("|", 2)
        if len(fields) != 3:
            raise BadEntry(f"{len(fields)} fields, not 3")
        host, numbers, path = fields
        values = numbers.split(",") if "," in numbers else [numbers, "", "", "", ""]
        if len(values) != 5:
            raise BadEntry(f"{len(values)} numbers, not 5")
        *counts, not_before, priority = values
        if not all(_COUNT.fullmatch(n) for n in counts):
            raise BadEntry("depth, hops or attempts is not a small count")
        when = _number(not_before, "not_before")
        rank = _number(priority, "priority")
        if not path.startswith("/"):
            raise BadEntry("the path does not start with /")
        if reveal and "@" in host:
            host = reveal.get(host, host)
        url = host + path
        _check_url(url)
        if "/" in host.partition("://")[2]:
            raise BadEntry("the host holds a /")
        depth, hops, attempts = (int(n or 0) for n in counts)
        fp = fingerprint(url)
        return cls(url, fp, depth, hops, attempts, rank, not_before=when, part=part, claim=claim)


def encode(entry: Queued, not_before: float) -> str:
    """An entry as workers write it (see the module docstring)."""
    depth, hops, priority = entry.depth, entry.hops, entry.priority
    return wire_entry(
        entry.url, depth, hops, priority, attempts=entry.attempts, not_before=not_before
    )


def wire_entry(
    url: str,
    depth: int,
    hops: int,
    priority: float,
    *,
    attempts: int = 0,
    not_before: float = 0.0,
) -> str:
    """The entry of ``url``, numbers 0 written empty: its authority (``scheme://host[:port]``,
    user info included, a password masked) apart from its path, which a canonical URL always
    has."""
    key, path = split_url(url)
    return key + _tail(path, depth, hops, priority, attempts, not_before)


def _tail(path: str, depth: int, hops: int, priority: float, attempts: int, when: float) -> str:
    """``|numbers|path``: what an entry holds after its host."""
    if hops or attempts or when or priority:
        numbers = f"{_int(depth)},{_int(hops)},{_int(attempts)},{_float(when)},{_float(priority)}"
        return f"|{numbers}|{path}"
    return f"|{_int(depth)}|{path}"


def split_url(url: str) -> tuple[str, str]:
    """``scheme://authority`` (a password in it masked, see :func:`mask_authority`) and the
    path on (from its first ``/``) of a canonical URL; ('', "|" + url) for one without a
    path: an entry of it is set aside when claimed."""
    slash = url.find("/", url.find("://") + 3)
    return (mask_authority(url[:slash]), url[slash:]) if slash > 0 else ("", "|" + url)


def mask_authority(key: str) -> str:
    """``scheme://user:***@host[:port]`` for ``scheme://user:password@host[:port]``,
    ``scheme://***.TAG@host[:port]`` for ``scheme://user@host[:port]`` (a user name alone may
    be a token; ``TAG`` tells two apart: :func:`gossamer.redact.mask_user_alone`); any other
    ``scheme://authority`` as it is. Entries and host names in Redis hold a seed's user info
    so masked; the user info itself is kept once, in the job's ``credentials`` (see
    :mod:`.credentials`)."""
    if "@" not in key:
        return key
    scheme, _, authority = key.partition("://")
    userinfo, _, hostport = authority.rpartition("@")
    user, colon, password = userinfo.partition(":")
    if not colon:
        if user in ("", MASK) or is_masked_user(user):
            return key
        return f"{scheme}://{mask_user_alone(authority)}"
    if password in ("", MASK):
        return key
    return f"{scheme}://{user}:{MASK}@{hostport}"


def _int(value: int) -> str:
    return str(value) if value else ""


def _float(value: float) -> str:
    return repr(value) if value else ""


Batches = dict[int, dict[str, list[str]]]
"""Queue entries by partition and host key (as entries name it), each as two strings, its
fingerprint and ``|<numbers>|<path>`` (as ``add.lua`` takes them)."""


@dataclass(slots=True)
class Batched:
    """Admitted URLs made into the entries of ``add.lua`` calls (:func:`batch_entries`)."""

    batches: Batches
    ranked: set[int]
    """The partitions with an entry of a priority other than 0."""
    fps: list[int]
    """The fingerprints of the URLs sent."""
    duplicates: int
    """URLs not sent: sent before, or repeated in the batch."""
    secrets: dict[str, str]
    """Masked authority -> the authority with its password, for the URLs sent that hold one."""


def batch_entries(
    admitted: Iterable[Admitted], sent: Container[int], partitions: int, *, by_url: bool
) -> Batched:
    """The entries of admitted URLs not in ``sent`` (nor repeated in the batch), by partition
    and host, with what else :class:`~.adds.Adds` needs to send them."""
    batched = Batched({}, set(), [], 0, {})
    batches, fps = batched.batches, set[int]()
    parts: dict[str, int] = {}  # a batch's URLs share few hosts: one hash per host
    for url, key, fp, cand in admitted:
        if fp in fps or fp in sent:
            batched.duplicates += 1
            continue
        fps.add(fp)
        if by_url:
            part = fp % partitions
        elif (part := parts.get(key, -1)) < 0:
            part = parts[key] = partition_of(key, partitions)
        slash = url.find("/", url.find("://") + 3)
        if slash > 0:
            authority, path = url[:slash], url[slash:]
            host = mask_authority(authority)
            if host != authority:
                batched.secrets[host] = authority
        else:
            host, path = "", "|" + url
        tail = _tail(path, cand.depth, cand.hops, cand.priority, 0, 0.0)
        batches.setdefault(part, {}).setdefault(host, []).extend((str(fp), tail))
        if cand.priority:
            batched.ranked.add(part)
    batched.fps = list(fps)
    return batched


def _number(text: str, name: str) -> float:
    """A finite float of an entry ('' is 0); :class:`BadEntry` saying which field otherwise."""
    if not text:
        return 0.0
    try:
        value = float(text)
    except ValueError:
        raise BadEntry(f"{name} is not a number") from None
    if not math.isfinite(value):
        raise BadEntry(f"{name} is not finite")
    return value


def _check_url(url: str) -> None:
    """Raise :class:`BadEntry` unless ``url`` looks like a canonical http(s) URL."""
    if len(url) > _MAX_URL:
        raise BadEntry(f"URL of {len(url)} characters")
    if not url.startswith(("http://", "https://")):
        raise BadEntry("not an http(s) URL")
    if not url.isascii() or not url.isprintable() or " " in url:
        raise BadEntry("URL with characters a canonical URL never has")
    if not host_key(url).partition("://")[2]:
        raise BadEntry("URL without a host")
