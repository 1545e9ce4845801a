"""A proxy URL read and checked: ``--proxy`` and ``--proxies-file`` entries become
:class:`Proxy` values here, where they enter (the settings check them, the proxy pool of
:mod:`gossamer.fetch.proxies` uses them).

:func:`parse_proxy` accepts http, https or socks5, a host, a port (http and https have a
default), optional credentials, nothing else. A proxy is shown (logs, records, stats) by its
:attr:`Proxy.label`, ``scheme://host:port``; no error message holds its password.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlsplit

import msgspec

from gossamer.redact import redact_url

__all__ = ["SCHEMES", "Proxy", "ProxyError", "parse_proxy", "read_proxies_file"]

SCHEMES = ("http", "https", "socks5")
_DEFAULT_PORTS = {"http": 80, "https": 443}
_MAX_FILE_BYTES = 1 << 20


class ProxyError(ValueError):
    """A proxy URL that cannot be used; the message never holds its password."""


class Proxy(msgspec.Struct, frozen=True):
    """One proxy: its URL as given (credentials included) and how to show it."""

    url: str
    scheme: str
    host: str
    port: int
    login: str | None = None
    password: str | None = None

    @property
    def label(self) -> str:
        """``scheme://host:port``: the proxy without its credentials, for every output."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"

    def __repr__(self) -> str:
        return f"Proxy({self.label})"


def parse_proxy(text: str) -> Proxy:
    """A `Proxy` from a URL such as ``http://user:pw@proxy.example:3128``; raises `ProxyError`
    naming what is wrong (and the URL, its password masked)."""
    url = text.strip()
    shown = redact_url(url)
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise ProxyError(f"proxy {shown}: {_no_secret(str(exc), _password_of(url))}") from None
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise ProxyError(f"proxy {shown}: the scheme must be one of {', '.join(SCHEMES)}")
    if not parts.hostname:
        raise ProxyError(f"proxy {shown}: no host")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ProxyError(f"proxy {shown}: a proxy URL has no path, query or fragment")
    if port is None:
        port = _DEFAULT_PORTS.get(scheme)
        if port is None:
            raise ProxyError(f"proxy {shown}: a {scheme} proxy needs a port")
    login = unquote(parts.username) if parts.username else None
    password = unquote(parts.password) if parts.password is not None else None
    if password is not None and login is None:
        raise ProxyError(f"proxy {shown}: a password without a user name")
    return Proxy(url, scheme, parts.hostname, port, login, password)


def _password_of(url: str) -> str | None:
    """The password of ``url``'s user info, or None (to keep it out of messages)."""
    authority = url.partition("://")[2].partition("/")[0]
    userinfo = authority.rpartition("@")[0]
    return userinfo.partition(":")[2] or None if userinfo else None


def _no_secret(message: str, secret: str | None) -> str:
    return message.replace(secret, "***") if secret else message


def read_proxies_file(path: Path) -> list[Proxy]:
    """The proxies of a file, one URL a line (blank and ``#`` lines skipped); raises
    `ProxyError` naming the line of a bad one, or OSError."""
    with path.open("rb") as file:
        raw = file.read(_MAX_FILE_BYTES + 1)
    if len(raw) > _MAX_FILE_BYTES:
        raise ProxyError(f"proxies file {path} is larger than {_MAX_FILE_BYTES} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ProxyError(f"proxies file {path} is not UTF-8 text") from None
    proxies = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if line and not line.startswith("#"):
            try:
                proxies.append(parse_proxy(line))
            except ProxyError as exc:
                raise ProxyError(f"{path}, line {number}: {exc}") from None
    return proxies
