"""A cluster job seen from outside the workers: connecting to Redis, ``submit``, ``status``
and ``wait``. Kept apart from the worker so these commands start without loading the crawl
engine (about half a second less per command).
"""

from __future__ import annotations

import asyncio
import json
import math
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
from redis.asyncio import Redis
from redis.asyncio.connection import parse_url
from redis.exceptions import AuthenticationError, RedisClusterException, RedisError

from gossamer.balance.capability import Capability, Live
from gossamer.cluster import DEFAULT_BUDGET
from gossamer.cluster.balancer import model_report
from gossamer.cluster.bounded import bounded_parser
from gossamer.cluster.control import Control, JobTotals, WorkerInfo
from gossamer.cluster.errors import ClusterError
from gossamer.cluster.freshness import JobFreshness, due_backlog, job_freshness
from gossamer.cluster.jobusers import hide_check_url, hide_user, lone_users, store_users
from gossamer.cluster.redisretry import GuardedCluster
from gossamer.cluster.redisurl import PASSWORD_ENV
from gossamer.cluster.resilient import RedisGuard, RedisUnavailable, forbidden, install_guard
from gossamer.cluster.seeding import Seeding, read_progress, seed_origins, seeds_digest
from gossamer.crawl import check_given_sitemaps
from gossamer.frontier.admission import Guards
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.frontier.redis import RedisClient, RedisFrontier, RedisFrontierConfig
from gossamer.frontier.redis.keys import FORMAT, READS
from gossamer.redact import redact_text, redact_url, strip_userinfo
from gossamer.settings import (
    InvalidSetting,
    JobSettings,
    SettingsError,
    ShippedDocument,
    ShippedRules,
    canonical_seeds,
    crawl_scope,
    settings_from_json,
    settings_to_json,
)

_CONNECT_TIMEOUT = 3.0
_POLL = (0.1, 1.0)
"""Seconds between looks of ``cluster wait`` at the job's counts: the least and the most."""
_FAST_RATE = 5_000.0
"""URLs per second no job outruns: ``wait`` looks again in (queued + claimed) / this."""
_ASIDE_SHOWN = 10
"""Partitions set aside that ``status`` names (``--json`` names every one)."""


def connect(url: str, *, cluster: bool = False) -> RedisClient:
    """A client for ``url`` (``redis://`` or ``rediss://``): of that one server, or with
    ``cluster`` of the Redis Cluster that server belongs to. A malformed URL is a settings error.

    Its replies are read with gossamer's bounds (:mod:`gossamer.cluster.bounded`).
    """
    timeouts: dict[str, Any] = {"socket_connect_timeout": _CONNECT_TIMEOUT, "socket_timeout": 30}
    try:
        parser = bounded_parser(parse_url(url).get("protocol"))
        if not cluster:
            return Redis.from_url(url, parser_class=parser, **timeouts)
        client = GuardedCluster.from_url(url, **timeouts)
    except ValueError as exc:
        raise SettingsError(f"invalid setting 'redis': {redact_text(str(exc))}") from None
    # A cluster client takes no parser argument: every node's connections are made from
    # these keyword arguments (those of nodes found later from the client's).
    client.connection_kwargs["parser_class"] = parser
    for node in client.nodes_manager.startup_nodes.values():
        node.connection_kwargs["parser_class"] = parser
    return client


async def open_control(url: str, job: str) -> Control:
    """A control handle on ``job`` once Redis at ``url`` answers.

    For a Redis Cluster give any one node's URL, as to ``redis-cli -c``: the node is asked
    once whether it runs in cluster mode, and if so a cluster client finds the other nodes
    and sends each key to the node owning its slot.
    """
    control, _ = await _open(url, job, None)
    return control


async def open_guarded(
    url: str, job: str, budget: float = DEFAULT_BUDGET, *, durable: bool = True
) -> tuple[Control, RedisGuard]:
    """As :func:`open_control`, the client guarded from its first connection: a Redis not up
    yet is waited for (a warning logged once) as a worker waits out an outage mid-crawl, and
    after ``budget`` seconds :class:`~gossamer.cluster.resilient.RedisUnavailable` says so in
    one line. A refused credential, ACL rule or certificate fails at once."""
    control, guard = await _open(url, job, (budget, durable))
    assert guard is not None
    return control, guard


async def _open(
    url: str, job: str, guarded: tuple[float, bool] | None
) -> tuple[Control, RedisGuard | None]:
    redis, guard = _guarded(connect(url), url, guarded, durable=False)
    try:
        if (await redis.info("cluster")).get("cluster_enabled"):
            await redis.aclose()
            redis, guard = _guarded(connect(url, cluster=True), url, guarded)
        await redis.ping()
        return Control(redis, job), guard
    except ValueError as exc:
        await redis.aclose()
        raise SettingsError(f"invalid setting 'job': {exc}") from None
    except RedisUnavailable:
        await redis.aclose()
        raise
    except (RedisError, RedisClusterException, OSError) as exc:
        await redis.aclose()
        raise refusal(exc, url) from None


def _guarded(
    redis: RedisClient, url: str, guarded: tuple[float, bool] | None, *, durable: bool = True
) -> tuple[RedisClient, RedisGuard | None]:
    """``redis`` with a guard of ``guarded``'s budget (and replica waits), if given."""
    if guarded is None:
        return redis, None
    budget, waits = guarded
    return redis, install_guard(redis, url, budget, durable=durable and waits)


def refusal(error: BaseException, url: str) -> ClusterError | SettingsError:
    """The one-line error for a Redis that ``url`` does not reach or that refuses it.

    A wrong password or user, a command the ACL forbids and a failed TLS handshake are
    settings errors (exit status 2: trying again will not help); the URL shows redacted.
    """
    shown = redact_url(url)
    reason = redact_text(str(error)).strip().rstrip(".")
    if isinstance(error, AuthenticationError):
        return SettingsError(
            f"Redis at {shown} refused the credentials ({reason}): check the user and password "
            f"(in the URL, --redis-password-file or ${PASSWORD_ENV})"
        )
    if forbidden(error):
        return SettingsError(
            f"Redis at {shown} does not let the user run a command gossamer needs ({reason}); "
            "see docs/security.md for the ACL rules gossamer needs"
        )
    cause = error.__cause__ or error.__context__
    if isinstance(error, ssl.SSLError) or isinstance(cause, ssl.SSLError):
        return SettingsError(
            f"TLS with Redis at {shown} failed ({reason}): check the URL's ssl_ca_certs "
            "(the CA that signed the server's certificate), ssl_certfile and ssl_keyfile"
        )
    hint = ""
    if url.startswith("redis://") and "reset by peer" in reason:
        hint = " (if the server speaks TLS, use rediss://)"
    elif url.startswith("rediss://") and "Timeout" in reason:
        hint = " (if the server does not speak TLS, use redis://)"
    return ClusterError(f"cannot reach Redis at {shown}: {reason}{hint}")


_FORMAT_FIELD = "frontier_format"
"""The field of a stored job naming the layout of its queues (:data:`FORMAT`)."""


def job_json(settings: JobSettings) -> str:
    """The job as its key stores it: its settings, and the format of its Redis queues."""
    document = json.loads(settings_to_json(settings))
    document[_FORMAT_FIELD] = FORMAT
    return json.dumps(document, separators=(",", ":"))


def parse_job(raw: str, job: str) -> JobSettings:
    """The stored settings of ``job``; malformed ones, and a job whose queues are of another
    format than this frontier's, are a settings error."""
    try:
        document = json.loads(raw)
    except ValueError:
        document = None
    form = 1  # a job stored before the field was
    if isinstance(document, dict) and _FORMAT_FIELD in document:
        form = document.pop(_FORMAT_FIELD)
        raw = json.dumps(document)
    try:
        settings = settings_from_json(JobSettings, raw)
    except InvalidSetting as exc:
        problem = f"{exc.field}: {exc.problem}"
        raise SettingsError(f"stored job {job!r} is malformed: {problem}") from None
    if form not in READS:
        raise SettingsError(
            f"stored job {job!r} keeps its queues in Redis frontier format {form!r}; this "
            f"gossamer reads formats {_listed(READS)} only: submit the job "
            "again under a new --job with this version (or finish it with the version that "
            "submitted it)"
        )
    return settings


async def load_job(control: Control) -> JobSettings | None:
    """The job's settings, or None before submit."""
    raw = await control.load_job()
    return None if raw is None else parse_job(raw, control.job)


# -- submit ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Submitted:
    """What ``submit`` did."""

    queued: int
    """Seeds the job's queues hold (each URL once)."""
    seeds: int
    """Seeds given (canonical, duplicates and seeds out of scope included)."""
    resumed_at: int = 0
    """Seeds an interrupted submit of the same seeds had queued already."""


async def submit(settings: JobSettings, url: str, job: str) -> Submitted:
    """Store the job's seed origins, queue its seeds in batches and store its settings last
    (see :mod:`gossamer.cluster.seeding`: a submit killed midway is resumed by the next).

    The stored job holds no seed and no credential: the page store's DSN is stored without
    its password (see :func:`job_settings`), a user name given alone in the job's
    ``credentials`` (see :mod:`gossamer.cluster.jobusers`).
    """
    if settings.revisit_spare > 0 and settings.partition_by == "url":
        raise SettingsError(
            "invalid setting 'revisit-spare': a job partitioned by URL spreads each host's "
            "pages over every partition, so no owner sees a host idle; use --partition-by host"
        )
    seeds = canonical_seeds(settings)
    users = lone_users(settings)
    settings = job_settings(settings, seeds)
    origins = seed_origins(seeds)
    scope = crawl_scope(settings, origins)
    check_given_sitemaps(settings.sitemap, scope)
    control = await open_control(url, job)
    try:
        if await control.redis.exists(control.keys["job"]):
            raise SettingsError(
                f"job {job!r} exists already at {redact_url(url)}; choose another --job"
            )
        frontier = RedisFrontier(
            control.redis,
            job,
            scope,
            PolitenessPolicy(),
            config=RedisFrontierConfig(
                partitions=settings.partitions, partition_by=settings.partition_by
            ),
            guards=Guards.of(settings),
        )
        seeding = Seeding(control, frontier)
        start = await seeding.run(seeds, origins, seeds_digest(settings, seeds))
        await store_users(control.redis, job, users)  # before a worker reads the job
        # Seeds first: a worker that sees the job must not find it finished already.
        await control.store_job(job_json(settings))
        # Only this submit wrote to the queues so far: their seen sets hold the seeds.
        queued = (await control.totals(settings.partitions)).seen
        return Submitted(queued, len(seeds), start)
    finally:
        await control.redis.aclose()


def job_settings(settings: JobSettings, seeds: list[str]) -> JobSettings:
    """The settings as a job stores them: no seeds (they are queued, their origins stored
    apart: see :mod:`gossamer.cluster.seeding`), the first seed (without its user info) as the
    URL that checks proxies unless one is given (a given one's user info kept in the job's
    ``credentials``, as a seed's is), ``store`` and ``proxies`` without their
    passwords and with a user name given alone masked (kept in the job's ``credentials``:
    see :mod:`gossamer.cluster.jobusers`), and the rule documents' texts with their digest
    instead of their paths.

    Everyone who can read the job's Redis can read the job, so it holds no credential. Each
    worker supplies the store's password itself: its own ``--store`` (or ``GOSSAMER_STORE``)
    replaces the job's, or libpq's ``PGPASSWORD`` / ``~/.pgpass`` complete the stored DSN;
    likewise its own ``--proxy`` or ``--proxies-file`` (or ``GOSSAMER_PROXIES``) replace the
    job's proxies.
    The rules travel with the job, so every worker reads the same version of them.
    """
    update: dict[str, Any] = {"seeds": [], "seeds_file": None, "resume": False}
    if settings.proxy_check_url is None and seeds:
        # as a crawl checks its proxies; a seed's user info stays out of the job
        update["proxy_check_url"] = strip_userinfo(seeds[0])
    elif settings.proxy_check_url is not None:
        update["proxy_check_url"] = hide_check_url(settings.proxy_check_url)
    if settings.store is not None:
        update["store"] = hide_user(settings.store)
    if settings.proxies:
        update["proxies"] = [hide_user(url) for url in settings.proxies]
    if settings.rules:
        update["shipped_rules"] = ship_rules(settings)
        update["rules"] = []
    return msgspec.structs.replace(settings, **update)


def ship_rules(settings: JobSettings) -> ShippedRules:
    """The rule documents of ``settings.rules`` as a job carries them, checked (with the
    submitter's ``rule_functions``) first: bad documents fail the submit, not the workers."""
    # Imported here: the rule parser is of no use to status and wait.
    from gossamer.extract.rules import RuleError, load_rules

    try:
        rules = load_rules(settings.rules, settings.rule_functions)
    except RuleError as exc:
        raise SettingsError("invalid setting 'rules':\n" + "\n".join(exc.problems)) from None
    documents = [ShippedDocument(name=Path(d.name).name, text=d.text) for d in rules.documents]
    return ShippedRules(documents=documents, digest=rules.digest)


# -- status and wait ------------------------------------------------------------------------


async def status(url: str, job: str) -> dict[str, Any]:
    """The job's state as ``cluster status --json`` prints it."""
    control = await open_control(url, job)
    try:
        return await status_of(control)
    finally:
        await control.redis.aclose()


async def status_of(control: Control) -> dict[str, Any]:
    """The state of the job ``control`` handles (see :func:`status`)."""
    raw = await control.load_job()
    settings = None if raw is None else parse_job(raw, control.job)
    size = 0 if raw is None else len(raw.encode("utf-8", "surrogatepass"))
    totals = await control.totals(settings.partitions) if settings else None
    infos = await control.workers()
    workers = [_worker_status(w) for w in infos]
    return {
        "job": control.job,
        "submitted": settings is not None,
        "seeds": await _seeds_status(control, size),
        "state": await control.state(),
        "done": await finished(control, settings, totals),
        "leader": await control.leader(),
        "assignment_version": await control.version(),
        "totals": _totals(totals),
        "aside": {} if totals is None else {str(p): why for p, why in sorted(totals.aside.items())},
        "pages_per_second": round(sum(w["pages_per_second"] for w in workers if w["alive"]), 2),
        "workers": workers,
        "allocator": settings.allocator if settings else None,
        "runtime_model": await model_report(control),
        "freshness": await _freshness(control, settings, infos),
    }


async def _freshness(
    control: Control, settings: JobSettings | None, workers: list[WorkerInfo]
) -> dict[str, Any] | None:
    """A continuous job's revisits and every job's sitemaps, summed over its workers (None
    before it is submitted)."""
    if settings is None:
        return None
    backlog = 0
    if settings.recrawl:
        backlog = await due_backlog(control.redis, control.job, settings.partitions)
    return job_freshness(workers, backlog).as_json()


async def _seeds_status(control: Control, job_bytes: int) -> dict[str, Any]:
    """The job's seeds as ``status`` shows them: how many were given and queued by its
    submit (``queued`` below ``total`` while a submit is under way or was interrupted), their
    origins, and the bytes of the job's own key (its settings, never its seeds)."""
    progress = await read_progress(control)
    return {
        "total": progress.seeds if progress else 0,
        "queued": progress.queued if progress else 0,
        "origins": await control.origins(),
        "job_bytes": job_bytes,
    }


def _worker_status(worker: WorkerInfo) -> dict[str, Any]:
    """One worker as ``status`` shows it; figures that are not what a worker writes (they
    come from Redis) show as 0 or empty."""
    figures = worker.figures
    return {
        "name": worker.name,
        "alive": worker.alive,
        "partitions": _number(figures.get("partitions"), 0),
        "pages": _number(figures.get("pages"), 0),
        "pages_per_second": _number(figures.get("pages_per_second"), 0.0),
        "started": _number(figures.get("started"), None),
        "capability": Capability.from_json(figures.get("capability")).to_json(),
        "live": Live.from_json(figures.get("live")).to_json(),
    }


def _number(value: Any, default: float | None) -> Any:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    return value if ok else default


def _totals(totals: JobTotals | None) -> dict[str, int]:
    if totals is None:
        return {"queued": 0, "claimed": 0, "seen": 0, "finished": 0, "set_aside": 0}
    return {
        "queued": totals.queued,
        "claimed": totals.claimed,
        "seen": totals.seen,
        "finished": totals.finished,
        "set_aside": totals.set_aside,
    }


async def set_state(url: str, job: str, state: str) -> None:
    """Pause, resume (``running``) or stop the job's workers."""
    control = await open_control(url, job)
    try:
        if not await control.redis.exists(control.keys["job"]):
            raise SettingsError(f"no job {job!r} at {redact_url(url)}")
        await control.set_state(state)
    finally:
        await control.redis.aclose()


async def wait(url: str, job: str, limit: float | None) -> bool:
    """Wait until the job is finished (True) or ``limit`` seconds pass (False); a Redis
    restart meanwhile is waited out like in a worker (within ``limit``)."""
    control = await open_control(url, job)
    install_guard(
        control.redis, url, DEFAULT_BUDGET if limit is None else min(limit, DEFAULT_BUDGET)
    )
    try:
        # The limit bounds the whole wait, whatever Redis does meanwhile: a reply refused again
        # and again on fresh connections never ends the guard's outage on its own.
        async with asyncio.timeout(limit):
            return await _wait_done(control)
    except TimeoutError:
        return False
    finally:
        await control.redis.aclose()


async def _wait_done(control: Control) -> bool:
    """Poll the job's totals until it is finished."""
    while True:
        settings = await load_job(control)
        totals = None if settings is None else await control.totals(settings.partitions)
        if await finished(control, settings, totals):
            return True
        # Each look reads every partition: seldom while much is left to crawl.
        left = 0 if totals is None else totals.queued + totals.claimed
        await asyncio.sleep(min(max(left / _FAST_RATE, _POLL[0]), _POLL[1]))


async def finished(
    control: Control, settings: JobSettings | None, totals: JobTotals | None
) -> bool:
    """Whether the job is finished: nothing queued or claimed; for a continuous job
    (``recrawl``), which always has revisits to come, once every worker that joined has
    left (``--max-duration``, ``cluster stop``, SIGTERM) or died."""
    if settings is None or totals is None:
        return False
    if not settings.recrawl:
        return totals.done
    workers = await control.workers()
    return bool(workers) and not any(worker.alive for worker in workers)


def format_status(state: dict[str, Any]) -> str:
    """The human form of ``cluster status``."""
    seeds = state["seeds"]
    if not state["submitted"]:
        if seeds["total"]:
            return (
                f"job {state['job']!r}: not submitted; a submit queued {seeds['queued']} of "
                f"{seeds['total']} seeds (the same submit again finishes it)"
            )
        return f"job {state['job']!r}: not submitted"
    t = state["totals"]
    lines = [
        f"job {state['job']!r}: {'finished' if state['done'] else state['state']}, "
        f"seen {t['seen']}, finished {t['finished']}, queued {t['queued']}, "
        f"claimed {t['claimed']}, {state['pages_per_second']} pages/s, "
        f"leader {state['leader']}, assignment v{state['assignment_version']}",
        f"  {seeds['total']} seeds from {seeds['origins']} origins; "
        f"job settings {seeds['job_bytes']} bytes",
    ]
    if t.get("set_aside"):
        lines[0] += f", {t['set_aside']} malformed entries set aside"
    if aside := state.get("aside"):
        lines.append(f"  {len(aside)} partition(s) set aside, their URLs not crawled:")
        lines += [
            f"    partition {part}: {why}" for part, why in list(aside.items())[:_ASIDE_SHOWN]
        ]
        if len(aside) > _ASIDE_SHOWN:
            lines.append(f"    ... and {len(aside) - _ASIDE_SHOWN} more (--json lists them all)")
    fresh = state.get("freshness")
    if fresh and (shown := JobFreshness(**fresh)).anything:
        lines.append(shown.line())
    model = state.get("runtime_model")
    if model:
        lines.append(f"  allocator {state.get('allocator')}; {model['summary']}")
    for w in state["workers"]:
        lines.append(
            f"  {w['name']:<24} {'alive' if w['alive'] else 'gone ':<5} "
            f"partitions {w['partitions']:<6} pages {w['pages']:<8} {w['pages_per_second']}/s"
        )
    return "\n".join(lines)


def _listed(forms: tuple[int, ...]) -> str:
    """``7, 8 and 9``."""
    *first, last = map(str, forms)
    return f"{', '.join(first)} and {last}" if first else last
