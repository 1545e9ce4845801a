"""``gossamer cluster submit|worker|status|pause|resume|stop|wait|metrics|up``.

Building the parser imports nothing of Redis or the worker: ``gossamer crawl`` parses its
command line with this parser too, and starts without loading cluster code."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gossamer.cluster import DEFAULT_BUDGET, DEFAULT_JOB
from gossamer.flags import add_crawl_flags, add_log_flags, settings_from_args
from gossamer.redact import redact_url
from gossamer.settings import CrawlSettings, JobSettings, SettingsError, validate_model

if TYPE_CHECKING:
    from gossamer.cluster.worker import WorkerOptions


def add_cluster_parser(sub: Any, worker_command: Callable[[argparse.Namespace], int]) -> None:
    """The ``cluster`` command and its subcommands; ``cluster worker`` runs
    ``worker_command`` (the ``gossamer`` command's, through :class:`gossamer.Worker`: this
    package lies below the API), which reads its flags with :func:`worker_options`."""
    cluster = sub.add_parser("cluster", help="crawl one job with many workers through Redis")
    commands = cluster.add_subparsers(dest="cluster_command", required=True)

    submit = commands.add_parser("submit", help="store a job's settings and queue its seeds")
    _redis_flags(submit)
    add_crawl_flags(submit, cluster=True)
    submit.set_defaults(handler=_submit)

    worker = commands.add_parser("worker", help="crawl a share of the job until it is done")
    _redis_flags(worker)
    worker.add_argument("--name", help="worker name, unique in the job (default host-pid)")
    worker.add_argument("--out", type=Path, help="this worker's output directory")
    worker.add_argument("--concurrency", type=int, help="requests in flight in this worker")
    worker.add_argument(
        "--max-bandwidth", type=int, metavar="BYTES", help="bytes per second this worker reads"
    )
    worker.add_argument("--heartbeat-ttl", type=float, help="seconds a silent worker lives")
    worker.add_argument(
        "--store",
        metavar="DSN",
        help="this worker's page store, password included (default $GOSSAMER_STORE, else "
        "the job's store, which holds no password: PGPASSWORD or ~/.pgpass supply it)",
    )
    worker.add_argument(
        "--proxy",
        dest="proxies",
        action="append",
        metavar="URL",
        help="this worker's proxy, password included (repeatable; default $GOSSAMER_PROXIES, "
        "comma-separated; with --proxies-file these replace the job's proxies, which hold no "
        "password)",
    )
    worker.add_argument(
        "--proxies-file", type=Path, help="this worker's proxies file (see crawl --help)"
    )
    worker.add_argument(
        "--job-timeout", type=float, default=600.0, help="seconds to wait for a submit (600)"
    )
    worker.add_argument(
        "--redis-outage-max",
        "--redis-timeout",
        dest="redis_timeout",
        type=float,
        default=DEFAULT_BUDGET,
        metavar="SECONDS",
        help="wait this long for an unreachable Redis (a restart, a failover), then exit "
        f"with status 75 ({DEFAULT_BUDGET:g})",
    )
    worker.add_argument(
        "--no-replica-wait",
        dest="replica_wait",
        action="store_false",
        help="on a Redis Cluster with replicas, do not WAIT for a replica after the "
        "frontier's writes (faster; a failover may then lose URLs added just before it)",
    )
    _metrics_flags(worker, "this worker's")
    worker.add_argument("--quiet", action="store_true", help="no summary")
    add_log_flags(worker)
    worker.set_defaults(handler=worker_command)

    metrics = commands.add_parser(
        "metrics", help="serve the job's metrics (live workers and totals) for Prometheus"
    )
    _redis_flags(metrics)
    _metrics_flags(metrics, "the job's")
    add_log_flags(metrics)
    metrics.set_defaults(handler=_metrics)

    status = commands.add_parser("status", help="workers and totals of the job")
    _redis_flags(status)
    status.add_argument("--json", action="store_true", help="machine-readable output")
    add_log_flags(status)
    status.set_defaults(handler=_status)

    for command, state, text in (
        ("pause", "paused", "workers lease no URL until resume"),
        ("resume", "running", "paused workers crawl again"),
        ("stop", "stopped", "workers finish their in-flight URLs and exit; nothing is lost"),
    ):
        control = commands.add_parser(command, help=text)
        _redis_flags(control)
        add_log_flags(control)
        control.set_defaults(handler=_set_state, state=state)

    wait = commands.add_parser("wait", help="exit 0 once the job is finished, 1 on timeout")
    _redis_flags(wait)
    wait.add_argument("--timeout", type=float, help="give up after this many seconds")
    add_log_flags(wait)
    wait.set_defaults(handler=_wait)

    up = commands.add_parser("up", help="local demo: redis-server + N workers crawl the seeds")
    up.add_argument("-n", "--workers", type=int, default=3, help="workers to start (3)")
    up.add_argument("--job", default=DEFAULT_JOB, help=f"job name ({DEFAULT_JOB})")
    add_crawl_flags(up, cluster=True)
    up.set_defaults(handler=_up)


def _metrics_flags(parser: argparse.ArgumentParser, whose: str) -> None:
    parser.add_argument(
        "--metrics-port",
        type=_port,
        metavar="PORT",
        help=f"serve {whose} Prometheus /metrics and /healthz on this port "
        "(default $GOSSAMER_METRICS_PORT)",
    )
    parser.add_argument(
        "--metrics-bind",
        metavar="ADDRESS",
        help="address the metrics port listens on (default $GOSSAMER_METRICS_BIND, else "
        "127.0.0.1; 0.0.0.0 in a container)",
    )
    parser.add_argument(
        "--metrics-hosts",
        metavar="NAME,...",
        help="host names the metrics port answers to besides addresses, localhost and this "
        "machine's name (default $GOSSAMER_METRICS_HOSTS; e.g. a Kubernetes Service's name; "
        "* answers any)",
    )


def _port(text: str) -> int:
    """A TCP port number 1-65535 (argparse type)."""
    if not text.isdigit() or not 1 <= int(text) <= 65_535:
        raise argparse.ArgumentTypeError(f"{text[:20]!r} is not a port number (1-65535)")
    return int(text)


def _metrics_options(args: argparse.Namespace) -> tuple[int | None, str, tuple[str, ...]]:
    """The metrics port, address and host names: the flags, else the GOSSAMER_METRICS_*
    environment, checked as the crawl's settings are."""
    port = args.metrics_port
    bind = args.metrics_bind or os.environ.get("GOSSAMER_METRICS_BIND") or "127.0.0.1"
    raw = os.environ.get("GOSSAMER_METRICS_PORT")
    hosts = args.metrics_hosts or os.environ.get("GOSSAMER_METRICS_HOSTS") or ""
    values: dict[str, Any] = {"metrics_bind": bind, "metrics_hosts": _split(hosts)}
    values["metrics_port"] = port if port is not None else raw or None
    checked = validate_model(CrawlSettings, values)
    return checked.metrics_port, checked.metrics_bind, tuple(checked.metrics_hosts)


def _redis_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--redis",
        required=True,
        metavar="URL",
        help="redis://[USER@]HOST:PORT/DB, or rediss://...?ssl_ca_certs=CA.pem for TLS "
        "(see docs/security.md)",
    )
    add_redis_password_flag(parser)
    parser.add_argument("--job", default=DEFAULT_JOB, help=f"job name ({DEFAULT_JOB})")


def add_redis_password_flag(parser: argparse.ArgumentParser) -> None:
    """``--redis-password-file``, of every command that takes ``--redis``."""
    parser.add_argument(
        "--redis-password-file",
        type=Path,
        metavar="PATH",
        help="read the Redis password from this file's first line (default "
        "$GOSSAMER_REDIS_PASSWORD) when the URL has none, so that ps does not show it",
    )


def _redis_url(args: argparse.Namespace) -> str:
    """The ``--redis`` URL, checked, its password completed from the file or environment."""
    from gossamer.cluster.redisurl import resolve_redis_url

    return resolve_redis_url(args.redis, password_file=args.redis_password_file)


def _submit(args: argparse.Namespace) -> int:
    from gossamer.cluster.jobs import submit
    from gossamer.cluster.jobusers import holds_password
    from gossamer.cluster.resilient import run

    settings = settings_from_args(args, JobSettings, skip=("redis", "redis_password_file", "job"))
    done = run(submit(settings, _redis_url(args), args.job))
    if not settings.quiet:
        resumed = ""
        if done.resumed_at:
            resumed = f" (resumed: an interrupted submit had queued {done.resumed_at} of them)"
        print(
            f"submitted job {args.job!r}: {done.queued} seed(s) queued at "
            f"{redact_url(args.redis)}{resumed}"
        )
        if any(holds_password(url) for url in settings.proxies):
            print(
                "the proxies' passwords are not stored with the job: give each worker --proxy "
                "or --proxies-file (or GOSSAMER_PROXIES)",
                file=sys.stderr,
            )
        if settings.store is not None and holds_password(settings.store):
            print(
                "the store's password is not stored with the job: give each worker --store "
                "(or GOSSAMER_STORE), or PGPASSWORD / ~/.pgpass",
                file=sys.stderr,
            )
    return 0


def worker_options(args: argparse.Namespace) -> WorkerOptions:
    """The options ``cluster worker``'s flags (and ``GOSSAMER_STORE``, ``GOSSAMER_PROXIES``)
    give the worker."""
    from gossamer.cluster.worker import WorkerOptions

    port, bind, hosts = _metrics_options(args)
    return WorkerOptions(
        redis_url=_redis_url(args),
        job=args.job,
        name=args.name,
        out=args.out,
        concurrency=args.concurrency,
        max_bandwidth=args.max_bandwidth,
        heartbeat_ttl=args.heartbeat_ttl,
        store=args.store or os.environ.get("GOSSAMER_STORE") or None,
        proxies=tuple(args.proxies or _split(os.environ.get("GOSSAMER_PROXIES", ""))),
        proxies_file=args.proxies_file,
        job_timeout=args.job_timeout,
        redis_timeout=args.redis_timeout,
        replica_wait=args.replica_wait,
        metrics_port=port,
        metrics_bind=bind,
        metrics_hosts=hosts,
    )


def _metrics(args: argparse.Namespace) -> int:
    from gossamer.cluster.jobs import open_control
    from gossamer.cluster.metrics import serve_job
    from gossamer.cluster.resilient import run

    port, bind, hosts = _metrics_options(args)
    if port is None:
        raise SettingsError("invalid setting 'metrics_port': give --metrics-port")
    redis_url = _redis_url(args)

    async def serve() -> None:
        control = await open_control(redis_url, args.job)
        try:
            await serve_job(control, bind, port, hosts)
        finally:
            await control.redis.aclose()

    with contextlib.suppress(KeyboardInterrupt):
        run(serve())
    return 0


def _split(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def _status(args: argparse.Namespace) -> int:
    from gossamer.cluster.jobs import format_status, status
    from gossamer.cluster.resilient import run

    state = run(status(_redis_url(args), args.job))
    if args.json:
        print(json.dumps(state, indent=2, sort_keys=True))
        return 0
    print(format_status(state))
    return 0


def _set_state(args: argparse.Namespace) -> int:
    from gossamer.cluster.jobs import set_state
    from gossamer.cluster.resilient import run

    run(set_state(_redis_url(args), args.job, args.state))
    print(f"job {args.job!r}: {args.state}")
    return 0


def _wait(args: argparse.Namespace) -> int:
    from gossamer.cluster.jobs import wait
    from gossamer.cluster.resilient import run

    if run(wait(_redis_url(args), args.job, args.timeout)):
        return 0
    print(f"gossamer: job {args.job!r} not finished after {args.timeout:g}s", file=sys.stderr)
    return 1


def _up(args: argparse.Namespace) -> int:
    from gossamer.cluster.local import up

    settings = settings_from_args(args, JobSettings, skip=("job", "workers"))
    log_flags = ["--log-level", args.log_level, *(["--log-json"] if args.log_json else [])]
    return up(settings, args.workers, args.job, log_flags)
