"""A ``login_hook`` for a site whose login is more than one form POST: fetch the login page
for its CSRF token, then post the form with it. Use it from an ``[[auth]]`` table::

    [[auth]]
    domain = "wiki.example.org"
    type = "form"
    login_url = "https://wiki.example.org/login"
    login_hook = "examples/login_hook.py:login"
    username_env = "WIKI_USER"
    password_env = "WIKI_PASS"
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from gossamer.fetch.auth import LoginContext

_CSRF = re.compile(rb'name="csrf" value="([^"]{1,200})"')


async def login(context: LoginContext) -> Mapping[str, str] | None:
    """Log in; return the session cookies (None: the login failed)."""
    if context.login_url is None or context.username is None or context.password is None:
        return None
    session = context.session
    async with session.get(context.login_url, allow_redirects=False) as page:
        found = _CSRF.search(await page.content.read(1 << 20))
        first = {c.key: c.value for c in page.cookies.values()}
    if found is None:
        return None
    form = {
        "csrf": found.group(1).decode(),
        "user": context.username.reveal(),
        "pass": context.password.reveal(),
    }
    cookie = "; ".join(f"{k}={v}" for k, v in first.items())
    headers = {"Cookie": cookie} if cookie else {}
    async with session.post(
        context.login_url, data=form, headers=headers, allow_redirects=False
    ) as answer:
        if answer.status >= 400:
            return None
        return first | {c.key: c.value for c in answer.cookies.values()}
