"""`gossamer.tls`: with the CA bundle file read late (``gossamer crawl``), https is verified
exactly as before, against the CAs of ``SSL_CERT_FILE``; plain http never reads the file.

Each case runs in a fresh interpreter: the deferral only works before aiohttp is imported
(`tls.import_aiohttp` imports it so, when a request needs it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.tls_certs import TlsFiles

ROOT = Path(__file__).resolve().parent.parent

_SCRIPT = """
import asyncio, json, ssl, sys
from gossamer import tls

tls.defer_ca_file()
from gossamer.fetch import FetchConfig, Fetcher
lean = "aiohttp" not in sys.modules
tls.import_aiohttp()  # as the fetcher does for its first aiohttp session
import aiohttp.connector
from aiohttp import web


async def main(cert: str, key: str) -> dict:
    app = web.Application()
    app.router.add_get("/", lambda request: web.Response(text="ok"))
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    await web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context).start()
    plain, secure = (address[1] for address in runner.addresses)
    seen = {"aiohttp": aiohttp.connector._SSL_CONTEXT_VERIFIED.cert_store_stats()["x509"]}
    seen["lean"] = lean
    try:
        async with Fetcher(FetchConfig(total_timeout=10)) as fetcher:
            http = await fetcher.fetch(f"http://127.0.0.1:{plain}/")
            seen["http"] = [http.status, tls.ca_file_deferred()]
            https = await fetcher.fetch(f"https://127.0.0.1:{secure}/")
            seen["https"] = [https.status, https.error, tls.ca_file_deferred()]
            seen["cas"] = tls.verified_context().cert_store_stats()["x509_ca"]
    finally:
        await runner.cleanup()
    return seen


print(json.dumps(asyncio.run(main(sys.argv[1], sys.argv[2]))))
"""


def _run(tls_files: TlsFiles, ca: Path) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "SSL_CERT_FILE": str(ca)}
    env["SSL_CERT_DIR"] = str(ca.parent / "no-such-directory")
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(tls_files.server_cert), str(tls_files.server_key)],
        capture_output=True,
        text=True,
        env=env,
        timeout=50,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


@pytest.mark.slow
def test_https_is_verified_against_the_ca_file_read_at_the_first_https_request(
    tls_files: TlsFiles,
) -> None:
    seen = _run(tls_files, tls_files.ca)
    assert seen["lean"]  # the fetcher imports no aiohttp for direct requests
    assert seen["aiohttp"] == 0  # aiohttp's own default contexts skipped the file
    assert seen["http"] == [200, True]  # plain http left it unread
    assert seen["https"] == [200, None, False]
    assert seen["cas"] == 1


@pytest.mark.slow
def test_a_server_the_ca_file_does_not_vouch_for_is_refused(tls_files: TlsFiles) -> None:
    seen = _run(tls_files, tls_files.other_ca)
    status, error, deferred = seen["https"]  # type: ignore[misc]
    assert (status, error, deferred) == (None, "tls", False)
