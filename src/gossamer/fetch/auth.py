"""Logins per domain: what a request carries (basic, bearer, cookies, an OAuth 2.0 token) and
what to do when a response shows the session has ended.

An `Authenticator` holds one `Login` per domain; a login applies to requests whose URL host
is its domain or a subdomain of it, over its own scheme and port, and to no other (another
port or scheme of a login domain gets no credential and no cookie, and keeps none it sets):
the `Fetcher` asks `Authenticator.prepare`
for the headers of every request by the request's own URL (redirects are new requests, so a
redirect to another domain carries nothing), then hands the response to
`Authenticator.check`, which keeps the cookies it sets and says whether the page should be
fetched again after a fresh login.

- ``basic``/``bearer``: an ``Authorization`` header.
- ``cookies``: the cookies of a Netscape ``cookies.txt`` file (those within the domain).
- ``form``: a POST of the login form (or a `UserLogin` hook) when the domain is first met
  and again when a page looks logged out (a status of ``logged_out_status``, a redirect to
  the login URL, or ``logged_out_selector`` matching the page, parsed guarded as the crawl
  parses pages, off the event loop from 512 KiB); the page is then fetched once more.
- ``oauth2``: the client-credentials grant; the token is cached in a file (mode 0600) until
  ``refresh_margin`` seconds before it expires (or half its life, if shorter), shared by
  every request of the process (and by later processes through the file); a 401 renews it
  and fetches the page again.

Cookies live in one `CookieJar` (`gossamer.fetch.cookies`); ``cookies`` says whose: every
site's of ``in_scope`` (``on``), only the login domains' (``login-only``), none (``off``). A
login domain's cookies never cover another host, and no other site's cookie covers a login
domain. The jar's ``on_update`` callback is how the crawl keeps them (in crawl.db, for
``--resume``). The `Fetcher` hands `prepare` and `check` what makes the session logins go
out with, on first use (through the request's proxy when there is a pool). Secrets are
`Secret` values, shown as ``***``; no log line, error or stats snapshot holds one.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
import json
import logging
import re
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol
from urllib.parse import urlsplit

import msgspec

from gossamer.fetch.cookies import (
    MAX_LOGIN_HEADER_BYTES,
    CookieJar,
    domain_match,
    read_cookies_txt,
)
from gossamer.fetch.gated import HostPace
from gossamer.fetch.login import Login, LoginContext, Secret, UserLogin
from gossamer.fetch.tokencache import cache_path, forget_cache, read_cache, write_cache
from gossamer.parse.guard import parse
from gossamer.redact import redact_url
from gossamer.urls import Resolver

if TYPE_CHECKING:
    import aiohttp

SessionFactory = Callable[[], "aiohttp.ClientSession"]
"""Gives the aiohttp session logins go out with (made, and aiohttp imported, on first use)."""

__all__ = [
    "AuthHeaders",
    "AuthStats",
    "Authenticator",
    "CookieJar",
    "Login",
    "LoginContext",
    "RequestAuth",
    "Secret",
    "UserLogin",
    "cache_path",
    "read_cookies_txt",
]

log = logging.getLogger(__name__)
_B64TOKEN = re.compile(r"[A-Za-z0-9._~+/-]{1,4096}=*")
"""An OAuth access token as a header may carry it (RFC 6750 2.1)."""
_COOKIE_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}")
_COOKIE_VALUE = re.compile(r"[\x21\x23-\x2b\x2d-\x3a\x3c-\x5b\x5d-\x7e]{0,4096}")
"""RFC 6265 4.1.1 cookie-octets: what a hook's cookie may hold."""
Clock = Callable[[], float]
MAX_LOGIN_BODY = 1 << 20
"""The most of a login or token response read."""
COOKIE_MODES = ("on", "login-only", "off")
"""``--cookies``: every site's cookies kept and sent back, only the [[auth]] domains', none."""
_READ_IN_THREAD = 512 * 1024
"""A page this long or longer is matched against ``logged_out_selector`` off the event loop
(the guarded parse takes about 1 s per MB at worst)."""
RELOGIN_INTERVAL = 5.0
"""Seconds after a login (or token request) before the next: a page refused with a fresh
session is refused for good, and a failing login is not tried by every waiting page."""


class AuthStats(msgspec.Struct, frozen=True):
    """A snapshot of an `Authenticator`'s counters (no secret, no cookie value)."""

    domains: int
    logins: int
    relogins: int
    token_refreshes: int
    failures: int
    cookies: int


class RequestAuth(Protocol):
    """What the `Fetcher` asks of the authentication middleware."""

    sent: int
    """Login and token requests sent so far (a page's request after one waits for its
    host's pace)."""

    def set_gate(self, gate: HostPace) -> None:
        """Send login and token requests through the host gate."""

    @property
    def logs_in(self) -> bool:
        """Whether it sends requests of its own (logins, token requests, login hooks)."""

    async def prepare(
        self, url: str, session: SessionFactory, *, host: str | None = None
    ) -> Mapping[str, str]:
        """The headers ``url``'s request carries (none for a domain without a login);
        ``host`` is ``url``'s host name when the caller has it (`login_for`)."""

    async def check(
        self,
        url: str,
        sent: Mapping[str, str],
        status: int | None,
        headers: Mapping[str, str],
        body: bytes,
        session: SessionFactory,
        *,
        retried: bool = False,
        host: str | None = None,
    ) -> bool:
        """Keep the response's cookies; True when the page should be fetched again (it
        looked logged out and a new login succeeded, or one happened since it was sent).
        ``sent`` is what `prepare` returned for the request; ``retried``: the request was
        that second fetch already; ``host`` as for `prepare`."""


class AuthHeaders(dict[str, str]):
    """The headers `Authenticator.prepare` gives a request, and the generation of its
    domain's session they belong to (so `Authenticator.check` knows whether a login came
    since)."""

    generation: int = 0


class _Session:
    """One domain's state: its lock, how many logins (tokens) it has had, the last one's
    time (wall clock), its OAuth token and when that is renewed."""

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.generation = 0
        self.renewed_at = -float("inf")
        self.token: str | None = None
        self.renew_at = 0.0


class Authenticator:
    """Attaches each domain's login to its requests and logs in again when a session ends
    (see the module doc). ``clock`` is wall-clock time (token expiry, cookie expiry)."""

    def __init__(
        self,
        logins: Sequence[Login],
        jar: CookieJar | None = None,
        *,
        clock: Clock = time.time,
        cookies: str = "login-only",
        in_scope: Callable[[str], bool] | None = None,
    ) -> None:
        if cookies not in COOKIE_MODES:
            raise ValueError(f"cookies must be one of {', '.join(COOKIE_MODES)}")
        self._logins = sorted(logins, key=lambda login: -len(login.domain))
        self._jar = jar if jar is not None else CookieJar(clock=clock)
        self._clock = clock
        self._cookies = cookies
        self._in_scope = in_scope
        self._sessions = {login.domain: _Session() for login in logins}
        self._gate: HostPace | None = None
        self.sent = 0
        self.logins = self.relogins = self.token_refreshes = self.failures = 0
        for login in logins:
            if login.kind == "cookies":
                self._jar.add(login.cookies)

    def set_gate(self, gate: HostPace) -> None:
        """Send logins and token requests through the host gate (the fetcher hands it on)."""
        self._gate = gate

    @contextlib.asynccontextmanager
    async def _paced(self, url: str | None) -> AsyncIterator[None]:
        """A login request to ``url`` (a login hook's, its login URL's host): through the host
        gate, pace only (it runs inside a page's request, whose lease may hold the same host).
        Its start counts as the moment it ended: later than the real one, so never short."""
        self.sent += 1
        gate = self._gate
        if gate is None or url is None:
            yield
            return
        taken = await gate.enter(url, pace_only=True)
        try:
            yield
        finally:
            gate.leave(taken, gate.now())

    @property
    def jar(self) -> CookieJar:
        """The cookies of every login domain."""
        return self._jar

    @property
    def logs_in(self) -> bool:
        """Whether some domain has a login."""
        return bool(self._logins)

    def login_for(self, url: str, host: str | None = None) -> Login | None:
        """The login of ``url``: that of the most specific domain holding its host, when the
        URL has the login's scheme and port; else None. ``host`` is that host's name
        (``urlsplit(url).hostname``) when the caller has it: the fetcher parses it once per
        host, not once per request."""
        holder, host = self._holder(url, host)
        return holder if holder is not None and holder.covers(url, host) else None

    def _holder(self, url: str, host: str | None) -> tuple[Login | None, str]:
        """The login of the most specific domain holding ``url``'s host, whatever the URL's
        scheme and port, and that host's name (lower case)."""
        if not self._logins:
            return None, ""
        if host is None:
            host = urlsplit(url).hostname or ""
        host = host.lower().rstrip(".")
        return next((login for login in self._logins if login.holds(host)), None), host

    def stats(self) -> AuthStats:
        """Return a snapshot of the counters."""
        return AuthStats(
            domains=len(self._logins),
            logins=self.logins,
            relogins=self.relogins,
            token_refreshes=self.token_refreshes,
            failures=self.failures,
            cookies=len(self._jar),
        )

    def stats_counts(self) -> dict[str, int]:
        """`stats` as a mapping (what stats.json shows)."""
        return msgspec.structs.asdict(self.stats())

    async def prepare(
        self, url: str, session: SessionFactory, *, host: str | None = None
    ) -> AuthHeaders:
        """The headers of ``url``'s request: its domain's login, never another's (``host``:
        see `login_for`). Another scheme or port of a login domain gets nothing."""
        login, host = self._holder(url, host)
        if login is None:
            headers = AuthHeaders()
            cookie = self._jar.header(url) if self._cookies == "on" else None
            if cookie is not None:
                headers["Cookie"] = cookie
            return headers
        if not login.covers(url, host):
            return AuthHeaders()
        state = self._sessions[login.domain]
        headers = AuthHeaders()
        if login.kind == "basic" and login.username is not None and login.password is not None:
            headers["Authorization"] = _basic(login.username, login.password)
        elif login.kind == "bearer" and login.token is not None:
            headers["Authorization"] = "Bearer " + login.token.reveal()
        elif login.kind == "oauth2":
            token = await self._token(login, state, session())
            if token is not None:
                headers["Authorization"] = "Bearer " + token
        elif login.kind == "form" and self._needs_first_login(login, state, url):
            await self._login(login, state, session(), 0)
        cookie = self._jar.header(url, MAX_LOGIN_HEADER_BYTES)
        if cookie is not None:
            headers["Cookie"] = cookie
        headers.generation = state.generation
        return headers

    async def check(
        self,
        url: str,
        sent: Mapping[str, str],
        status: int | None,
        headers: Mapping[str, str],
        body: bytes,
        session: SessionFactory,
        *,
        retried: bool = False,
        host: str | None = None,
    ) -> bool:
        """Keep the cookies the response sets; True when it looked logged out and a new login
        (or token) is there, so the page should be fetched again. A page refused again with
        a login younger than `RELOGIN_INTERVAL` is refused for good, not logged out: no new
        login for it. ``host``: see `login_for`. Another scheme or port of a login domain
        sets no cookie (it could replace the session's)."""
        login, host = self._holder(url, host)
        if status is None or (login is not None and not login.covers(url, host)):
            return False
        set_cookie = headers.get("set-cookie")
        if login is None:
            if set_cookie and self._cookies == "on" and self._site_allowed(url):
                allow = functools.partial(self._domain_allowed, url)
                self._jar.add(self._jar.parse(url, set_cookie.split("\n"), allow))
            return False
        if set_cookie and self._cookies != "off":
            self._jar.add(self._jar.parse(url, set_cookie.split("\n"), login))
        if retried:
            return False
        state = self._sessions[login.domain]
        seen = sent.generation if isinstance(sent, AuthHeaders) else state.generation
        if login.kind == "oauth2" and status == 401:
            return await self._renew(login, state, session(), seen)
        if login.kind != "form" or _same_page(url, login.login_url):
            return False
        if not await self._logged_out(login, url, status, headers, body):
            return False
        log.info(
            "logged out of %s at %s",
            login.domain,
            redact_url(url),
            extra={"event": "auth-logged-out", "domain": login.domain},
        )
        return await self._login(login, state, session(), seen)

    def _site_allowed(self, url: str) -> bool:
        """Whether ``url``'s answer may set cookies: a site of the crawl's scope."""
        return self._in_scope is None or self._in_scope(url)

    def _domain_allowed(self, url: str, domain: str) -> bool:
        """Whether a cookie ``url``'s answer sets may cover all of ``domain``: a domain of
        the crawl's scope (asked with ``url``'s scheme and port), none holding a login."""
        logins = self._logins
        if any(login.holds(domain) or domain_match(login.domain, domain) for login in logins):
            return False
        if self._in_scope is None:
            return True
        parts = urlsplit(url)
        netloc = domain if parts.port is None else f"{domain}:{parts.port}"
        return self._in_scope(f"{parts.scheme}://{netloc}/")

    def _needs_first_login(self, login: Login, state: _Session, url: str) -> bool:
        """A form login's domain is logged in to when first met, unless a resumed crawl's
        cookies hold its session already (or the page is the login page)."""
        if state.generation or _same_page(url, login.login_url):
            return False
        return not any(login.holds(row[0]) for row in self._jar.rows())

    async def _logged_out(
        self, login: Login, url: str, status: int, headers: Mapping[str, str], body: bytes
    ) -> bool:
        if status in login.logged_out_status:
            return True
        location = headers.get("location")
        if 300 <= status < 400 and location and _same_page(_target(url, location), login.login_url):
            return True
        selector = login.logged_out_selector
        if not selector or not body:
            return False
        if len(body) < _READ_IN_THREAD:
            return _matches(body, selector)
        return await asyncio.to_thread(_matches, body, selector)

    async def _login(
        self, login: Login, state: _Session, session: aiohttp.ClientSession, seen: int
    ) -> bool:
        """Log in unless another request did since it saw generation ``seen``."""
        async with state.lock:
            if state.generation != seen:
                return True
            if self._clock() - state.renewed_at < RELOGIN_INTERVAL:
                return False  # refused with a fresh login, or a login that fails
            ok = await self._do_login(login, session)
            state.renewed_at = self._clock()
            if not ok:
                self.failures += 1
                return False
            if state.generation:
                self.relogins += 1
            else:
                self.logins += 1
            state.generation += 1
            log.info(
                "logged in to %s",
                login.domain,
                extra={"event": "auth-login", "domain": login.domain},
            )
            return True

    async def _do_login(self, login: Login, session: aiohttp.ClientSession) -> bool:
        async with self._paced(login.login_url):
            return await self._send_login(login, session)

    async def _send_login(self, login: Login, session: aiohttp.ClientSession) -> bool:
        try:
            if login.user_login is not None:
                context = LoginContext(
                    session, login.domain, login.login_url, login.username, login.password
                )
                cookies = await login.user_login(context)
                if cookies is None:
                    return self._failed(login, "the login hook returned None")
                if not all(_cookie_pair(k, v) for k, v in cookies.items()):
                    return self._failed(login, "the login hook returned a bad cookie")
                self._jar.clear(login.domain)
                self._jar.add((login.domain, "/", k, v, False, None) for k, v in cookies.items())
                return True
            return await self._post_form(login, session)
        except Exception as exc:  # the message could hold anything: only its type is logged
            return self._failed(login, type(exc).__name__)

    async def _post_form(self, login: Login, session: aiohttp.ClientSession) -> bool:
        assert login.login_url is not None and login.username is not None
        assert login.password is not None
        data = {
            **login.fields,
            login.username_field: login.username.reveal(),
            login.password_field: login.password.reveal(),
        }
        self._jar.clear(login.domain)  # the ended session's cookies
        async with session.post(login.login_url, data=data, allow_redirects=False) as response:
            await response.content.read(MAX_LOGIN_BODY)
            if response.status >= 400:
                return self._failed(login, f"status {response.status}")
            self._jar.add(
                self._jar.parse(login.login_url, response.headers.getall("Set-Cookie", []), login)
            )
        location = response.headers.get("Location")
        if location and _same_page(_target(login.login_url, location), login.login_url):
            return self._failed(login, "sent back to the login page")
        return True

    def _failed(self, login: Login, why: str) -> bool:
        log.warning(
            "login to %s failed: %s",
            login.domain,
            why,
            extra={"event": "auth-login-failed", "domain": login.domain},
        )
        return False

    async def _token(
        self, login: Login, state: _Session, session: aiohttp.ClientSession
    ) -> str | None:
        if state.token is not None and state.renew_at > self._clock():
            return state.token
        async with state.lock:
            return await self._locked_token(login, state, session)

    async def _renew(
        self, login: Login, state: _Session, session: aiohttp.ClientSession, seen: int
    ) -> bool:
        """After a 401: a new token unless one came since generation ``seen``."""
        async with state.lock:
            if state.generation != seen:
                return state.token is not None
            if self._clock() - state.renewed_at < RELOGIN_INTERVAL:
                return False
            state.token = None
            forget_cache(login)
            return await self._locked_token(login, state, session) is not None

    async def _locked_token(
        self, login: Login, state: _Session, session: aiohttp.ClientSession
    ) -> str | None:
        now = self._clock()
        if state.token is not None and state.renew_at > now:
            return state.token
        cached = read_cache(login)
        if cached is not None and (renew_at := login.renew_at(*cached[1:])) > now:
            state.token, state.renew_at = cached[0], renew_at
            state.generation += 1
            return state.token
        if now - state.renewed_at < RELOGIN_INTERVAL and state.token is None:
            return None  # the last request failed: not one per page
        state.renewed_at = now
        try:
            token, lifetime = await self._fetch_token(login, session)
        except Exception as exc:
            self.failures += 1
            state.token = None
            self._failed(login, f"token request: {type(exc).__name__}")
            return None
        expires_at = self._clock() + lifetime
        state.token, state.renew_at = token, login.renew_at(expires_at, lifetime)
        state.generation += 1
        self.token_refreshes += 1
        write_cache(login, token, expires_at, lifetime)
        log.info(
            "new OAuth token for %s",
            login.domain,
            extra={"event": "auth-token", "domain": login.domain},
        )
        return token

    async def _fetch_token(self, login: Login, session: aiohttp.ClientSession) -> tuple[str, float]:
        assert login.token_url is not None
        assert login.client_id is not None and login.client_secret is not None
        data = {"grant_type": "client_credentials"}
        if login.scope:
            data["scope"] = login.scope
        headers = {"Authorization": _basic(login.client_id, login.client_secret)}
        async with (
            self._paced(login.token_url),
            session.post(
                login.token_url, data=data, headers=headers, allow_redirects=False
            ) as response,
        ):
            body = await response.content.read(MAX_LOGIN_BODY)
            if response.status != 200:
                raise _TokenError(f"status {response.status}")
        reply = json.loads(body)
        token = reply.get("access_token") if isinstance(reply, dict) else None
        if not isinstance(token, str) or not _B64TOKEN.fullmatch(token):
            raise _TokenError("no access_token, or one that is not a b64token")
        lifetime = reply.get("expires_in", 3600)
        if not isinstance(lifetime, int | float) or lifetime <= 0:
            lifetime = 3600
        return token, float(lifetime)


class _TokenError(Exception):
    pass


def _matches(body: bytes, selector: str) -> bool:
    """Whether ``selector`` matches an element of the page ``body``, parsed as the crawl parses
    a page: guarded (:func:`gossamer.parse.guard.parse`). Unguarded, 4,096 ``<p><b c=N>x``
    (56 KB) made lexbor run out of a gigabyte, 100,000 ``<div>`` took it 28 s of CPU, a tag
    of 60,000 attributes 7.6 s; guarded 0.15 to 0.25 s (tests/fetch/test_auth_hostile.py)."""
    try:
        tree = parse(body).tree
        return tree is not None and tree.css_first(selector) is not None
    except Exception:  # a selector lexbor refuses must not break the crawl
        return False


def _cookie_pair(name: object, value: object) -> bool:
    return (
        isinstance(name, str)
        and isinstance(value, str)
        and _COOKIE_NAME.fullmatch(name) is not None
        and _COOKIE_VALUE.fullmatch(value) is not None
    )


def _basic(user: Secret, password: Secret) -> str:
    pair = f"{user.reveal()}:{password.reveal()}".encode()
    return "Basic " + base64.b64encode(pair).decode("ascii")


def _target(url: str, location: str) -> str | None:
    """Where a redirect from ``url`` to ``location`` leads, resolved as a page's links are
    (WHATWG rules); None when it leads to no http(s) URL."""
    try:
        return Resolver(url).resolve(location)
    except ValueError:
        return None


def _same_page(url: str | None, other: str | None) -> bool:
    if url is None or other is None:
        return False
    a, b = urlsplit(url), urlsplit(other)
    return (a.hostname, a.port, a.path or "/") == (b.hostname, b.port, b.path or "/")
