"""Which hosts have a politeness slot nothing waits for: the work-conserving revisits of a
continuous crawl (``--revisit-spare``, :meth:`gossamer.frontier.revisits.Revisits.spare_for`)
fill those, so a host's pace is never faster than it already was allowed to be."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from gossamer.frontier.hostqueue import Host
from gossamer.frontier.politeness import PolitenessPolicy


def idle_hosts(
    hosts: Mapping[str, Host[Any]], policy: PolitenessPolicy, now: float, share: float, most: int
) -> list[str]:
    """Up to ``most`` hosts whose slot is free at ``now`` with nothing of theirs queued,
    leased, claimed or out for robots.txt. ``share`` of 1: as soon as their pace allows; less:
    only once the slot has stayed free ``1 / share - 1`` more delays, so spare requests take
    at most that share of the pace. One pass over ``hosts``."""
    wait = 1.0 / share - 1.0 if share > 0 else math.inf
    out: list[str] = []
    for key, host in hosts.items():
        if host.waiting or host.leased or host.claims or host.robots_out:
            continue
        free = max(policy.ready_at(host.slot), host.slot.paused_until, host.not_before)
        if free + wait * policy.delay_of(host.slot) <= now:
            out.append(key)
            if len(out) >= most:
                break
    return out


__all__ = ["idle_hosts"]
