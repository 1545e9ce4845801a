"""What :class:`~gossamer.frontier.hosts.HostScheduler` hands out.

:meth:`~gossamer.frontier.hosts.HostScheduler.lease` hands out a :class:`Batch` of leases in
one step. The Redis frontier by URL asks its shared limiter between two:
:meth:`~gossamer.frontier.hosts.HostScheduler.due` names the due hosts and how many slots each
could use (a :class:`Round` of :class:`Want`\\ s),
:meth:`~gossamer.frontier.hosts.HostScheduler.take` leases what the limiter granted, and
:meth:`~gossamer.frontier.hosts.HostScheduler.defer` holds back a host it refused.
"""

from __future__ import annotations

from typing import Generic

import msgspec

from gossamer.frontier.base import Lease, Rules
from gossamer.frontier.hostqueue import E, Host

__all__ = ["Batch", "Round", "Want"]


class Batch(msgspec.Struct):
    """What :meth:`HostScheduler.lease` handed out."""

    leases: list[Lease]
    dry: list[str]
    """Due hosts whose queued URLs are all in storage: refill them."""


class Want(msgspec.Struct, Generic[E]):
    """A due host and how many slots it could use now (:meth:`HostScheduler.due`)."""

    key: str
    host: Host[E]
    count: int
    rules: Rules | None
    """The rules its URLs go out by; None when the slot is for its ``robots`` lease."""


class Round(msgspec.Struct, Generic[E]):
    """What :meth:`HostScheduler.due` found."""

    leases: list[Lease]
    """Leases that need no slot (``blocked``, ``unreachable``), handed out already."""
    wants: list[Want[E]]
    dry: list[str]
