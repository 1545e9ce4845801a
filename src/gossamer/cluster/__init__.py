"""Cluster mode: many workers crawl one job together through Redis: the worker's wiring
(``worker``), its housekeeping tasks (``keeper``) and the objects they run: this worker in
the registry (``membership``), the leader lease and the leader's work (``leadership``), this
worker's share of the partitions (``assignment``); the control plane's keys (``control``), the
leader's balancer (``balancer``), jobs seen from outside (``jobs``: submit, status, wait),
riding out Redis outages (``resilient``), bounded Redis replies (``bounded``), the local demo
(``local``), a job's Prometheus view (``metrics``) and the ``gossamer cluster`` commands (``cli``).

This package stands on the single-process crawl: it may import ``gossamer.crawl``,
``gossamer.engine``, every stage package, ``gossamer.balance`` and the helpers, never
``gossamer.cli`` (which imports it).
"""

DEFAULT_JOB = "gossamer"
"""The job name when ``--job`` is not given."""
DEFAULT_BUDGET = 180.0
"""Seconds a worker waits for an unreachable Redis before it gives up (a restart or a
failover takes seconds; minutes cover a Redis pod rescheduled on another node)."""
EXIT_REDIS_OUTAGE = 75
"""The exit status of a worker that gave up on Redis (EX_TEMPFAIL: start it again later)."""
