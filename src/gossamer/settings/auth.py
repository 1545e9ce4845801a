"""The settings of one login (an ``[[auth]]`` table): :class:`AuthSettings`."""

import re
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import urlsplit

from msgspec import Meta, field
from msgspec.structs import force_setattr

from gossamer.settings.base import FieldError, SettingsModel

__all__ = ["DEFAULT_PORTS", "AuthSettings", "AuthType", "Origin"]

AuthType = Literal["basic", "bearer", "cookies", "form", "oauth2"]
_SECRETS: dict[str, tuple[str, ...]] = {
    "basic": ("username", "password"),
    "bearer": ("token",),
    "cookies": (),
    "form": (),
    "oauth2": ("client_id", "client_secret"),
}
"""The secrets each kind of login needs (each as ``NAME_env`` or ``NAME_file``)."""
_DOMAIN = re.compile(r"(?=.{1,253}$)([a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?\.)*[a-z0-9_-]{1,63}")
_ORIGIN = re.compile(r"(https?)://([^/:?#]+)(?::([0-9]{1,5}))?")
DEFAULT_PORTS = {"http": 80, "https": 443}
Origin = tuple[str, str, int]
"""A scheme, a host and a port: ``("https", "example.org", 443)``."""


class AuthSettings(SettingsModel, frozen=True, kw_only=True):
    """How the crawl logs in to one domain (an ``[[auth]]`` table of the config file).

    Secrets are named, never given: each as ``NAME_env`` (an environment variable) or
    ``NAME_file`` (a file whose text, less its final newline, is the secret), read once when
    the crawl starts (:func:`read_secret`). The settings themselves hold no secret, so a
    cluster job may store them; a form's further ``fields`` are shown masked all the same
    (a site may want a key among them)."""

    _masked_fields = ("fields",)

    domain: Annotated[
        str,
        Meta(
            description=(
                "The host whose requests carry the login, and its subdomains, over one scheme "
                "and port: https://host[:port] or http://host[:port]; a bare host means "
                "login_url's scheme and port when its host lies within it, else https on 443."
            )
        ),
    ]
    type: Annotated[AuthType, Meta(description="basic | bearer | cookies | form | oauth2.")]
    username_env: Annotated[str, Meta(description="Variable holding the user name.")] | None = None
    username_file: Annotated[Path, Meta(description="File holding the user name.")] | None = None
    password_env: Annotated[str, Meta(description="Variable holding the password.")] | None = None
    password_file: Annotated[Path, Meta(description="File holding the password.")] | None = None
    token_env: Annotated[str, Meta(description="Variable holding the bearer token.")] | None = None
    token_file: Annotated[Path, Meta(description="File holding the bearer token.")] | None = None
    cookies_file: (
        Annotated[
            Path, Meta(description="Cookies in Netscape format (cookies.txt), for type cookies.")
        ]
        | None
    ) = None
    login_url: Annotated[str, Meta(description="Form login: the URL the form posts to.")] | None = (
        None
    )
    username_field: Annotated[str, Meta(description="Form login: the user name's field.")] = (
        "username"
    )
    password_field: Annotated[str, Meta(description="Form login: the password's field.")] = (
        "password"
    )
    fields: Annotated[
        dict[str, str], Meta(description="Form login: further fields posted as they are.")
    ] = field(default_factory=dict)
    logged_out_status: Annotated[
        list[Annotated[int, Meta(ge=100, le=599)]],
        Meta(description="Form login: statuses that mean the session has ended."),
    ] = field(default_factory=lambda: [401, 403])
    logged_out_selector: (
        Annotated[
            str, Meta(description="Form login: a CSS selector found only on logged-out pages.")
        ]
        | None
    ) = None
    login_hook: (
        Annotated[
            str,
            Meta(
                description=(
                    "Form login: module:function that logs in instead of posting the form "
                    "(see gossamer.fetch.auth.UserLogin)."
                )
            ),
        ]
        | None
    ) = None
    token_url: Annotated[str, Meta(description="OAuth 2.0: the token endpoint.")] | None = None
    client_id_env: (
        Annotated[str, Meta(description="OAuth 2.0: variable of the client id.")] | None
    ) = None
    client_id_file: (
        Annotated[Path, Meta(description="OAuth 2.0: file of the client id.")] | None
    ) = None
    client_secret_env: (
        Annotated[str, Meta(description="OAuth 2.0: variable of the secret.")] | None
    ) = None
    client_secret_file: (
        Annotated[Path, Meta(description="OAuth 2.0: file of the secret.")] | None
    ) = None
    scope: Annotated[str, Meta(description="OAuth 2.0: the scope asked for.")] | None = None
    token_cache: (
        Annotated[
            Path,
            Meta(
                description=(
                    "OAuth 2.0: file the token is cached in (mode 0600) until it expires; "
                    "default ~/.cache/gossamer/oauth-<digest of the token URL and client>.json."
                )
            ),
        ]
        | None
    ) = None
    refresh_margin: Annotated[
        float,
        Meta(
            ge=0,
            le=86_400,
            description=(
                "OAuth 2.0: seconds before expiry a token is renewed (at most half its lifetime)."
            ),
        ),
    ] = 60.0

    def _check(self) -> None:
        force_setattr(self, "domain", _domain(self.domain))
        for name in ("login_url", "token_url"):
            url = getattr(self, name)
            if url is not None and not url.lower().startswith(("http://", "https://")):
                raise FieldError(name, "must be an http:// or https:// URL")
        self._complete()

    def origin(self) -> Origin:
        """The scheme, domain and port whose requests carry the login: those ``domain``
        names; for a bare host, ``login_url``'s scheme and port when its host lies within
        the domain (the site a form posts to), else https on 443. A credential never goes
        to another scheme or port of the domain."""
        found = _ORIGIN.fullmatch(self.domain)
        if found is not None:
            scheme, host, port = found.groups()
            return scheme, host, int(port) if port else DEFAULT_PORTS[scheme]
        host = self.domain
        if self.login_url is not None:
            parts = urlsplit(self.login_url.lower())
            within = parts.hostname is not None and (
                parts.hostname == host or parts.hostname.endswith("." + host)
            )
            try:
                if within and parts.scheme in DEFAULT_PORTS:
                    return parts.scheme, host, parts.port or DEFAULT_PORTS[parts.scheme]
            except ValueError:  # a port out of range: no origin of its own
                pass
        return "https", host, DEFAULT_PORTS["https"]

    def _complete(self) -> None:
        for name in ("username", "password", "token", "client_id", "client_secret"):
            env, file = getattr(self, f"{name}_env"), getattr(self, f"{name}_file")
            if env is not None and file is not None:
                raise FieldError(f"{name}_env", f"give {name}_env or {name}_file, not both")
        needed = _SECRETS[self.type]
        if self.type == "form" and self.login_hook is None:
            needed = ("username", "password")
            if self.login_url is None:
                raise FieldError("login_url", "type form needs login_url (or login_hook)")
        for name in needed:
            if getattr(self, f"{name}_env") is None and getattr(self, f"{name}_file") is None:
                raise FieldError(f"{name}_env", f"type {self.type} needs {name}_env or {name}_file")
        if self.type == "cookies" and self.cookies_file is None:
            raise FieldError("cookies_file", "type cookies needs cookies_file")
        if self.type == "oauth2" and self.token_url is None:
            raise FieldError("token_url", "type oauth2 needs token_url")


def _domain(given: str) -> str:
    """``domain`` in its one written form: a lower-case host, or an origin without its
    scheme's default port."""
    text = given.strip().lower()
    found = _ORIGIN.fullmatch(text)
    if found is None:
        host = text.rstrip(".")
        if not _DOMAIN.fullmatch(host):
            problem = "is not a host name or an origin (https://host:port, no path)"
            raise FieldError("domain", f"{text[:200]!r} {problem}")
        return host
    scheme, host, port = found.groups()
    host = host.rstrip(".")
    if not _DOMAIN.fullmatch(host):
        raise FieldError("domain", f"{host[:200]!r} is not a host name")
    if port is not None and not 0 < int(port) < 65536:
        raise FieldError("domain", f"port {port} is out of range")
    if port is None or int(port) == DEFAULT_PORTS[scheme]:
        return f"{scheme}://{host}"
    return f"{scheme}://{host}:{int(port)}"
