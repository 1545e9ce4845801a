"""The OAuth 2.0 token cache of a login: one file (mode 0600) per token URL and client, so
every request of the process, and later processes, share a token until it expires."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any

from gossamer.fetch.login import Login

__all__ = [
    "MAX_CACHE_BYTES",
    "cache_path",
    "check_cache",
    "forget_cache",
    "read_cache",
    "write_cache",
]

log = logging.getLogger(__name__)
MAX_CACHE_BYTES = 1 << 20
"""The largest token cache file read (it holds one token of at most 4 KiB)."""


def cache_path(login: Login) -> Path:
    """Where ``login``'s OAuth token is cached: ``token_cache``, or a file per token URL
    and client under ``$XDG_CACHE_HOME/gossamer`` (``~/.cache/gossamer``)."""
    if login.token_cache is not None:
        return login.token_cache
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gossamer"
    return base / f"oauth-{_client_digest(login)[:16]}.json"


def _client_digest(login: Login) -> str:
    client = login.client_id.reveal() if login.client_id is not None else ""
    key = f"{login.token_url}\n{client}\n{login.scope or ''}"
    return hashlib.sha256(key.encode()).hexdigest()


def check_cache(login: Login) -> None:
    """Raise ValueError saying so when ``login``'s token cache is larger than
    `MAX_CACHE_BYTES` (``/dev/zero``): the crawl would read it again for every token."""
    with contextlib.suppress(OSError):  # none yet, or unreadable: a new token is written
        _read(cache_path(login))


def _read(path: Path) -> bytes:
    with path.open("rb") as file:
        raw = file.read(MAX_CACHE_BYTES + 1)
    if len(raw) > MAX_CACHE_BYTES:
        raise ValueError(f"{path} is larger than {MAX_CACHE_BYTES >> 20} MiB")
    return raw


def read_cache(login: Login) -> tuple[str, float, float | None] | None:
    """The cached token of ``login``, when it expires and its lifetime (None when the file
    does not say); None without a usable one."""
    try:
        data: Any = json.loads(_read(cache_path(login)))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("client") != _client_digest(login):
        return None
    token, expires_at = data.get("access_token"), data.get("expires_at")
    if not isinstance(token, str) or not isinstance(expires_at, int | float):
        return None
    lifetime = data.get("lifetime")
    return token, float(expires_at), float(lifetime) if isinstance(lifetime, int | float) else None


def write_cache(login: Login, token: str, expires_at: float, lifetime: float) -> None:
    path = cache_path(login)
    text = json.dumps(
        {
            "client": _client_digest(login),
            "access_token": token,
            "expires_at": expires_at,
            "lifetime": lifetime,
        }
    )
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write(text)
        os.chmod(temporary, 0o600)
        os.replace(temporary, path)
    except OSError as exc:
        log.warning(
            "cannot cache the OAuth token of %s in %s: %s",
            login.domain,
            path,
            exc.strerror,
            extra={"event": "auth-token-cache-failed", "domain": login.domain},
        )


def forget_cache(login: Login) -> None:
    cache_path(login).unlink(missing_ok=True)
