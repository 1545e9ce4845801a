"""Cluster mode: many workers crawl one job together through Redis: the worker and its duties
(``worker``), the control plane (``control``: membership, leader lease, assignment), the
leader's balancer (``balancer``), jobs seen from outside (``jobs``: submit, status, wait),
riding out Redis outages (``resilient``), bounded Redis replies (``bounded``), the local demo
(``local``) and the ``gossamer cluster`` commands (``cli``).

This package stands on the single-process crawl: it may import ``gossamer.crawl``,
``gossamer.engine``, every stage package, ``gossamer.balance`` and the helpers, never
``gossamer.cli`` (which imports it).
"""

DEFAULT_JOB = "gossamer"
"""The job name when ``--job`` is not given."""
