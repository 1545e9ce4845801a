"""Admission: the one gate every URL passes on its way into a frontier.

Each candidate is canonicalized once, scoped (its origin, cached per host key, then the trap
guards: URL length, depth, repeated segments) and fingerprinted. Both backends admit through
here; what they do with the admitted URLs (the seen check, queueing) is theirs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from gossamer.frontier.base import Candidate
from gossamer.urls import InvalidURL, OriginCache, Scope, canonicalize, fingerprint, host_key

Admitted = tuple[str, str, int, Candidate]
"""A candidate in scope: (canonical URL, host key, fingerprint, the candidate). A plain tuple:
millions pass here."""


class Admission:
    """Canonicalize, scope and fingerprint candidates; counts what it turns away."""

    def __init__(self, scope: Scope) -> None:
        self._scope = scope
        self._origins = OriginCache(scope)
        self._rejected: dict[str, int] = {}

    def admit(self, candidates: Iterable[Candidate]) -> tuple[list[Admitted], dict[str, int]]:
        """The candidates in scope, in order, and how many were turned away for each reason
        (``invalid-url``, ``offsite``, ``depth`` ..., ``bad-priority`` for a priority that is
        not a finite number)."""
        rejected: dict[str, int] = {}
        admitted: list[Admitted] = []
        origins, scope = self._origins, self._scope
        for cand in candidates:
            try:
                url = canonicalize(cand.url)
            except InvalidURL:
                rejected["invalid-url"] = rejected.get("invalid-url", 0) + 1
                continue
            key = host_key(url)
            reason = origins.reason(key) or scope.trap_reason(url, cand.depth)
            if cand.priority and not -math.inf < cand.priority < math.inf:
                reason = "bad-priority"  # a NaN or an infinity would upset every ranking
            if reason is not None:
                rejected[reason] = rejected.get(reason, 0) + 1
                continue
            admitted.append((url, key, fingerprint(url), cand))
        for reason, count in rejected.items():
            self._rejected[reason] = self._rejected.get(reason, 0) + count
        return admitted, rejected

    @property
    def rejected(self) -> dict[str, int]:
        """Candidates turned away so far, by reason (a copy)."""
        return dict(self._rejected)

    @property
    def origins_cached(self) -> int:
        """Host keys whose scope verdict is cached (bounded)."""
        return len(self._origins)


def locate(priorities: Mapping[str, float]) -> dict[str, dict[int, float]]:
    """URLs as candidates spelled them with their priorities, canonicalized as :meth:`admit`
    does: by host key, then fingerprint (invalid URLs and non-finite priorities left out)."""
    out: dict[str, dict[int, float]] = {}
    for raw, priority in priorities.items():
        if not isinstance(priority, (int, float)) or not math.isfinite(priority):
            continue
        try:
            url = canonicalize(raw)
        except InvalidURL:
            continue
        out.setdefault(host_key(url), {})[fingerprint(url)] = float(priority)
    return out
