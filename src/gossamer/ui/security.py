"""The dashboard's security: a token on every request, CSRF checks on every state change, and
strict response headers.

* **Token.** ``gossamer ui`` makes a random token at start (or takes the user's:
  ``GOSSAMER_UI_TOKEN`` or ``--token-file``) and prints the URL that carries it, as Jupyter
  does. The first request with ``?token=`` starts a session (:mod:`gossamer.ui.sessions`)
  and is redirected to the same URL without the token; its HttpOnly, SameSite=Strict cookie
  holds the session's random id, never the token (browsers send a 127.0.0.1 cookie to every
  port of 127.0.0.1: see that module for what this protects and where it stops). Later
  requests carry the cookie, or the token itself in an ``Authorization: Bearer`` header
  (scripts). ``POST /api/logout`` ends the session. Anything else is refused with 401.
* **Host.** On loopback, a request must name the server as ``127.0.0.1``, ``localhost`` or
  ``[::1]`` with its port: a DNS-rebinding page cannot reach it under its own name.
* **CSRF.** A state change is a POST (no GET changes anything) whose ``Origin`` (or, without
  one, ``Referer``) is the dashboard itself (the request's own ``Host``) and whose
  ``X-CSRF-Token`` header holds the per-process CSRF token (``GET /api/session`` hands it to
  the page).
* **Headers.** Every response carries a Content-Security-Policy without inline scripts or
  styles (``default-src 'self'``, ``frame-ancestors 'none'``), ``X-Content-Type-Options:
  nosniff``, ``X-Frame-Options: DENY``, ``Referrer-Policy: no-referrer`` and no-store caching.

The middlewares are the application's: a sub-application added with ``app.add_subapp`` (the
rule editor under ``/editor``) runs behind them too.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from aiohttp import web

from gossamer.ui.bodies import MAX_BODY_BYTES
from gossamer.ui.sessions import Sessions

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

MIN_TOKEN_CHARS = 16
"""A token the user sets must be at least this long."""
CSRF_HEADER = "X-CSRF-Token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=(), payment=()",
    "Cache-Control": "no-store",
}


def new_token() -> str:
    """A random token (256 bits)."""
    return secrets.token_urlsafe(32)


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address) is this machine only."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True, slots=True)
class Guard:
    """What the middlewares check against."""

    token: str
    csrf: str
    hosts: frozenset[str] | None
    """``host:port`` values the ``Host`` header may hold (lower case); None (a server bound
    beyond loopback, reached by names it cannot know) takes any."""
    cookie: str
    """The session cookie's name (holding the port: cookies do not tell ports apart, so two
    UIs on one machine would otherwise overwrite each other's)."""
    public: frozenset[str] = frozenset()
    """Paths a GET may read without the token (e.g. a health check); none by default."""
    sessions: Sessions = field(default_factory=Sessions, compare=False)
    """The logins whose ids the cookie holds."""

    @classmethod
    def for_server(
        cls, token: str, host: str, port: int, public: frozenset[str] = frozenset()
    ) -> Guard:
        hosts = None
        if is_loopback(host):
            names = {"127.0.0.1", "localhost", "[::1]", host.lower()}
            hosts = frozenset(f"{name}:{port}" for name in names)
        return cls(token, new_token(), hosts, f"gossamer_ui_{port}", public)

    def token_ok(self, given: str | None) -> bool:
        return given is not None and same_secret(given, self.token)

    def host_ok(self, host: str) -> bool:
        return self.hosts is None or host.lower() in self.hosts


GUARD = web.AppKey("guard", Guard)


def same_secret(given: str, secret: str) -> bool:
    """Whether ``given`` is ``secret``, in a time that does not tell where they differ.

    Header values come undecodable bytes and all (aiohttp keeps them as lone surrogates):
    they are compared as the bytes received, never re-encoded as strict UTF-8 (which raised).
    """
    return hmac.compare_digest(
        given.encode("utf-8", "surrogateescape"), secret.encode("utf-8", "surrogateescape")
    )


def _authorised(request: web.Request, guard: Guard) -> bool:
    """The token in an ``Authorization: Bearer`` header, else an open session's cookie."""
    auth = request.headers.get("Authorization", "")
    if auth.startswith("Bearer "):
        return guard.token_ok(auth[len("Bearer ") :].strip())
    return guard.sessions.check(request.cookies.get(guard.cookie))


def end_session(request: web.Request, response: web.StreamResponse) -> bool:
    """Log out: end the request's session and clear its cookie; whether one was open."""
    guard = request.config_dict[GUARD]
    ended = guard.sessions.end(request.cookies.get(guard.cookie))
    response.del_cookie(guard.cookie, path="/", httponly=True, samesite="Strict")
    return ended


@web.middleware
async def security_headers(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Strict headers on every response, errors included."""
    try:
        response = await handler(request)
    except web.HTTPException as exc:
        exc.headers.update(HEADERS)
        raise
    if not response.prepared:
        _apply_headers(response)
    return response


OWN_POLICY = frozenset({"Content-Security-Policy", "X-Frame-Options"})
"""Headers a response may set itself, stricter than the app's: the rule editor's sanitised
page (``default-src 'none'``, framed by the app's own page only)."""


def _apply_headers(response: web.StreamResponse) -> None:
    for name, value in HEADERS.items():
        if name not in OWN_POLICY or name not in response.headers:
            response.headers[name] = value


async def _on_prepare(request: web.Request, response: web.StreamResponse) -> None:
    for name, value in HEADERS.items():
        response.headers.setdefault(name, value)


@web.middleware
async def require_token(request: web.Request, handler: Handler) -> web.StreamResponse:
    """401 unless the request names this server and carries the token."""
    guard = request.app[GUARD]
    if not guard.host_ok(request.host):
        raise web.HTTPBadRequest(text="unknown Host\n")
    if request.method in ("GET", "HEAD") and request.path in guard.public:
        return await handler(request)
    query_token = request.query.get("token")
    if query_token is not None:
        if not guard.token_ok(query_token):
            log.warning("refused a wrong token from %s", request.remote)
            raise web.HTTPUnauthorized(text="wrong token\n")
        kept = [(k, v) for k, v in request.rel_url.query.items() if k != "token"]
        clean = request.rel_url.with_query(kept)
        redirect = web.Response(status=303, headers={"Location": str(clean)})
        session = guard.sessions.start()
        redirect.set_cookie(guard.cookie, session, httponly=True, samesite="Strict", path="/")
        return redirect
    if not _authorised(request, guard):
        raise web.HTTPUnauthorized(
            text="gossamer ui: open the URL with ?token= that the command printed\n"
        )
    return await handler(request)


@web.middleware
async def check_csrf(request: web.Request, handler: Handler) -> web.StreamResponse:
    """State changes: POST only, from the dashboard's own origin, with the CSRF token."""
    if request.method in SAFE_METHODS:
        return await handler(request)
    guard = request.app[GUARD]
    if request.method != "POST":
        raise web.HTTPMethodNotAllowed(request.method, ["GET", "POST"])
    origin = request.headers.get("Origin")
    if origin is None and (referer := request.headers.get("Referer")):
        parts = urlsplit(referer)
        origin = f"{parts.scheme}://{parts.netloc}"
    own = {f"{scheme}://{request.host}".lower() for scheme in ("http", "https")}
    if origin is None or origin.lower() not in own:
        raise web.HTTPForbidden(text="cross-site request refused\n")
    given = request.headers.get(CSRF_HEADER, "")
    if not same_secret(given, guard.csrf):
        raise web.HTTPForbidden(text="missing or wrong CSRF token\n")
    return await handler(request)


def secure_app(guard: Guard) -> web.Application:
    """An application behind the token, CSRF and header middlewares (sub-applications added
    to it inherit them)."""
    app = web.Application(
        middlewares=[security_headers, require_token, check_csrf], client_max_size=MAX_BODY_BYTES
    )
    app[GUARD] = guard
    app.on_response_prepare.append(_on_prepare)
    return app
