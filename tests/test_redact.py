"""Credentials masked in every output: the searches are skipped only where they find nothing."""

from __future__ import annotations

import pytest

from gossamer import redact
from gossamer.redact import MASK, redact_text, redact_url


def _both_searches(text: str) -> str:
    """What the two patterns make of ``text`` when both are always tried."""
    text = redact._USERINFO.sub(redact._mask_userinfo, text)
    return redact._PARAM.sub(lambda m: f"{m['lead']}{m['key']}={MASK}", text)


@pytest.mark.parametrize(
    "text",
    [
        "http://127.0.0.2:19300/library/asyncio-eventloop.html",
        "http://user:secret@host.test/a?b=c",
        "redis://:secret@redis.test:6379/0",
        "http://host.test/p@th?x=1",
        "host=db user=me password=secret dbname=x",
        "postgres://db.test/x?sslpassword='a b'&user=me",
        "http://host.test/?PASSWORD=secret",
        "http://host.test/?PaSsWoRd=secret",
        "http://host.test/?pa\u017fsword=secret",  # a long s: the case-blind search's "s"
        "http://host.test/?pa\u00dfword=secret",  # a sharp s: "ss" when case-folded, no "s"
        "connecting to http://u:p@a.test failed: password=x rejected",
        "",
    ],
)
def test_a_text_is_masked_as_both_searches_mask_it(text: str) -> None:
    assert redact_text(text) == _both_searches(text)


def test_a_password_of_any_case_is_masked() -> None:
    assert redact_url("http://host.test/?PaSsWoRd=secret") == f"http://host.test/?PaSsWoRd={MASK}"
    assert (
        redact_url("http://host.test/?pa\u017fsword=x") == f"http://host.test/?pa\u017fsword={MASK}"
    )
    assert redact_url("http://me:pw@host.test/") == f"http://me:{MASK}@host.test/"
