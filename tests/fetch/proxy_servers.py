"""Real proxy servers on 127.0.0.1 for tests: an HTTP forward proxy (absolute-form requests
and CONNECT) that can be slow, corrupt its answers, ask for credentials, stop and start
again; and a SOCKS5 server (RFC 1928, with RFC 1929 user name and password).

Run as a program, it serves an HTTP proxy until interrupted (the README's example)::

    PYTHONPATH=. .venv/bin/python -m tests.fetch.proxy_servers --port 3128 \
        --resolve '*.test=127.0.0.1' [--delay 0.2] [--user U --password P]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import socket
import ssl
import struct
from urllib.parse import urlsplit

_MAX_HEAD = 64 * 1024


def dead_port() -> int:
    """A port of 127.0.0.1 where nothing listens."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError, OSError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    with contextlib.suppress(ConnectionError, OSError):
        writer.close()


async def _splice(
    client: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    origin: tuple[asyncio.StreamReader, asyncio.StreamWriter],
) -> None:
    await asyncio.gather(_pipe(client[0], origin[1]), _pipe(origin[0], client[1]))


class _Server:
    """Start, stop and restart on the same port; counts the requests it served."""

    def __init__(self) -> None:
        self.port = 0
        self.requests = 0
        self.targets: list[str] = []
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self.tls: ssl.SSLContext | None = None
        """Serve over TLS with this context (an HTTPS proxy)."""

    async def start(self) -> _Server:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port, ssl=self.tls)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            for writer in list(self._writers):
                writer.transport.abort()  # ends the handlers' reads: connections drop
            await asyncio.gather(*self._tasks, return_exceptions=True)
            await self._server.wait_closed()
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._writers.add(writer)
        try:
            await self.handle(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            self._tasks.discard(task)
            self._writers.discard(writer)
            with contextlib.suppress(ConnectionError, OSError):
                writer.close()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        raise NotImplementedError


class HttpProxy(_Server):
    """An HTTP forward proxy. ``delay`` seconds pass before each answer; ``corrupt`` answers
    every request with garbage, ``corrupt_paths`` those for a path starting with one of them;
    ``hang_paths``: those are never answered, ``cut_paths`` answered with a body cut short;
    ``not_found`` answers every request with a plain 404 of its own (no ``Via``, nothing
    that names it); ``credentials`` (user, password) are required when set."""

    def __init__(
        self,
        *,
        delay: float = 0.0,
        corrupt: bool = False,
        corrupt_paths: tuple[str, ...] = (),
        hang_paths: tuple[str, ...] = (),
        cut_paths: tuple[str, ...] = (),
        not_found: bool = False,
        credentials: tuple[str, str] | None = None,
        resolve: dict[str, str] | None = None,
    ) -> None:
        super().__init__()
        self.corrupt_paths = corrupt_paths
        self.hang_paths = hang_paths
        self.cut_paths = cut_paths
        self.not_found = not_found
        self.resolve = resolve or {}
        """``*.test`` or ``host`` -> address: names this proxy resolves itself."""
        self.delay = delay
        self.corrupt = corrupt
        self.credentials = credentials

    @property
    def url(self) -> str:
        scheme = "http" if self.tls is None else "https"
        if self.credentials is None:
            return f"{scheme}://127.0.0.1:{self.port}"
        user, password = self.credentials
        return f"{scheme}://{user}:{password}@127.0.0.1:{self.port}"

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        if len(head) > _MAX_HEAD:
            return
        line, *lines = head.decode("latin-1").split("\r\n")
        method, target, _ = line.split(" ", 2)
        headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in lines)}
        if self.credentials is not None:
            token = base64.b64encode(":".join(self.credentials).encode()).decode()
            if headers.get("proxy-authorization") != f"Basic {token}":
                writer.write(
                    b"HTTP/1.1 407 Proxy Authentication Required\r\n"
                    b'Proxy-Authenticate: Basic realm="test"\r\nContent-Length: 0\r\n'
                    b"Connection: close\r\n\r\n"
                )
                await writer.drain()
                return
        self.requests += 1
        self.targets.append(target)
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.not_found:
            writer.write(
                b"HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\nContent-Length: 9\r\n"
                b"Connection: close\r\n\r\nnot found"
            )
            await writer.drain()
            return
        if self.cut_paths and urlsplit(target).path.startswith(self.cut_paths):
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"x" * 2500)
            await writer.drain()
            return
        if self.hang_paths and urlsplit(target).path.startswith(self.hang_paths):
            await reader.read()  # until the client gives up
            return
        if self.corrupt or (
            self.corrupt_paths and urlsplit(target).path.startswith(self.corrupt_paths)
        ):
            writer.write(b"HTTP/1.1 2\x00\x00 garbled\r\n\x01\x02\x03\r\n\r\nnot a page")
            await writer.drain()
            return
        if method == "CONNECT":
            host, _, port = target.rpartition(":")
            origin = await asyncio.open_connection(self._address(host), int(port))
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            await _splice((reader, writer), origin)
            return
        parts = urlsplit(target)
        origin = await asyncio.open_connection(
            self._address(parts.hostname or ""), parts.port or 80
        )
        self._writers.add(origin[1])  # `stop` drops it too: a site may never answer
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        kept = [
            h
            for h in lines
            if h and not h.lower().startswith(("proxy-", "connection:", "keep-alive:"))
        ]
        origin[1].write(
            "\r\n".join([f"{method} {path} HTTP/1.1", *kept, "Connection: close", "", ""]).encode(
                "latin-1"
            )
        )
        length = int(headers.get("content-length") or 0)
        if length:  # a POST's body (a login form, a token request)
            origin[1].write(await reader.readexactly(min(length, _MAX_HEAD)))
        await origin[1].drain()
        await _pipe(origin[0], writer)
        origin[1].close()
        self._writers.discard(origin[1])

    def _address(self, host: str) -> str:
        for name, address in self.resolve.items():
            if host == name or (name.startswith("*.") and host.endswith(name[1:])):
                return address
        return host


class Socks5Proxy(_Server):
    """A SOCKS5 server (CONNECT only), with user name and password when ``credentials``."""

    def __init__(self, credentials: tuple[str, str] | None = None) -> None:
        super().__init__()
        self.credentials = credentials

    @property
    def url(self) -> str:
        if self.credentials is None:
            return f"socks5://127.0.0.1:{self.port}"
        user, password = self.credentials
        return f"socks5://{user}:{password}@127.0.0.1:{self.port}"

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        version, count = await reader.readexactly(2)
        methods = await reader.readexactly(count)
        want = 2 if self.credentials is not None else 0
        if version != 5 or want not in methods:
            writer.write(b"\x05\xff")
            return
        writer.write(bytes([5, want]))
        if self.credentials is not None:
            _, size = await reader.readexactly(2)
            user = (await reader.readexactly(size)).decode()
            (size,) = await reader.readexactly(1)
            password = (await reader.readexactly(size)).decode()
            ok = (user, password) == self.credentials
            writer.write(b"\x01\x00" if ok else b"\x01\x01")
            if not ok:
                return
        _, command, _, kind = await reader.readexactly(4)
        if kind == 1:
            host = socket.inet_ntoa(await reader.readexactly(4))
        elif kind == 3:
            (size,) = await reader.readexactly(1)
            host = (await reader.readexactly(size)).decode()
        else:
            host = socket.inet_ntop(socket.AF_INET6, await reader.readexactly(16))
        (port,) = struct.unpack("!H", await reader.readexactly(2))
        if command != 1:
            writer.write(b"\x05\x07\x00\x01" + bytes(6))
            return
        self.requests += 1
        self.targets.append(f"{host}:{port}")
        try:
            origin = await asyncio.open_connection(host, port)
        except OSError:
            writer.write(b"\x05\x05\x00\x01" + bytes(6))
            return
        writer.write(b"\x05\x00\x00\x01" + bytes(6))
        await _splice((reader, writer), origin)


async def _main() -> None:
    parser = argparse.ArgumentParser(description="an HTTP forward proxy on 127.0.0.1")
    parser.add_argument("--port", type=int, default=3128)
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before each answer")
    parser.add_argument("--resolve", action="append", default=[], metavar="HOST=IP")
    parser.add_argument("--user")
    parser.add_argument("--password")
    args = parser.parse_args()
    resolve = dict(item.split("=", 1) for item in args.resolve)
    credentials = (args.user, args.password) if args.user else None
    proxy = HttpProxy(delay=args.delay, credentials=credentials, resolve=resolve)
    proxy.port = args.port
    await proxy.start()
    print(f"proxy on 127.0.0.1:{proxy.port}", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(_main())
