"""The retry rules of a 2xx whose body broke off: cut by its connection, it is tried again
and counts against its host; cut by our own caps or a timeout, it is stored at once."""

from __future__ import annotations

import random
import re

import pytest

from gossamer.fetch import reasons
from gossamer.fetch.exchange import cut_by
from gossamer.outcomes import DISCONNECTS, Action, Decision, RetryPolicy, classify, is_failure

OURS = (None, "decompression-bomb", "read-timeout", "timeout", "protocol-error", "decode-error")
"""Errors of a 2xx whose body is stored at once: complete, cut by a cap or a timeout, or
broken by the server's own bytes (the same at every try)."""


@pytest.mark.parametrize("error", sorted(DISCONNECTS))
def test_a_2xx_cut_by_its_connection_is_retried_then_stored(error: str) -> None:
    assert classify(200, error, None) is Action.RETRY
    assert is_failure(206, error)  # slows its host, as a reset before the head does
    policy, rng = RetryPolicy(max_retries=2), random.Random(0)
    assert policy.decide(Action.RETRY, 1, None, rng, error, 200).action is Action.RETRY
    assert policy.decide(Action.RETRY, 2, None, rng, error, 200) == Decision(Action.STORE)
    # a Retry-After too long to wait for keeps the partial copy too
    assert policy.decide(Action.RETRY, 0, 9e9, rng, error, 200) == Decision(Action.STORE)


@pytest.mark.parametrize("error", OURS)
def test_a_2xx_cut_otherwise_is_stored_at_once(error: str | None) -> None:
    assert classify(200, error, None) is Action.STORE
    assert not is_failure(200, error)


def test_a_cut_body_of_another_status_keeps_that_status_rules() -> None:
    policy, rng = RetryPolicy(max_retries=1), random.Random(0)
    assert classify(503, "incomplete-body", None) is Action.RETRY
    spent = policy.decide(Action.RETRY, 1, None, rng, "incomplete-body", 503)
    assert spent == Decision(Action.DROP, error="incomplete-body")
    assert classify(404, "incomplete-body", None) is Action.DROP
    assert classify(301, "incomplete-body", "/next") is Action.REDIRECT
    assert classify(None, "incomplete-body", None) is Action.RETRY
    assert policy.decide(Action.RETRY, 1, None, rng, "connection-reset") == Decision(
        Action.DROP, error="connection-reset"
    )


def test_the_disconnects_are_the_reasons_archived_as_a_disconnect() -> None:
    named = re.findall(r"^- ``([a-z0-9-]+)``", reasons.__doc__ or "", re.MULTILINE)
    assert len(named) > 20 and set(DISCONNECTS) <= set(named)
    assert {why for why in named if cut_by(why, True) == "disconnect"} == DISCONNECTS
