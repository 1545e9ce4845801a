"""Trap listeners for the rendering scope tests: TCP servers and UDP sockets on loopback
addresses and ports no crawled URL names, each recording whatever reaches it (a connection,
its first bytes, a datagram). A rendered page that reaches one has escaped gossamer's router.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field


@dataclass
class Trap:
    """One listening address and what reached it."""

    name: str
    kind: str
    """``tcp`` or ``udp``."""
    host: str
    port: int = 0
    hits: list[bytes] = field(default_factory=list)
    """The first bytes of each connection (TCP) or each datagram (UDP)."""

    @property
    def address(self) -> str:
        """``host:port``."""
        return f"{self.host}:{self.port}"


class _Datagrams(asyncio.DatagramProtocol):
    def __init__(self, trap: Trap) -> None:
        self._trap = trap

    def datagram_received(self, data: bytes, addr: tuple[str | object, int]) -> None:
        self._trap.hits.append(data[:64])


class Traps:
    """Named traps, opened together and closed together."""

    def __init__(self) -> None:
        self.traps: dict[str, Trap] = {}
        self._servers: list[asyncio.Server] = []
        self._transports: list[asyncio.BaseTransport] = []
        self._connections: set[asyncio.Task[None]] = set()

    def __getitem__(self, name: str) -> Trap:
        return self.traps[name]

    def hit(self) -> dict[str, list[bytes]]:
        """The traps something reached, by name, with what arrived."""
        return {name: trap.hits for name, trap in self.traps.items() if trap.hits}

    async def tcp(self, name: str, host: str) -> Trap:
        """A TCP server on a free port of ``host``."""
        trap = Trap(name, "tcp", host)

        async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            trap.hits.append(b"(connected)")
            with contextlib.suppress(TimeoutError, OSError):
                async with asyncio.timeout(1.0):
                    trap.hits[-1] = await reader.read(64) or trap.hits[-1]
            writer.close()

        server = await asyncio.start_server(accept, host, 0)
        self._servers.append(server)
        trap.port = server.sockets[0].getsockname()[1]
        self.traps[name] = trap
        return trap

    async def udp(self, name: str, host: str) -> Trap:
        """A UDP socket on a free port of ``host``."""
        trap = Trap(name, "udp", host)
        loop = asyncio.get_running_loop()
        transport, _ = await loop.create_datagram_endpoint(
            lambda: _Datagrams(trap), local_addr=(host, 0), family=socket.AF_INET
        )
        self._transports.append(transport)
        trap.port = transport.get_extra_info("sockname")[1]
        self.traps[name] = trap
        return trap

    async def close(self) -> None:
        """Stop every trap."""
        for server in self._servers:
            server.close()
        for server in self._servers:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(2.0):
                    await server.wait_closed()
        for transport in self._transports:
            transport.close()


@contextlib.asynccontextmanager
async def open_traps() -> AsyncIterator[Traps]:
    """An empty set of traps, closed on exit."""
    traps = Traps()
    try:
        yield traps
    finally:
        await traps.close()
