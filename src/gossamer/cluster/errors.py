"""The runtime failure of a cluster command."""

from __future__ import annotations


class ClusterError(RuntimeError):
    """Redis unreachable, no job, a timeout: printed as one line, exit status 1."""
