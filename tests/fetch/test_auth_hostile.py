"""A form login's ``logged_out_selector`` is matched on the page's guarded parse: a hostile page
(nesting 100,000 deep, a tag of many attributes, unclosed formatting elements) costs a fraction
of a second and less than a gigabyte, and the page's form is still found (a form nested past
the guard's depth would not be: its tag is dropped, as for every page the crawl parses)."""

from __future__ import annotations

import subprocess
import sys

import pytest

IN_A_GIGABYTE = """
import asyncio, resource, sys, time
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
from gossamer.fetch.auth import Authenticator, Login, Secret

tried = []

async def hook(context):
    tried.append(context.domain)
    return None  # a failed login: counted, nothing sent

login = Login(
    domain="intranet.test", kind="form", username=Secret("u"), password=Secret("p"),
    login_url="http://intranet.test/login", logged_out_selector="form#login",
    user_login=hook, scheme="http", port=80,
)
auth = Authenticator([login])
body = sys.stdin.buffer.read()
started = time.process_time()
again = asyncio.run(
    auth.check("http://intranet.test/page", {}, 200, {}, body, lambda: None)
)
print(again, len(tried), time.process_time() - started)
"""

FORM = b'<form id="login"><input name="user"></form>'


@pytest.mark.parametrize(
    "body",
    [
        b"<div>" * 100_000,  # 500 KB: 28 s unguarded (the p-in-button-scope scan)
        b"<p " + b" ".join(b"a%d=1" % n for n in range(60_000)) + b">",  # 530 KB: 7.6 s
        b"".join(b"<p><b c=%d>x" % n for n in range(4096)),  # 56 KB: past 1 GiB unguarded
        b"".join(b"<p><b c=%d>x" % n for n in range(45_000)),  # 650 KB: read off the loop
    ],
    ids=["nesting", "attributes", "formatting", "formatting-large"],
)
@pytest.mark.parametrize("form", [True, False], ids=["logged-out", "logged-in"])
def test_a_hostile_page_is_checked_for_the_logged_out_selector_guarded(
    body: bytes, form: bool
) -> None:
    page = FORM + body if form else body
    done = subprocess.run(
        [sys.executable, "-c", IN_A_GIGABYTE], input=page, capture_output=True, timeout=60
    )
    assert done.returncode == 0, done.stderr.decode()[-500:]
    again, tried, seconds = done.stdout.split()
    assert again == b"False"  # the login hook fails
    assert tried == (b"1" if form else b"0")  # the selector matched the page's form
    assert float(seconds) < 2.0
