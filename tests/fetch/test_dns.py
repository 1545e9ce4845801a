"""Tests for the caching resolver and the --resolve style overrides."""

from __future__ import annotations

import asyncio
import ipaddress
import socket

import pytest
from aiohttp.abc import AbstractResolver, ResolveResult

from gossamer.fetch.dns import CachingResolver, DnsStats, parse_resolve_overrides


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class FakeResolver(AbstractResolver):
    """Answers from a table, counts calls, can fail or block until released."""

    def __init__(self, table: dict[str, str] | None = None) -> None:
        self.table = table if table is not None else {"example.com": "192.0.2.1"}
        self.calls: list[str] = []
        self.gate: asyncio.Event | None = None
        self.closed = False

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        self.calls.append(host)
        if self.gate is not None:
            await self.gate.wait()
        if host not in self.table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [
            ResolveResult(
                hostname=host,
                host=self.table[host],
                port=port,
                family=socket.AF_INET,
                proto=0,
                flags=0,
            )
        ]

    async def close(self) -> None:
        self.closed = True


# --- parse_resolve_overrides -------------------------------------------------------------


def test_parse_exact_wildcard_and_catch_all() -> None:
    overrides = parse_resolve_overrides(
        ["Example.COM.=192.0.2.7", "*.test=127.0.0.1", "*.a.test=[::1]", "*=10.0.0.1"]
    )
    assert overrides.lookup("example.com") == (ipaddress.ip_address("192.0.2.7"),)
    assert overrides.lookup("EXAMPLE.com.") == (ipaddress.ip_address("192.0.2.7"),)
    assert overrides.lookup("x.test") == (ipaddress.ip_address("127.0.0.1"),)
    assert overrides.lookup("deep.x.test") == (ipaddress.ip_address("127.0.0.1"),)
    # the longer wildcard wins
    assert overrides.lookup("b.a.test") == (ipaddress.ip_address("::1"),)
    # *.test does not match test itself, so the catch-all answers
    assert overrides.lookup("test") == (ipaddress.ip_address("10.0.0.1"),)
    assert overrides.lookup("other.org") == (ipaddress.ip_address("10.0.0.1"),)
    assert len(overrides) == 4


def test_wildcard_does_not_match_apex() -> None:
    overrides = parse_resolve_overrides(["*.test=127.0.0.1"])
    assert overrides.lookup("test") is None
    assert overrides.lookup("nottest") is None
    assert overrides.lookup("a.test") is not None


def test_exact_beats_wildcard_and_addresses_accumulate() -> None:
    overrides = parse_resolve_overrides(
        ["*.test=127.0.0.1", "a.test=127.0.0.2,127.0.0.3", "a.test=127.0.0.3", "a.test=::1"]
    )
    assert [str(a) for a in overrides.lookup("a.test") or ()] == [
        "127.0.0.2",
        "127.0.0.3",
        "::1",
    ]


@pytest.mark.parametrize(
    "item",
    [
        "example.com",
        "example.com:127.0.0.1",
        "=127.0.0.1",
        "example.com=",
        "example.com=localhost",
        "example.com=999.1.1.1",
        "example.com=127.0.0.1,",
        "example.com=[::1",
        "example.com=[127.0.0.1]",  # brackets hold an IPv6 address only
        "example.com=fe80::1%eth0",  # a zone id: no URL's host has one
        "*example.com=127.0.0.1",
        "a.*.com=127.0.0.1",
        "ex ample.com=127.0.0.1",
        "-bad.com=127.0.0.1",
        "*.=127.0.0.1",
    ],
)
def test_malformed_overrides_raise_value_error(item: str) -> None:
    with pytest.raises(ValueError, match="invalid resolve override"):
        parse_resolve_overrides([item])


def test_an_override_s_address_is_written_in_its_usual_form() -> None:
    """A setting's value, not a URL's host: ``127.1`` is more likely a typo."""
    overrides = parse_resolve_overrides(["a.test=127.0.0.1", "c.test=[::1]", "d.test=::1"])
    assert [str(overrides.lookup(h)[0]) for h in ("a.test", "c.test", "d.test")] == [
        "127.0.0.1",
        "::1",
        "::1",
    ]
    for short in ("127.1", "0x7f.0.0.1", "2130706433", "127.0.0.1."):
        with pytest.raises(ValueError, match="is not an IPv4 or IPv6 address"):
            parse_resolve_overrides([f"a.test={short}"])


# --- CachingResolver -------------------------------------------------------------------


async def test_cache_hits_misses_and_ttl_expiry() -> None:
    clock, real = FakeClock(), FakeResolver()
    resolver = CachingResolver(real, ttl=300, clock=clock)
    first = await resolver.resolve("example.com", 80)
    assert first[0]["host"] == "192.0.2.1"
    assert first[0]["port"] == 80
    second = await resolver.resolve("Example.com.", 8080)
    assert second[0]["port"] == 8080
    assert second[0]["hostname"] == "Example.com."
    assert real.calls == ["example.com"]
    assert resolver.stats() == DnsStats(
        hits=1, misses=1, failures=0, entries=1, coalesced=0, overrides=0, in_flight=0
    )

    clock.now += 299.9
    await resolver.resolve("example.com", 80)
    assert len(real.calls) == 1
    clock.now += 0.2
    await resolver.resolve("example.com", 80)
    assert len(real.calls) == 2
    stats = resolver.stats()
    assert (stats.hits, stats.misses, stats.entries) == (2, 2, 1)


async def test_family_is_part_of_the_key() -> None:
    real = FakeResolver()
    resolver = CachingResolver(real, clock=FakeClock())
    await resolver.resolve("example.com", 80, socket.AF_INET)
    await resolver.resolve("example.com", 80, socket.AF_UNSPEC)
    assert len(real.calls) == 2


async def test_failures_are_negatively_cached() -> None:
    clock, real = FakeClock(), FakeResolver({})
    resolver = CachingResolver(real, negative_ttl=5, clock=clock)
    for _ in range(3):
        with pytest.raises(socket.gaierror):
            await resolver.resolve("gone.example", 80)
    assert real.calls == ["gone.example"]
    clock.now += 5.1
    with pytest.raises(socket.gaierror):
        await resolver.resolve("gone.example", 80)
    assert len(real.calls) == 2
    stats = resolver.stats()
    assert (stats.hits, stats.misses, stats.failures) == (2, 2, 2)


async def test_concurrent_lookups_are_coalesced() -> None:
    real = FakeResolver()
    real.gate = asyncio.Event()
    resolver = CachingResolver(real, clock=FakeClock())
    waiters = [asyncio.create_task(resolver.resolve("example.com", 80)) for _ in range(10)]
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert resolver.stats().in_flight == 1
    real.gate.set()
    results = await asyncio.gather(*waiters)
    assert all(r[0]["host"] == "192.0.2.1" for r in results)
    assert real.calls == ["example.com"]
    stats = resolver.stats()
    assert (stats.misses, stats.coalesced, stats.in_flight) == (1, 9, 0)


async def test_cancelling_a_waiter_does_not_cancel_the_lookup() -> None:
    real = FakeResolver()
    real.gate = asyncio.Event()
    resolver = CachingResolver(real, clock=FakeClock())
    first = asyncio.create_task(resolver.resolve("example.com", 80))
    second = asyncio.create_task(resolver.resolve("example.com", 80))
    await asyncio.sleep(0)
    first.cancel()
    real.gate.set()
    assert (await second)[0]["host"] == "192.0.2.1"
    assert first.cancelled()
    assert resolver.stats().entries == 1


async def test_slow_lookup_times_out_as_gaierror() -> None:
    real = FakeResolver()
    real.gate = asyncio.Event()  # never set
    resolver = CachingResolver(real, timeout=0.05, clock=FakeClock())
    with pytest.raises(socket.gaierror, match="timed out"):
        await resolver.resolve("example.com", 80)
    assert resolver.stats().failures == 1


async def test_overrides_never_reach_the_real_resolver() -> None:
    real = FakeResolver({})
    resolver = CachingResolver(real, overrides=["*.test=127.0.0.1,::1"], clock=FakeClock())
    both = await resolver.resolve("anything.test", 8080, socket.AF_UNSPEC)
    assert [(r["host"], r["family"], r["port"]) for r in both] == [
        ("127.0.0.1", socket.AF_INET, 8080),
        ("::1", socket.AF_INET6, 8080),
    ]
    v4 = await resolver.resolve("anything.test", 80, socket.AF_INET)
    assert [r["host"] for r in v4] == ["127.0.0.1"]
    assert real.calls == []
    stats = resolver.stats()
    assert (stats.overrides, stats.misses, stats.entries) == (2, 0, 0)


async def test_override_of_the_wrong_family_fails() -> None:
    resolver = CachingResolver(FakeResolver({}), overrides=["v6.test=::1"])
    with pytest.raises(socket.gaierror):
        await resolver.resolve("v6.test", 80, socket.AF_INET)


async def test_max_entries_evicts_the_oldest() -> None:
    real = FakeResolver({f"h{i}.example": f"192.0.2.{i}" for i in range(5)})
    resolver = CachingResolver(real, max_entries=3, clock=FakeClock())
    for i in range(5):
        await resolver.resolve(f"h{i}.example", 80)
    assert resolver.stats().entries == 3
    await resolver.resolve("h0.example", 80)
    assert real.calls.count("h0.example") == 2
    resolver.clear()
    assert resolver.stats().entries == 0


async def test_an_answer_resolved_again_counts_as_the_newest() -> None:
    """h0 expired and resolved again goes after h1 and h2: h3 evicts h1, not h0."""
    real = FakeResolver({f"h{i}.example": f"192.0.2.{i}" for i in range(4)})
    clock = FakeClock()
    resolver = CachingResolver(real, ttl=10.0, max_entries=3, clock=clock)
    await resolver.resolve("h0.example", 80)
    clock.now += 5
    for name in ("h1.example", "h2.example"):
        await resolver.resolve(name, 80)
    clock.now += 5
    await resolver.resolve("h0.example", 80)  # expired: resolved again
    await resolver.resolve("h3.example", 80)
    for name in ("h0.example", "h2.example", "h3.example", "h1.example"):
        await resolver.resolve(name, 80)
    assert real.calls == [f"h{i}.example" for i in (0, 1, 2, 0, 3, 1)]


async def test_injected_resolver_is_not_closed() -> None:
    real = FakeResolver()
    resolver = CachingResolver(real)
    await resolver.close()
    assert not real.closed


async def test_default_resolver_resolves_localhost() -> None:
    resolver = CachingResolver()
    try:
        results = await resolver.resolve("localhost", 80, socket.AF_INET)
        assert results[0]["host"] == "127.0.0.1"
        assert resolver.stats().misses == 1
    finally:
        await resolver.close()


def test_invalid_arguments_raise() -> None:
    with pytest.raises(ValueError):
        CachingResolver(FakeResolver(), timeout=0)
    with pytest.raises(ValueError, match="invalid resolve override"):
        CachingResolver(FakeResolver(), overrides=["nope"])
