"""What a login is: one domain's kind of login, its settings and its secrets (`Secret`, never
shown), and the hook a custom login is (`UserLogin`). `gossamer.fetch.auth` uses them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import msgspec

from gossamer.fetch.cookies import CookieRow
from gossamer.settings.auth import DEFAULT_PORTS

if TYPE_CHECKING:
    import aiohttp

__all__ = ["Login", "LoginContext", "Secret", "UserLogin"]


class Secret:
    """A credential: ``str()`` and ``repr()`` show ``***``; `reveal` gives the value."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        """The secret itself: only for the request that sends it."""
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__


@dataclass(frozen=True)
class Login:
    """One domain's login, its secrets read (see the module doc for the kinds)."""

    domain: str
    kind: str
    username: Secret | None = None
    password: Secret | None = None
    token: Secret | None = None
    cookies: tuple[CookieRow, ...] = field(default=(), repr=False)
    """For ``cookies``: the cookies of the file (credentials: never shown)."""
    login_url: str | None = None
    username_field: str = "username"
    password_field: str = "password"
    fields: Mapping[str, str] = field(default_factory=dict)
    logged_out_status: frozenset[int] = frozenset({401, 403})
    logged_out_selector: str | None = None
    user_login: UserLogin | None = None
    token_url: str | None = None
    client_id: Secret | None = None
    client_secret: Secret | None = None
    scope: str | None = None
    token_cache: Path | None = None
    refresh_margin: float = 60.0
    scheme: str = "https"
    """With `port`, the origin of the domain (and its subdomains) the login goes to."""
    port: int = 443

    def holds(self, host: str) -> bool:
        """Whether ``host`` is the login's domain or a subdomain of it (whatever the port)."""
        return host == self.domain or host.endswith("." + self.domain)

    def covers(self, url: str, host: str) -> bool:
        """Whether ``url``'s request (its host name ``host``, lower case) carries this login:
        its host within the domain, its scheme and port the login's own."""
        if not self.holds(host) or not url.startswith(self.scheme + "://"):
            return False
        try:
            port = urlsplit(url).port
        except ValueError:
            return False
        return (port or DEFAULT_PORTS[self.scheme]) == self.port

    def renew_at(self, expires_at: float, lifetime: float | None) -> float:
        """When an OAuth token that expires at ``expires_at`` is renewed: ``refresh_margin``
        before, or halfway through its ``lifetime`` (when known) if that is later, so a
        token living less than the margin still serves half its life."""
        margin = self.refresh_margin
        if lifetime is not None:
            margin = min(margin, lifetime / 2)
        return expires_at - margin


class LoginContext(msgspec.Struct, frozen=True):
    """What a `UserLogin` hook gets: the domain's session to log in with and its secrets."""

    session: aiohttp.ClientSession
    domain: str
    login_url: str | None
    username: Secret | None
    password: Secret | None


UserLogin = Callable[[LoginContext], Awaitable[Mapping[str, str] | None]]
"""A ``user_login`` hook: logs in (with ``context.session``, which keeps no cookies) and
returns the session cookies (name -> value) for the domain; None or raising means failure."""
