"""Throwaway TLS material for tests, made with the ``openssl`` command: a CA, a server
certificate for 127.0.0.1 and localhost, a client certificate, and a second CA that signed
neither (a client trusting it fails the handshake)."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

OPENSSL = shutil.which("openssl") or "/usr/bin/openssl"


@dataclass(frozen=True)
class TlsFiles:
    """Paths of the PEM files in one directory."""

    ca: Path
    ca_key: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    other_ca: Path
    """A CA that signed nothing here: trusting only it fails the server's verification."""


def _openssl(*args: str | Path, cwd: Path) -> None:
    done = subprocess.run(
        [OPENSSL, *map(str, args)], cwd=cwd, capture_output=True, timeout=60, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"openssl {args[0]} failed: {done.stderr.decode(errors='replace')}")


def _ca(directory: Path, name: str) -> tuple[Path, Path]:
    cert, key = directory / f"{name}.crt", directory / f"{name}.key"
    _openssl(
        "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
        "-nodes", "-days", "2", "-subj", f"/CN=gossamer test {name}",
        "-keyout", key, "-out", cert, cwd=directory,
    )  # fmt: skip
    return cert, key


def _signed(directory: Path, name: str, ca: tuple[Path, Path], extensions: str) -> Path:
    key, csr, cert = directory / f"{name}.key", directory / f"{name}.csr", directory / f"{name}.crt"
    ext = directory / f"{name}.ext"
    ext.write_text(extensions)
    _openssl(
        "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-subj", f"/CN={name}", "-keyout", key, "-out", csr, cwd=directory,
    )  # fmt: skip
    _openssl(
        "x509", "-req", "-in", csr, "-CA", ca[0], "-CAkey", ca[1], "-CAcreateserial",
        "-days", "2", "-extfile", ext, "-out", cert, cwd=directory,
    )  # fmt: skip
    return cert


def make_tls_files(directory: Path) -> TlsFiles:
    """Write a CA, server and client certificates and an unrelated CA into ``directory``.

    The keys are readable by everyone: PostgreSQL, run as another user in tests, reads the
    server's copy it is given (see :func:`private_copy`)."""
    if not os.path.exists(OPENSSL):
        pytest.skip("the openssl command is not installed")
    directory.mkdir(parents=True, exist_ok=True)
    ca = _ca(directory, "ca")
    other, _ = _ca(directory, "other-ca")
    server = _signed(
        directory,
        "server",
        ca,
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n",
    )
    client = _signed(directory, "client", ca, "extendedKeyUsage=clientAuth\n")
    for path in directory.iterdir():
        path.chmod(0o644)
    return TlsFiles(
        ca=ca[0],
        ca_key=ca[1],
        server_cert=server,
        server_key=directory / "server.key",
        client_cert=client,
        client_key=directory / "client.key",
        other_ca=other,
    )
