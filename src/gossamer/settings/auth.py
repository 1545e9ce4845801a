"""The settings of one login (an ``[[auth]]`` table): :class:`AuthSettings`."""

import re
from pathlib import Path
from typing import Annotated, Literal

from msgspec import Meta, field
from msgspec.structs import force_setattr

from gossamer.settings.base import FieldError, SettingsModel

__all__ = ["AuthSettings", "AuthType"]

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


class AuthSettings(SettingsModel, frozen=True, kw_only=True):
    """How the crawl logs in to one domain (an ``[[auth]]`` table of the config file).

    Secrets are named, never given: each as ``NAME_env`` (an environment variable) or
    ``NAME_file`` (a file whose text, less its final newline, is the secret), read once when
    the crawl starts (:func:`read_secret`). The settings themselves hold no secret, so a
    cluster job may store them; a form's further ``fields`` are shown masked all the same
    (a site may want a key among them)."""

    _masked_fields = ("fields",)

    domain: Annotated[
        str, Meta(description="The host whose requests carry the login, and its subdomains.")
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
        Meta(ge=0, le=86_400, description="OAuth 2.0: seconds before expiry a token is renewed."),
    ] = 60.0

    def _check(self) -> None:
        domain = self.domain.strip().lower().rstrip(".")
        if not _DOMAIN.fullmatch(domain):
            raise FieldError("domain", f"{domain!r} is not a host name (no scheme, port or path)")
        force_setattr(self, "domain", domain)
        for name in ("login_url", "token_url"):
            url = getattr(self, name)
            if url is not None and not url.lower().startswith(("http://", "https://")):
                raise FieldError(name, "must be an http:// or https:// URL")
        self._complete()

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
