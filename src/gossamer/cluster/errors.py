"""The runtime failure of a cluster command."""

from __future__ import annotations

from gossamer.errors import CommandError


class ClusterError(CommandError):
    """Redis unreachable, no job, a timeout: printed as one line, exit status 1."""
