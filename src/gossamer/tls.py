"""The TLS context gossamer's HTTP client verifies servers with, and its CA bundle read late.

aiohttp builds two default SSL contexts when it is imported (``aiohttp.connector``), and
each reads the system's CA bundle file. The `gossamer.fetch.Fetcher` does not use them:
its lean client and its aiohttp connectors get `verified_context` (or, without
verification, a context that accepts any certificate, or ``ssl=False``), and a crawl that
makes only direct requests never imports aiohttp. `defer_ca_file`, called by ``gossamer
crawl``, builds gossamer's verified context with ``SSL_CERT_FILE`` pointed at an empty file,
so it skips the bundle (it still looks CAs up in the system's CA directory); `load_ca_file`
then reads the bundle into that context, as ``ssl.create_default_context`` would have,
before the first https request (the Fetcher calls it). Either way the context a Fetcher
verifies with is ``ssl.create_default_context()`` with ALPN ``http/1.1`` (aiohttp's own
recipe) holding the system's CAs when its first handshake starts.
"""

from __future__ import annotations

import contextlib
import os
import ssl
import sys
from collections.abc import Iterator

_deferred: ssl.SSLContext | None = None
"""gossamer's verified context while its CA bundle file is still unread."""
_verified: ssl.SSLContext | None = None


def defer_ca_file() -> None:
    """Build the verified context without reading the CA bundle file.

    Call it before the event loop starts (it changes the process environment for the time
    it takes); it does nothing once aiohttp is imported. aiohttp is not imported here: the
    lean client (`gossamer.fetch.lean`) has no use for it; `import_aiohttp` imports it, its
    contexts skipping the file too, when a request needs it."""
    global _deferred, _verified
    if "aiohttp.connector" in sys.modules or _verified is not None:
        return
    with _no_ca_file():
        _verified = _deferred = _new_context()


def import_aiohttp() -> None:
    """Import aiohttp; while `defer_ca_file` holds the CA bundle back, with
    ``SSL_CERT_FILE`` pointed at an empty file, so its two default contexts skip it (they
    still look CAs up in the system's CA directory)."""
    if "aiohttp.connector" in sys.modules:
        return
    if _deferred is None:
        import aiohttp

        return
    with _no_ca_file():
        import aiohttp  # noqa: F401


@contextlib.contextmanager
def _no_ca_file() -> Iterator[None]:
    saved = os.environ.get("SSL_CERT_FILE")
    os.environ["SSL_CERT_FILE"] = os.devnull
    try:
        yield
    finally:
        if saved is None:
            del os.environ["SSL_CERT_FILE"]
        else:
            os.environ["SSL_CERT_FILE"] = saved


def verified_context() -> ssl.SSLContext:
    """The context that verifies servers against the system's CAs (one per process); after
    `defer_ca_file`, its CAs are there once `load_ca_file` has run."""
    global _verified
    if _verified is None:
        _verified = _new_context()
    return _verified


def unverified_context() -> ssl.SSLContext:
    """A context that accepts any certificate (``verify_tls=False``)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols(("http/1.1",))
    return context


def ca_file_deferred() -> bool:
    """Whether `load_ca_file` must run before the verified context can be used."""
    return _deferred is not None


def load_ca_file() -> None:
    """Read the CA bundle into the verified context, if `defer_ca_file` left it out; this
    blocks for some milliseconds, once."""
    global _deferred
    if _deferred is not None:
        _deferred.load_default_certs()
        _deferred = None


def _new_context() -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.set_alpn_protocols(("http/1.1",))
    return context
