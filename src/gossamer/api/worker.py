"""A cluster worker run from Python: :class:`Worker` joins a job at a Redis URL and crawls its
share with the page handlers registered here; :func:`submit` stores a job and queues its
seeds (``gossamer cluster submit``); :func:`job_status` reads a job's state (``gossamer cluster
status --json``)."""

from __future__ import annotations

import math
import re
from collections.abc import Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gossamer.api.crawl import checked
from gossamer.api.running import Running
from gossamer.cluster import DEFAULT_JOB
from gossamer.crawl.additions import Additions
from gossamer.page.handlers import Handlers
from gossamer.settings import JobSettings, SettingsError
from gossamer.stats import CrawlStats

if TYPE_CHECKING:
    from gossamer.cluster.jobs import Submitted
    from gossamer.cluster.worker import WorkerOptions


class Worker(Running):
    """A worker of the cluster job ``job`` at ``redis_url``, run in the caller's event loop:
    it waits for the job (``job_timeout`` seconds), crawls its share of the job's hosts into
    ``out`` until the job is finished or it is stopped, and gives its records as they are
    written (:meth:`records`), as a crawl does. Every worker of a job should register the
    same handlers: a page is handled by the worker that owns its host.

    ``name`` (default host-pid) must be unique in the job; ``out`` and ``concurrency``
    replace the job's for this worker; ``signals``: SIGINT and SIGTERM stop it (only in the
    main thread). :meth:`stop` before the job came ends the wait, and :meth:`wait` raises
    ``RuntimeError`` then. The rest of what ``gossamer cluster worker`` is told (this
    worker's page store and proxies with their passwords, its metrics port, its bandwidth...)
    is given as a :class:`gossamer.WorkerOptions`, through :meth:`from_options`.
    """

    def __init__(
        self,
        redis_url: str,
        *,
        job: str = DEFAULT_JOB,
        name: str | None = None,
        out: Path | str | None = None,
        concurrency: int | None = None,
        job_timeout: float = 600.0,
        handlers: Handlers | None = None,
        signals: bool = False,
    ) -> None:
        super().__init__(handlers, signals)
        from gossamer.cluster.worker import WorkerOptions

        self.options = WorkerOptions(
            redis_url=redis_url,
            job=job,
            name=name,
            out=None if out is None else Path(out),
            concurrency=concurrency,
            job_timeout=job_timeout,
        )
        """The worker's options (what ``gossamer cluster worker`` is told)."""
        check_options(self.options)

    @classmethod
    def from_options(
        cls, options: WorkerOptions, *, handlers: Handlers | None = None, signals: bool = False
    ) -> Worker:
        """A worker told everything ``gossamer cluster worker`` can be told (the command
        runs its worker so)::

            Worker.from_options(WorkerOptions(redis_url, store=dsn, metrics_port=9101))
        """
        check_options(options)
        worker = cls(options.redis_url, handlers=handlers, signals=signals)
        worker.options = options
        return worker

    def stop(self) -> None:
        """Stop the worker gracefully, as SIGTERM does (its leased URLs go back to the job);
        before its job came, stop waiting for it."""
        super().stop()
        if self._crawler is None and self._task is not None:
            self._task.cancel()

    async def wait(self) -> CrawlStats:
        """Wait for the worker to end; its figures (what its stats.json holds)."""
        if self._task is not None and self._task.done() and self._task.cancelled():
            raise RuntimeError("the worker was stopped before its job came")
        try:
            return await super().wait()
        except BaseException:
            if self._task is not None and self._task.cancelled() and self._stop_asked:
                raise RuntimeError("the worker was stopped before its job came") from None
            raise

    def _main(self, additions: Additions) -> Coroutine[Any, Any, CrawlStats]:
        from gossamer.cluster.worker import run_worker

        return run_worker(self.options, additions)


_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}")
"""A worker name: it is part of file names (its log, its status file) and Redis keys."""


def check_options(options: WorkerOptions) -> None:
    """Raise :class:`gossamer.SettingsError` naming the first option a worker cannot run
    with, as :class:`gossamer.Crawl` does for its settings."""
    if options.name is not None and not _NAME.fullmatch(options.name):
        _invalid("name", "give 1 to 100 of A-Z a-z 0-9 . _ - (not starting with a dot)")
    if options.concurrency is not None and not 1 <= options.concurrency <= 100_000:
        _invalid("concurrency", "give a number from 1 to 100000")
    if not (math.isfinite(options.job_timeout) and options.job_timeout > 0):
        _invalid("job_timeout", "give a positive number of seconds")
    if not options.job:
        _invalid("job", "give a job name")


def _invalid(field: str, problem: str) -> None:
    raise SettingsError(f"invalid worker option '{field}': {problem}")


async def submit(redis_url: str, settings: JobSettings, job: str = DEFAULT_JOB) -> Submitted:
    """Store the job's settings at ``redis_url`` and queue its seeds, as ``gossamer cluster
    submit`` does; what it queued. ``settings`` are checked as the command line's are."""
    from gossamer.cluster.jobs import submit as submit_job

    return await submit_job(checked(JobSettings, settings), redis_url, job)


async def job_status(redis_url: str, job: str = DEFAULT_JOB) -> dict[str, Any]:
    """The job's state at ``redis_url``, as ``gossamer cluster status --json`` prints it: its
    ``workers`` (each with ``name`` and ``alive``), ``done``, ``totals``..."""
    from gossamer.cluster.jobs import status

    return await status(redis_url, job)
