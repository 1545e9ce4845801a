"""A private PostgreSQL cluster for tests: initdb into a temp dir, a free loopback port, trust
authentication (or a password, TLS), stopped and removed on exit.

PostgreSQL refuses to run as root: as root (CI), initdb and the server run as the ``postgres``
system user that the Debian package creates (or ``nobody``), owning the temp dir.
"""

from __future__ import annotations

import glob
import json
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import quote

import pytest
from tests.tls_certs import TlsFiles

_UNPRIVILEGED = ("postgres", "nobody")


def _bin_dir() -> Path | None:
    """Where initdb and pg_ctl live: PATH first, then Debian's versioned directories."""
    found = shutil.which("pg_ctl")
    if found and shutil.which("initdb"):
        return Path(found).resolve().parent
    versions = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"),
        key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0,
    )
    return Path(versions[-1]).parent if versions else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _run_as() -> pwd.struct_passwd | None:
    """The unprivileged user to run PostgreSQL as when we are root; None when not root."""
    if os.geteuid() != 0:
        return None
    for name in _UNPRIVILEGED:
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    pytest.skip("running as root and no unprivileged user (postgres, nobody) to run PostgreSQL")


class PostgresServer:
    """``with PostgresServer() as pg: pg.url`` (superuser ``postgres``, database ``postgres``).

    :meth:`stop` keeps the data directory, so :meth:`start` brings the same cluster back on
    the same port (a server that goes away mid-crawl and returns); :meth:`close` removes it.

    ``password``: TCP connections authenticate with SCRAM-SHA-256 (``postgres`` has this
    password). ``tls``: the server speaks TLS with the test CA's server certificate and takes
    TCP connections over TLS only, from clients whose certificate the CA signed; ``url`` then
    asks for ``sslmode=verify-full`` with the client certificate.
    """

    def __init__(self, *, password: str | None = None, tls: TlsFiles | None = None) -> None:
        self.password = password
        self.tls = tls
        self.port = 0
        self._bin: Path | None = None
        self._user: pwd.struct_passwd | None = None
        self._dir: Path | None = None

    @property
    def url(self) -> str:
        auth = f":{quote(self.password, safe='')}" if self.password else ""
        url = f"postgres://postgres{auth}@127.0.0.1:{self.port}/postgres"
        return url + (f"?{self.tls_query()}" if self.tls else "")

    def tls_query(self, mode: str = "verify-full", ca: Path | None = None) -> str:
        """The DSN parameters of a TLS connection trusting ``ca`` (default the test CA)."""
        assert self.tls is not None
        return (
            f"sslmode={mode}&sslrootcert={ca or self.tls.ca}"
            f"&sslcert={self.tls.client_cert}&sslkey={self.tls.client_key}"
        )

    def table_url(self, table: str) -> str:
        """The store URL writing to ``table``."""
        return f"{self.url}{'&' if '?' in self.url else '?'}table={table}"

    def init(self) -> None:
        """Create the cluster (skips the test when PostgreSQL is not installed)."""
        self._bin = _bin_dir()
        if self._bin is None:
            pytest.skip("PostgreSQL is not installed (make test installs it as root)")
        self._user = _run_as()
        self._dir = Path(tempfile.mkdtemp(prefix="gossamer-pg-"))
        if self._user is not None:
            os.chown(self._dir, self._user.pw_uid, self._user.pw_gid)
        self.port = _free_port()
        auth = ["-A", "trust"]
        if self.password:
            pwfile = self._own(self._dir / "pwfile", self.password)
            auth = ["--auth-local", "trust", "--auth-host", "scram-sha-256", f"--pwfile={pwfile}"]
        self._run(
            "initdb", "-D", str(self._data), "-U", "postgres", *auth,
            "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions",
        )  # fmt: skip
        if self.tls:
            self._own(self._dir / "server.crt", self.tls.server_cert.read_text())
            self._own(self._dir / "server.key", self.tls.server_key.read_text())
            self._own(self._dir / "ca.crt", self.tls.ca.read_text())
            method = "scram-sha-256" if self.password else "trust"
            self._own(
                self._data / "pg_hba.conf",
                "local all all trust\nhostnossl all all all reject\n"
                f"hostssl all all all {method} clientcert=verify-ca\n",
            )

    def _own(self, path: Path, text: str) -> Path:
        """Write ``text`` to ``path``, readable by the server's user only."""
        path.write_text(text)
        path.chmod(0o600)
        if self._user is not None:
            os.chown(path, self._user.pw_uid, self._user.pw_gid)
        return path

    @property
    def _data(self) -> Path:
        assert self._dir is not None
        return self._dir / "data"

    def start(self) -> None:
        """Start the server and wait until it accepts connections.

        fsync is off (speed): :meth:`stop` is a server crash, not a machine crash, so committed
        rows survive it as long as commits stay synchronous.
        """
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self._dir} "
            "-c fsync=off -c full_page_writes=off"
        )
        if self.tls:
            options += (
                f" -c ssl=on -c ssl_cert_file={self._dir}/server.crt"
                f" -c ssl_key_file={self._dir}/server.key -c ssl_ca_file={self._dir}/ca.crt"
            )
        log = str(self._data.parent / "server.log")
        self._run("pg_ctl", "start", "-w", "-t", "30", "-D", str(self._data), "-l", log,
                  "-o", options)  # fmt: skip

    def stop(self) -> None:
        """Stop the server at once (connections are cut); the data directory stays."""
        if self._dir is not None and (self._data / "postmaster.pid").exists():
            self._run("pg_ctl", "stop", "-w", "-t", "30", "-m", "immediate", "-D", str(self._data))

    def close(self) -> None:
        """Stop the server and remove its directory."""
        try:
            self.stop()
        finally:
            if self._dir is not None:
                shutil.rmtree(self._dir, ignore_errors=True)
                self._dir = None

    def log(self) -> str:
        """The server's log so far (for assertion messages)."""
        path = self._data.parent / "server.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def _run(self, program: str, *args: str) -> None:
        assert self._bin is not None and self._dir is not None
        extra: dict[str, Any] = {}
        if self._user is not None:
            extra = {"user": self._user.pw_uid, "group": self._user.pw_gid, "extra_groups": []}
        done = subprocess.run(
            [str(self._bin / program), *args],
            cwd=self._dir,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C"},
            capture_output=True,
            timeout=60,
            check=False,
            **extra,
        )
        if done.returncode != 0:
            output = (done.stdout + done.stderr).decode(errors="replace")
            raise RuntimeError(f"{program} failed ({done.returncode}): {output}\n{self.log()}")

    def __enter__(self) -> PostgresServer:
        try:
            self.init()
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


async def table_rows(url: str, table: str) -> list[dict[str, Any]]:
    """Every row of a page table as a dict (the record's fields, ``fp`` and ``worker``)."""
    import asyncpg

    conn = await asyncpg.connect(url, timeout=10)
    try:
        await conn.set_type_codec(
            "jsonb", encoder=json.dumps, decoder=json.loads, schema="pg_catalog"
        )
        rows = await conn.fetch(f'SELECT * FROM "{table}" ORDER BY url')
    finally:
        await conn.close()
    return [{k: v for k, v in dict(row).items() if k != "written_at"} for row in rows]
