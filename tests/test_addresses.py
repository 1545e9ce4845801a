"""The one reader of IP literals (`gossamer.addresses`): it reads a host as the WHATWG URL
Standard does, so it agrees with ada (the URL parser every canonical URL comes from) on which
hosts are addresses and which address each is."""

from __future__ import annotations

import ipaddress

import can_ada
import pytest

from gossamer.addresses import domain_key, ip_literal, registrable_domain

ADDRESSES = {
    "127.0.0.1": "127.0.0.1",
    "127.1": "127.0.0.1",
    "0x7f.1": "127.0.0.1",
    "0X7F.0.0.0x1": "127.0.0.1",
    "0177.0.0.1": "127.0.0.1",
    "2130706433": "127.0.0.1",
    "127.0.0.1.": "127.0.0.1",
    "1.2.65535": "1.2.255.255",
    "4294967295": "255.255.255.255",
    "0x": "0.0.0.0",
    "[::1]": "[::1]",
    "[::ffff:127.0.0.1]": "[::ffff:7f00:1]",
    "[0:0:0:0:0:0:0:1]": "[::1]",
}
"""Hosts ada reads as addresses, with the address it reads."""
NOT_ADDRESSES = ["example.org", "1.2.3.4.5", "999.1.1.1", "1.2.3.256", "4294967296", "09",
                 "foo.1", "a.0x1", "1..2", "127.0.0.1..", "[127.0.0.1]", "[fe80::1%eth0]",
                 "[fe80::1%25eth0]", "1e3", "-", ""]  # fmt: skip
"""Hosts that are names, or no host at all, to ada."""


def ada_host(host: str) -> str | None:
    try:
        return can_ada.parse(f"http://{host}/").hostname
    except ValueError:
        return None


@pytest.mark.parametrize(("host", "address"), ADDRESSES.items())
def test_a_host_ada_reads_as_an_address_is_that_address(host: str, address: str) -> None:
    assert ada_host(host) == address
    ip = ip_literal(host)
    assert ip is not None
    assert (str(ip) if ip.version == 4 else f"[{ip.compressed}]") == address


@pytest.mark.parametrize("host", NOT_ADDRESSES)
def test_a_host_ada_reads_as_a_name_or_refuses_is_no_address(host: str) -> None:
    written = ada_host(host)
    if written is not None:
        with pytest.raises(ValueError):
            ipaddress.ip_address(written)
    assert ip_literal(host) is None


def test_a_bare_ipv6_address_is_read_as_a_parsed_url_s_hostname_gives_it() -> None:
    assert ip_literal("::1") == ipaddress.ip_address("::1")
    assert ip_literal("fe80::1%eth0") is None  # a zone id: no URL carries one


def test_hostile_lengths_stay_cheap() -> None:
    assert ip_literal("1" * 100_000) is None
    assert ip_literal("0x" + "0" * 260 + "1") is None  # past 255 characters: not read
    assert ip_literal("0x" + "0" * 200 + "1") == ipaddress.ip_address("0.0.0.1")


def test_an_allowed_domain_is_compared_in_the_form_a_canonical_host_has() -> None:
    assert domain_key("Example.ORG.") == "example.org"
    assert domain_key("[::1]") == "::1"
    assert domain_key("127.1") == "127.0.0.1"
    assert domain_key("[::FFFF:127.0.0.1]") == "::ffff:7f00:1"


def test_a_setting_s_address_is_read_in_its_usual_form_only() -> None:
    assert ip_literal("127.0.0.1", short_forms=False) == ipaddress.ip_address("127.0.0.1")
    assert ip_literal("[::1]", short_forms=False) == ipaddress.ip_address("::1")
    for short in ("127.1", "0x7f.0.0.1", "2130706433", "127.0.0.1.", "1.2.3", "[127.0.0.1]"):
        assert ip_literal(short, short_forms=False) is None


@pytest.mark.parametrize(
    ("host", "domain"),
    [
        ("h17.evil.test", "evil.test"),
        ("www.example.co.uk", "example.co.uk"),
        ("a.b.c.example.com", "example.com"),
        ("alice.github.io", "alice.github.io"),  # the list's private section
        ("co.uk", "co.uk"),  # a public suffix: its own
        ("localhost", "localhost"),  # no registrable part: its own
        ("test", "test"),
        ("127.0.0.1", "127.0.0.1"),  # an address: its own, whatever its last numbers
        ("::1", "::1"),
    ],
)
def test_a_host_s_registrable_domain(host: str, domain: str) -> None:
    assert registrable_domain(host) == domain
