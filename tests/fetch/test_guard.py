"""The address guard: its verdicts, the guard of a crawl, and the guard in a real `Fetcher`
against a raw HTTP server on 127.0.0.1 that counts the connections and requests it gets.

Every test runs behind a tripwire (`no_connections_off_loopback`): a connection to anything
but loopback fails the test before a packet leaves, so a broken guard cannot reach
169.254.169.254 or 10.0.0.1 from here.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import socket
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohappyeyeballs
import pytest
from aiohttp.abc import AbstractResolver, ResolveResult

from gossamer.crawl import run_crawl
from gossamer.fetch import FetchConfig, Fetcher
from gossamer.fetch.guard import AddressGuard, BlockedAddress, GuardedResolver
from gossamer.outcomes import Action, RetryPolicy, classify, is_failure
from gossamer.settings import load_settings

FAST = {"connect_timeout": 30.0, "read_timeout": 5.0, "total_timeout": 30.0}
NOTHING_NAMED = AddressGuard()
LOCAL_NAMED = AddressGuard(frozenset({"ok.test"}))


@pytest.fixture(autouse=True)
def no_connections_off_loopback(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """A tripwire under aiohttp: connecting to a non-loopback address raises (and is logged)
    instead of sending anything; loopback connections go through unchanged."""
    attempted: list[str] = []
    real = aiohappyeyeballs.start_connection

    async def start_connection(addr_infos: Any, **kwargs: Any) -> socket.socket:
        for info in addr_infos:
            address = info[4][0]
            if not ipaddress.ip_address(address).is_loopback:
                attempted.append(address)
                raise AssertionError(f"connection attempted to {address}")
        return await real(addr_infos, **kwargs)

    monkeypatch.setattr(aiohappyeyeballs, "start_connection", start_connection)
    yield attempted
    assert attempted == []


# --- verdicts ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "address",
    [
        "0.0.0.0",
        "0.1.2.3",
        "::",
        "169.254.169.254",
        "169.254.0.1",
        "fe80::1",
        "224.0.0.1",
        "239.255.255.250",
        "ff02::1",
        "240.0.0.1",
        "255.255.255.255",
        "fd00:ec2::254",
        "100.100.100.200",
        "::ffff:169.254.169.254",
        "64:ff9b::a9fe:a9fe",
        "2002:a9fe:a9fe::",
        "::169.254.169.254",
    ],
)
def test_never_even_for_a_named_host_or_with_allow_private(address: str) -> None:
    for guard in (
        NOTHING_NAMED,
        AddressGuard(frozenset({"h.test"})),
        AddressGuard(allow_private=True),
    ):
        reason = guard.verdict("h.test", address)
        assert reason is not None and "never" in reason, (guard, address)


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "127.9.9.9",
        "::1",
        "10.0.0.1",
        "172.16.0.1",
        "172.31.255.255",
        "192.168.1.1",
        "100.64.0.1",
        "fc00::1",
        "fd12:3456::1",
        "::ffff:127.0.0.1",
        "::ffff:10.0.0.1",
        "64:ff9b::7f00:1",
        "64:ff9b::a00:1",
        "2002:7f00:0001::",
        "2002:c0a8:0101::1",
        "::127.0.0.1",
        "::10.0.0.1",
    ],
)
def test_private_and_loopback_only_for_named_hosts(address: str) -> None:
    reason = NOTHING_NAMED.verdict("h.test", address)
    assert reason is not None and "private or loopback" in reason
    assert AddressGuard(frozenset({"h.test"})).verdict("h.test", address) is None
    assert AddressGuard(frozenset({"h.test"})).verdict("other.test", address) is not None
    assert AddressGuard(allow_private=True).verdict("h.test", address) is None


@pytest.mark.parametrize(
    "address", ["93.184.216.34", "8.8.8.8", "2606:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808"]
)
def test_public_addresses_are_allowed_for_any_host(address: str) -> None:
    assert NOTHING_NAMED.verdict("anything.example", address) is None
    assert NOTHING_NAMED.verdict("anything.example", ipaddress.ip_address(address)) is None


def test_a_host_that_is_not_an_address_is_refused() -> None:
    assert NOTHING_NAMED.verdict("h.test", "localhost") == "not an IP address"


def test_check_url_judges_ip_literals_only() -> None:
    guard = AddressGuard(frozenset({"127.0.0.2", "::1"}))
    assert guard.check_url("http://127.0.0.1:8080/") is not None
    assert guard.check_url("http://127.0.0.2:8080/") is None
    assert guard.check_url("http://[::1]:8080/") is None
    assert guard.check_url("http://[::ffff:127.0.0.1]/") is not None
    assert guard.check_url("http://169.254.169.254/latest/meta-data/") is not None
    assert guard.check_url("http://[fe80::1%25eth0]/") is not None
    assert guard.check_url("http://8.8.8.8/") is None
    assert guard.check_url("http://name.test/") is None  # the resolver's answers are judged
    assert guard.check_url("http://[::1/") is None  # unparsable: the fetch fails on its own


# --- the guard of a crawl ------------------------------------------------------------------


def test_an_allowed_domain_names_no_address_under_it() -> None:
    """``--allow-domain 1`` names no address that ends in ``.1``; an address allowed in any
    form a URL's host has (``[::1]``, ``127.1``) is named."""
    numbers = AddressGuard.for_crawl(["a.test"], ["1", "0.1"])
    assert numbers.verdict("127.0.0.1", "127.0.0.1") is not None
    assert numbers.verdict("10.0.0.1", "10.0.0.1") is not None
    addresses = AddressGuard.for_crawl(["a.test"], ["[::1]", "127.1"])
    assert addresses.verdict("::1", "::1") is None
    assert addresses.verdict("127.0.0.1", "127.0.0.1") is None
    assert addresses.check_url("http://[::1]:8080/") is None
    assert addresses.check_url("http://127.0.0.2:8080/") is not None


def test_for_crawl_names_seed_hosts_allowed_domains_and_resolve_names() -> None:
    guard = AddressGuard.for_crawl(
        ["Seed.TEST.", "[::1]", "127.0.0.5"],
        allow_domains=["Allowed.Test"],
        resolve=["exact.test=127.0.0.1", "*.wild.test=127.0.0.1"],
    )
    for host in ("seed.test", "SEED.test.", "::1", "[::1]", "127.0.0.5"):
        assert guard.named(host), host
    for host in ("allowed.test", "a.allowed.test", "b.a.allowed.test", "exact.test"):
        assert guard.named(host), host
    for host in ("x.wild.test", "y.x.wild.test"):
        assert guard.named(host), host
    for host in (
        "other.test",
        "notallowed.test",
        "sub.seed.test",
        "sub.exact.test",
        "test",
        "wild.test",
    ):  # *.wild.test names the subdomains only, as --resolve maps them
        assert not guard.named(host), host
    assert guard.verdict("a.allowed.test", "10.1.2.3") is None
    assert guard.verdict("other.test", "10.1.2.3") is not None
    assert not guard.allow_private


def test_for_crawl_with_a_bare_star_names_every_host() -> None:
    guard = AddressGuard.for_crawl([], resolve=["*=127.0.0.1"])
    assert guard.named("anything.example") and guard.named("x")
    assert guard.verdict("anything.example", "127.0.0.1") is None
    assert guard.verdict("anything.example", "169.254.169.254") is not None


def test_for_crawl_allow_private() -> None:
    guard = AddressGuard.for_crawl([], allow_private=True)
    assert guard.verdict("anything.example", "192.168.0.1") is None
    assert guard.verdict("anything.example", "fd00:ec2::254") is not None


# --- the resolver wrapper ------------------------------------------------------------------


class ScriptedResolver(AbstractResolver):
    """Answers each look-up with the next list of addresses of ``answers`` (the last one
    repeats): a DNS server that rebinds a name between look-ups."""

    def __init__(self, *answers: list[str]) -> None:
        self.answers = list(answers)
        self.calls = 0

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        addresses = self.answers[min(self.calls, len(self.answers) - 1)]
        self.calls += 1
        return [
            ResolveResult(
                hostname=host,
                host=address,
                port=port,
                family=socket.AF_INET6 if ":" in address else socket.AF_INET,
                proto=0,
                flags=socket.AI_NUMERICHOST,
            )
            for address in addresses
        ]

    async def close(self) -> None:
        pass


async def test_guarded_resolver_refuses_a_name_rebound_to_a_private_address() -> None:
    """Public first, private on the next look-up: the second answer is refused."""
    resolver = GuardedResolver(ScriptedResolver(["93.184.216.34"], ["10.0.0.1"]), NOTHING_NAMED)
    assert [r["host"] for r in await resolver.resolve("rebind.example", 80)] == ["93.184.216.34"]
    with pytest.raises(BlockedAddress, match=r"10\.0\.0\.1"):
        await resolver.resolve("rebind.example", 80)
    assert resolver.blocked == 1


async def test_guarded_resolver_drops_forbidden_answers_and_keeps_the_others() -> None:
    inner = ScriptedResolver(["169.254.169.254", "127.0.0.1", "::ffff:169.254.169.254"])
    resolver = GuardedResolver(inner, AddressGuard(frozenset({"mixed.test"})))
    assert [r["host"] for r in await resolver.resolve("mixed.test", 80)] == ["127.0.0.1"]
    assert resolver.blocked == 0


async def test_guarded_resolver_with_no_answer_raises_blocked() -> None:
    resolver = GuardedResolver(ScriptedResolver([]), NOTHING_NAMED)
    with pytest.raises(BlockedAddress, match="no address"):
        await resolver.resolve("empty.test", 80)


# --- through a real Fetcher ----------------------------------------------------------------


class CountingServer:
    """A raw HTTP/1.1 server on 127.0.0.1: counts accepted connections and requests, answers
    every request with ``200 ok`` and closes the connection."""

    def __init__(self) -> None:
        self.connections = 0
        self.requests: list[bytes] = []
        self.port = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()
            return
        self.requests.append(head)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        await writer.drain()
        writer.close()


@asynccontextmanager
async def counting_server() -> AsyncIterator[CountingServer]:
    server = CountingServer()
    tcp = await asyncio.start_server(server.handle, "127.0.0.1", 0)
    server.port = tcp.sockets[0].getsockname()[1]
    try:
        yield server
    finally:
        tcp.close()
        await tcp.wait_closed()


def resolving(*overrides: str) -> FetchConfig:
    return FetchConfig(resolve=overrides, **FAST)  # type: ignore[arg-type]


async def test_fetcher_reaches_a_named_host_and_not_an_unnamed_one() -> None:
    config = resolving("ok.test=127.0.0.1", "evil.test=127.0.0.1")
    async with counting_server() as server, Fetcher(config, guard=LOCAL_NAMED) as fetcher:
        ok = await fetcher.fetch(f"http://ok.test:{server.port}/")
        assert (ok.status, ok.body, ok.error) == (200, b"ok", None)
        assert (server.connections, len(server.requests)) == (1, 1)

        evil = await fetcher.fetch(f"http://evil.test:{server.port}/")
        assert evil.error == "blocked-address"
        assert evil.status is None and evil.body == b""
        assert (server.connections, len(server.requests)) == (1, 1)
        assert fetcher.stats().errors == {"blocked-address": 1}


async def test_fetcher_without_a_guard_reaches_any_host() -> None:
    """The contrast to the test above: the same fetch with no guard gets through."""
    config = resolving("evil.test=127.0.0.1")
    async with counting_server() as server, Fetcher(config) as fetcher:
        result = await fetcher.fetch(f"http://evil.test:{server.port}/")
    assert result.status == 200
    assert server.connections == 1


async def test_fetcher_judges_ip_literals_that_no_resolver_sees() -> None:
    async with counting_server() as server:
        async with Fetcher(resolving(), guard=NOTHING_NAMED) as fetcher:
            blocked = await fetcher.fetch(f"http://127.0.0.1:{server.port}/")
        assert (blocked.error, blocked.status) == ("blocked-address", None)
        assert server.connections == 0

        named = AddressGuard(frozenset({"127.0.0.1"}))
        async with Fetcher(resolving(), guard=named) as fetcher:
            allowed = await fetcher.fetch(f"http://127.0.0.1:{server.port}/")
        assert (allowed.status, allowed.error) == (200, None)
        assert server.connections == 1


async def test_fetcher_keeps_loopback_closed_to_an_allowed_domain_of_numbers() -> None:
    """``--allow-domain 1`` names hosts under ``1``: 127.0.0.1 is none of them."""
    guard = AddressGuard.for_crawl(["a.test"], ["1"])
    async with counting_server() as server, Fetcher(resolving(), guard=guard) as fetcher:
        blocked = await fetcher.fetch(f"http://127.0.0.1:{server.port}/")
        assert (blocked.error, blocked.status) == ("blocked-address", None)
        assert server.connections == 0


async def test_fetcher_never_connects_to_metadata_even_for_a_named_host(
    no_connections_off_loopback: list[str],
) -> None:
    """With a 30 s connect timeout, an answer at once shows no connection was tried (and
    the tripwire would have failed the test)."""
    guard = AddressGuard(frozenset({"meta.test"}))
    config = resolving("meta.test=169.254.169.254")
    async with Fetcher(config, guard=guard) as fetcher:
        began = time.monotonic()
        result = await fetcher.fetch("http://meta.test/latest/meta-data/")
        took = time.monotonic() - began
    assert (result.error, result.status) == ("blocked-address", None)
    assert took < 2.0
    assert no_connections_off_loopback == []


async def test_fetcher_refuses_a_name_rebound_after_its_first_connection() -> None:
    """DNS rebinding: the server closes each connection, so the second fetch resolves again;
    its answer, the metadata address, is refused before any connection."""
    resolver = ScriptedResolver(["127.0.0.1"], ["169.254.169.254"])
    guard = AddressGuard(frozenset({"rebind.test"}))
    fetcher = Fetcher(resolving(), resolver=resolver, guard=guard)
    async with counting_server() as server, fetcher:
        first = await fetcher.fetch(f"http://rebind.test:{server.port}/")
        second = await fetcher.fetch(f"http://rebind.test:{server.port}/again")
    assert (first.status, first.error) == (200, None)
    assert (second.status, second.error) == (None, "blocked-address")
    assert resolver.calls == 2
    assert server.connections == 1


def test_blocked_address_is_dropped_without_retries() -> None:
    assert classify(None, "blocked-address", None) is Action.DROP
    assert not is_failure(None, "blocked-address")  # the host did not misbehave
    decision = RetryPolicy().decide(Action.DROP, 0, None, __import__("random").Random(0))
    assert decision.action is Action.DROP
    assert classify(None, "dns", None) is Action.RETRY  # the contrast: a look-up failure


# --- a whole crawl -------------------------------------------------------------------------


async def crawl(tmp_path: Path, seeds: list[str], resolve: list[str]) -> list[dict[str, Any]]:
    """Run `run_crawl` in process (robots.txt obeyed) and return pages.jsonl's records."""
    out = tmp_path / "out"
    settings = {"seeds": seeds, "out": out, "resolve": resolve, "quiet": True, "delay": 0.0}
    stats = await asyncio.wait_for(run_crawl(load_settings(settings, env={})), 20)
    records = [json.loads(line) for line in (out / "pages.jsonl").read_text().splitlines()]
    assert stats.pages == len(records)
    assert json.loads((out / "stats.json").read_text())["pages"] == len(records)
    return records


async def test_a_crawl_reaches_a_host_named_by_resolve(tmp_path: Path) -> None:
    async with counting_server() as server:
        seed = f"http://site.test:{server.port}/"
        records = await crawl(tmp_path, [seed], ["site.test=127.0.0.1"])
    assert [(r["url"], r["status"], r["error"]) for r in records] == [(seed, 200, None)]
    paths = sorted(head.split(b" ")[1] for head in server.requests)
    assert paths == [b"/", b"/robots.txt"]


async def test_a_crawl_of_a_seed_on_the_metadata_address_ends_with_one_blocked_record(
    tmp_path: Path, no_connections_off_loopback: list[str]
) -> None:
    """The seed's robots.txt is blocked too: the URL is not left waiting for robots.txt
    retries, it ends at once as one ``blocked-address`` record."""
    seed = "http://meta.test/latest/meta-data/"
    records = await crawl(tmp_path, [seed], ["meta.test=169.254.169.254"])
    assert [(r["url"], r["status"], r["error"]) for r in records] == [
        (seed, None, "blocked-address")
    ]
    assert no_connections_off_loopback == []
