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


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("https://ghp_T0KEN@host.test/o/r.git", "https://***@host.test/o/r.git"),
        (
            "fetching https://T0KEN@host.test:8443 failed",
            "fetching https://***@host.test:8443 failed",
        ),
        ("http://T0KEN@host.test/p@q?m=a@b.test", "http://***@host.test/p@q?m=a@b.test"),
        ("http://T0KEN@host.test?m=a@b.test", "http://***@host.test?m=a@b.test"),
        ("http://a@T0KEN@host.test/", "http://***@host.test/"),  # the last @ ends user info
        ("http://T0KEN@host.test:8080/@me", "http://***@host.test:8080/@me"),  # a port's colon
        ("http://T0KEN@host.test/a:b@c", "http://***@host.test/a:b@c"),  # a path's colon
        ("http://a@b:pw@host.test/", "http://***@host.test/"),  # an unescaped @ in the user
        ("https://T0KEN:@host.test/", "https://***@host.test/"),  # an empty password
        ("redis://:@host.test/0", "redis://***@host.test/0"),
        ("https://host.test/@name/post", "https://host.test/@name/post"),  # a path's @
        ("https://host.test/?to=a@b.test", "https://host.test/?to=a@b.test"),
        ("http://@host.test/", "http://@host.test/"),  # no user info
        ("postgres://me@db.test/x?password=pw", f"postgres://me@db.test/x?password={MASK}"),
    ],
)
def test_a_user_name_alone_is_masked_as_a_password(text: str, shown: str) -> None:
    """It may be a token (``https://TOKEN@host/``): masked whole, unless the URL's password is
    a parameter; an ``@`` past the authority is left alone."""
    assert redact_text(text) == shown == _both_searches(text)


def test_a_password_is_only_in_user_info_or_a_parameter() -> None:
    assert not redact.has_password("https://T0KEN@host.test/")
    assert redact.has_password("https://me:pw@host.test/")
    assert redact.has_password("postgres://me@db.test/x?password=pw")


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://T0KEN@host.test/p@q", "https://***@host.test/p@q"),
        ("https://me:pw@host.test:8080/x@y", f"https://me:{MASK}@host.test:8080/x@y"),
        ("https://host.test:8080/@name", "https://host.test:8080/@name"),
        ("https://host.test/", "https://host.test/"),
    ],
)
def test_the_user_info_of_a_url_is_masked_in_its_authority_only(url: str, shown: str) -> None:
    assert redact.redact_authority(url) == shown
