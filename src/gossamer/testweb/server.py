"""``TestWebServer``: one raw asyncio HTTP/1.1 server on loopback for every virtual host.

Raw streams rather than a framework, because the hostile endpoints need to hang, drop,
reset and mis-frame at will. Keep-alive and pipelining are supported; every request is
recorded in ``server.log`` (and, optionally, as JSON lines in a file).
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Self

from gossamer.testweb.model import origin
from gossamer.testweb.protocol import (
    Action,
    BadRequest,
    Reply,
    Request,
    encode_head,
    page,
    parse_head,
    write_to,
)
from gossamer.testweb.router import Router
from gossamer.testweb.web import Web

HEAD_LIMIT = 64 * 1024
RESET_GRACE = 0.05  # lets the client read the partial body before the RST arrives


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One request as the server saw it. ``status`` is None when nothing was answered."""

    host: str
    path: str  # the request target as sent: path plus query
    method: str
    time: float  # time.time() when the request head had arrived
    monotonic: float  # time.monotonic() at the same moment
    status: int | None
    user_agent: str
    port: int

    @property
    def url(self) -> str:
        """``http://host:port/path?query`` (the target as sent, not canonicalised)."""
        return origin(self.host, self.port) + self.path


@dataclass(frozen=True, slots=True)
class ServerStats:
    """A snapshot of the server's counters."""

    requests: int
    open_connections: int
    total_connections: int
    bytes_sent: int


class TestWebServer:
    """Serves a ``Web`` on ``host:port`` (port 0 picks a free one), keyed by Host header.

    Use ``async with TestWebServer(web) as server:`` or ``start()``/``stop()``. ``stop()``
    closes every connection at once, hanging and trickling ones included.
    """

    __test__ = False  # not a pytest test class despite the name

    def __init__(
        self,
        web: Web,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        log_path: str | Path | None = None,
        flaky_failures: int = 2,
        retry_after: int = 1,
    ) -> None:
        self.web = web
        self.host = host
        self.log: list[LogEntry] = []
        self._requested_port = port
        self._log_path = Path(log_path) if log_path is not None else None
        self._log_file: IO[str] | None = None
        self._flaky_failures = flaky_failures
        self._retry_after = retry_after
        self._server: asyncio.Server | None = None
        self._router: Router | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._total_connections = 0
        self._bytes_sent = 0
        self._port = 0

    @property
    def port(self) -> int:
        """The port the server listens on (valid once started)."""
        if not self._port:
            raise RuntimeError("server not started")
        return self._port

    def url(self, host: str | int, path: str = "/") -> str:
        """``http://<host>:<port><path>``; ``host`` is a name or a host index."""
        name = host if isinstance(host, str) else self.web.host_names[host]
        return origin(name, self.port) + path

    def stats(self) -> ServerStats:
        """Current counters."""
        return ServerStats(
            len(self.log), len(self._tasks), self._total_connections, self._bytes_sent
        )

    async def start(self) -> None:
        """Start listening."""
        self._server = await asyncio.start_server(
            self._on_connect, self.host, self._requested_port, limit=HEAD_LIMIT
        )
        self._port = self._server.sockets[0].getsockname()[1]
        self._router = Router(
            self.web,
            self._port,
            flaky_failures=self._flaky_failures,
            retry_after=self._retry_after,
        )
        self._open_log()

    async def stop(self) -> None:
        """Stop listening and close every open connection; idempotent."""
        if self._server is None:
            return
        self._server.close()
        while self._tasks:
            tasks = list(self._tasks)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        await self._server.wait_closed()
        self._server = None
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    def _open_log(self) -> None:
        if self._log_path is not None:
            self._log_file = self._log_path.open("a", encoding="utf-8")

    def _record(self, req: Request, status: int | None, arrived: tuple[float, float]) -> None:
        agent = req.headers.get("user-agent", "")
        entry = LogEntry(req.host, req.target, req.method, *arrived, status, agent, self._port)
        self.log.append(entry)
        if self._log_file is not None:
            self._log_file.write(json.dumps(asdict(entry)) + "\n")
            self._log_file.flush()

    async def _on_connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._total_connections += 1
        graceful = False
        try:
            graceful = await self._serve(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:
            # Only stop() cancels a connection: it ends here. Raised on, Python 3.11's stream
            # callback would log a traceback for every connection open at the stop.
            pass
        finally:
            self._tasks.discard(task)
            if graceful:
                writer.close()
            else:
                writer.transport.abort()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Answer requests until the connection should end; False means abort it."""
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError:
                return True
            except asyncio.LimitOverrunError:
                await self._send(writer, page(431, "Request Header Fields Too Large"), False)
                return True
            arrived = (time.time(), time.monotonic())
            try:
                req = parse_head(head)
                await self._skip_body(reader, req)
            except BadRequest:
                await self._send(writer, page(400, "Bad Request"), False)
                return True
            assert self._router is not None
            reply = await self._router(req)
            self._record(req, reply.status, arrived)
            if not await self._perform(req, reply, reader, writer):
                return reply.action is not Action.RESET

    async def _skip_body(self, reader: asyncio.StreamReader, req: Request) -> None:
        if "transfer-encoding" in req.headers:
            raise BadRequest("request bodies must use Content-Length")
        length = req.headers.get("content-length", "0")
        if not length.isdigit():
            raise BadRequest("bad Content-Length")
        if int(length):
            await reader.readexactly(int(length))

    async def _perform(
        self,
        req: Request,
        reply: Reply,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> bool:
        """Carry out ``reply``; returns whether the connection stays open."""
        if reply.delay:
            await asyncio.sleep(reply.delay)
        if reply.action is Action.DROP:
            return False
        if reply.action is Action.HANG:
            while await reader.read(HEAD_LIMIT):
                pass
            return False
        keep = req.keep_alive and not reply.close and reply.action is Action.RESPOND
        await self._send(writer, reply, keep, head_only=req.method == "HEAD")
        if reply.action is Action.RESET:
            await asyncio.sleep(RESET_GRACE)
            sock = writer.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()
            return False
        return keep

    async def _send(
        self, writer: asyncio.StreamWriter, reply: Reply, keep: bool, head_only: bool = False
    ) -> None:
        data = encode_head(reply, keep) + (b"" if head_only else reply.body)
        write_to(writer, data)
        self._bytes_sent += len(data)
        if reply.stream is not None and not head_only:
            async for piece in reply.stream():
                write_to(writer, piece)
                self._bytes_sent += len(piece)
                await writer.drain()
        await writer.drain()
