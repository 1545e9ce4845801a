"""The Redis URL of the cluster commands: checked where it comes in, and its password
completed from a file or the environment so that it need not stand on a command line.

The forms are redis-py's own (see docs/security.md)::

    redis://host:6379/0                       no authentication
    redis://:PASSWORD@host:6379/0             requirepass (the ``default`` user)
    redis://USER:PASSWORD@host:6379/0         an ACL user
    rediss://USER@host:6380/0?ssl_ca_certs=ca.pem&ssl_certfile=client.pem&ssl_keyfile=client.key
                                              TLS, a client certificate, password from elsewhere

A URL without a password takes one from ``--redis-password-file`` (its first line), else from
``$GOSSAMER_REDIS_PASSWORD``. Nothing here imports redis-py: the parser stays light.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import parse_qsl, quote, urlsplit, urlunsplit

from gossamer.redact import redact_url
from gossamer.settings import SettingsError

PASSWORD_ENV = "GOSSAMER_REDIS_PASSWORD"
"""The environment variable holding the Redis password of a URL that has none."""
MAX_PASSWORD_FILE = 4 << 10
"""The largest ``--redis-password-file`` read (its first line is the password)."""

_TLS_FILES = {
    "ssl_ca_certs": "file",
    "ssl_certfile": "file",
    "ssl_keyfile": "file",
    "ssl_ca_path": "directory",
}
_TLS_PARAMETERS = {
    *_TLS_FILES,
    "ssl_cert_reqs",
    "ssl_check_hostname",
    "ssl_password",
    "ssl_ciphers",
    "ssl_min_version",
    "ssl_ca_data",
    "ssl_include_verify_flags",
    "ssl_exclude_verify_flags",
}
_PARAMETERS = {
    "db",
    "socket_timeout",
    "socket_connect_timeout",
    "socket_keepalive",
    "socket_read_size",
    "health_check_interval",
    "max_connections",
    "client_name",
    "protocol",
    *_TLS_PARAMETERS,
}
"""The query parameters gossamer passes on to redis-py, for one server and a Redis Cluster
alike; any other (``timeout``, ``retry_on_timeout`` among redis-py's own) would reach a
connection's constructor and fail there with a traceback. gossamer retries on its own."""
_CERT_REQS = ("none", "optional", "required")


def resolve_redis_url(
    url: str,
    *,
    password_file: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> str:
    """``url`` checked, with the password of ``password_file`` or ``$GOSSAMER_REDIS_PASSWORD``
    when it has none. Raises SettingsError (exit status 2) with the URL shown redacted."""
    check_redis_url(url)
    parts = urlsplit(url)
    if parts.password is not None:
        if password_file is not None:
            raise SettingsError(
                f"invalid setting 'redis': {redact_url(url)} holds a password already; "
                "give it in the URL or in --redis-password-file, not both"
            )
        return url
    password = _password(password_file, os.environ if env is None else env)
    if password is None:
        return url
    userinfo, _, hostport = parts.netloc.rpartition("@")
    netloc = f"{userinfo}:{quote(password, safe='')}@{hostport}"
    return urlunsplit(parts._replace(netloc=netloc))


def check_redis_url(url: str) -> None:
    """Raise SettingsError unless ``url`` is a Redis URL gossamer can connect with."""
    shown = redact_url(url)
    parts = urlsplit(url)
    if parts.fragment or "@" in parts.path or "@" in parts.query:
        # A password's unescaped @ / ? or # cuts the URL elsewhere: show none of it.
        raise SettingsError(
            "invalid setting 'redis': the URL does not parse; percent-escape the characters "
            "@ / ? # : % in its user and password (%40 for @), or give the password with "
            f"--redis-password-file or ${PASSWORD_ENV}"
        )
    if parts.scheme not in ("redis", "rediss") or not parts.hostname:
        raise SettingsError(
            "invalid setting 'redis': expected redis://[USER[:PASSWORD]@]HOST[:PORT][/DB] "
            f"or rediss://... (TLS), got {shown!r}"
        )
    try:
        parts.port  # noqa: B018 -- raises on a malformed port
    except ValueError as exc:
        raise SettingsError(f"invalid setting 'redis': {exc} in {shown!r}") from None
    db = parts.path.lstrip("/")
    if db and not db.isdigit():
        raise SettingsError(f"invalid setting 'redis': database {db!r} is not a number")
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        _check_parameter(key, value, tls=parts.scheme == "rediss")


def _check_parameter(key: str, value: str, *, tls: bool) -> None:
    if key not in _PARAMETERS:
        raise SettingsError(
            f"invalid setting 'redis': unknown URL parameter {key!r} "
            f"(known: {', '.join(sorted(_PARAMETERS))})"
        )
    if key in _TLS_PARAMETERS and not tls:
        raise SettingsError(
            f"invalid setting 'redis': {key} needs a TLS URL: rediss:// instead of redis://"
        )
    kind = _TLS_FILES.get(key)
    if kind is not None:
        path = Path(value)
        if not (path.is_dir() if kind == "directory" else path.is_file()) or not os.access(
            path, os.R_OK
        ):
            raise SettingsError(f"invalid setting 'redis': {key}: no readable {kind} {value!r}")
    if key == "ssl_cert_reqs" and value.lower() not in _CERT_REQS:
        raise SettingsError(
            f"invalid setting 'redis': ssl_cert_reqs must be one of {', '.join(_CERT_REQS)}"
        )


def _password(password_file: Path | None, env: Mapping[str, str]) -> str | None:
    if password_file is None:
        return env.get(PASSWORD_ENV) or None
    try:
        with password_file.open("rb") as file:
            raw = file.read(MAX_PASSWORD_FILE + 1)
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8"
        raise SettingsError(
            f"invalid setting 'redis-password-file': cannot read {str(password_file)!r}: {reason}"
        ) from None
    if len(raw) > MAX_PASSWORD_FILE:
        raise SettingsError(
            f"invalid setting 'redis-password-file': {str(password_file)!r} is larger than "
            f"{MAX_PASSWORD_FILE >> 10} KiB"
        )
    password = text.splitlines()[0] if text else ""
    if not password:
        raise SettingsError(
            f"invalid setting 'redis-password-file': {str(password_file)!r} is empty"
        )
    return password
