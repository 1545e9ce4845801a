"""The Python API: a crawl or a cluster worker run from Python, with typed settings, its
records as they are written and page handlers by URL pattern. Its public names are exported
from :mod:`gossamer` (see there); import them from there, not from here.

* ``crawl``: :class:`Crawl` and the blocking :func:`run`; the ``gossamer crawl`` command
  runs its crawl through :class:`Crawl`;
* ``worker``: :class:`Worker`, a cluster worker (told with a ``gossamer.WorkerOptions`` all
  ``gossamer cluster worker`` is told), :func:`submit`, a cluster job, and :func:`job_status`,
  its state; the ``gossamer cluster worker`` command runs its worker through :class:`Worker`;
* ``running``: what both share (a task, streams, handlers, stopping);
* ``records``: :class:`RecordStream`, fed by a record sink after the crawl's own.

This package may import ``gossamer.crawl`` (the one wiring place: a crawl is run only
through :func:`gossamer.crawl.run.run_crawl`, a worker through
:func:`gossamer.cluster.worker.run_worker`), ``gossamer.cluster``, ``gossamer.engine``,
``gossamer.page`` (the handlers), ``gossamer.hooks`` and the settings, sinks' and stats'
values; never ``gossamer.cli`` or ``gossamer.ui``.
"""

from typing import TYPE_CHECKING, Any

from gossamer.api.crawl import Crawl, run
from gossamer.api.records import RecordStream

if TYPE_CHECKING:
    from gossamer.api.worker import Worker, job_status, submit

__all__ = ["Crawl", "RecordStream", "Worker", "job_status", "run", "submit"]

_WORKER_NAMES = frozenset({"Worker", "job_status", "submit"})
"""Loaded on first use: a crawl on one machine never needs the cluster's side."""


def __getattr__(name: str) -> Any:
    """``Worker``, ``job_status`` and ``submit``, imported from ``worker`` on first use."""
    if name not in _WORKER_NAMES:
        raise AttributeError(f"module 'gossamer.api' has no attribute {name!r}")
    from gossamer.api import worker

    value = getattr(worker, name)
    globals()[name] = value
    return value
