"""Cluster mode: many workers crawl one job together through Redis."""

DEFAULT_JOB = "gossamer"
"""The job name when ``--job`` is not given."""
