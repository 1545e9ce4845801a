"""IP literals: the one reader of a host, a setting or a header value that may be an address.

A host is an address as the WHATWG URL Standard (what browsers and ada, gossamer's URL parser,
follow) reads it: an IPv6 address in brackets, or an IPv4 address in any of the forms the
standard turns into one (``127.0.0.1``, and ``127.1``, ``0x7f.1``, ``0177.0.0.1`` or
``2130706433``: all ``127.0.0.1``). Such a host is never a DNS name: a browser does not ask
DNS for it, a page cannot be served under it, and a cookie cannot cover it as a domain. What
the standard refuses (``1.2.3.4.5``, ``999.1.1.1``, an IPv6 zone id such as ``%eth0``) is no
address either: no URL carries it.

A host's registrable domain (:func:`registrable_domain`, eTLD+1) is read by the Public Suffix
List ``publicsuffixlist`` ships (no network), its private section too (``co.uk``,
``github.io``); an address is its own, and so is a name with no registrable part
(``localhost``, a bare TLD). The list is read once, when first asked for (some 0.4 s and
3 MB): cookies and the frontier's domain shares share it.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from publicsuffixlist import PublicSuffixList

__all__ = [
    "IPAddress",
    "address_domain",
    "domain_key",
    "ip_literal",
    "public_suffixes",
    "registrable_domain",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_MAX_LITERAL = 255
"""The longest text read (a DNS name is at most 253 characters): hostile input stays cheap."""
_DIGITS = {
    10: re.compile(r"[0-9]+"),
    16: re.compile(r"[0-9A-Fa-f]*"),
    8: re.compile(r"[0-7]*"),
}


def ip_literal(text: str, *, short_forms: bool = True) -> IPAddress | None:
    """``text`` as an IP address, read as a URL's host is (see the module doc): an IPv6
    address bracketed or bare (``[::1]``, ``::1``; no zone id), or an IPv4 address in any
    form the URL Standard reads as one, a final dot allowed (``127.1.`` is ``127.0.0.1``).
    An IPv4-mapped IPv6 address stays IPv6 (``::ffff:7f00:1``). None for anything else.

    ``short_forms=False`` reads IPv4 in its usual form only (four decimal numbers): an
    address a user writes as a setting's value, where ``1.2.3`` is more likely a typo than
    ``1.2.0.3``, and refusing it is the helpful answer."""
    if len(text) > _MAX_LITERAL:
        return None
    try:
        if ":" in text:
            literal = text[1:-1] if text.startswith("[") and text.endswith("]") else text
            return None if "%" in literal else ipaddress.IPv6Address(literal)
        return _ipv4(text) if short_forms else ipaddress.IPv4Address(text)
    except ValueError:
        return None


def domain_key(text: str) -> str:
    """An allowed domain (``--allow-domain``) as a URL's host is compared with it: an IP
    literal in the form a canonical URL's host has, without brackets (``[::1]`` is ``::1``,
    ``127.1`` is ``127.0.0.1``), a name lower case without its final dots."""
    address = ip_literal(text.strip())
    return text.lower().strip(".") if address is None else address.compressed


_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
"""IPv4 addresses written as IPv6 ones (RFC 6052): each its own, as the IPv4 one is."""


def address_domain(host: str) -> str | None:
    """The domain of an IP literal, as the frontier counts a domain's share and a host's page
    budget: an IPv4 address is its own, an IPv6 address is in its /64 network (the least a
    site is given: counted by address, one server could be 2**64 domains), but loopback,
    IPv4-mapped and NAT64 addresses stay their own (``2001:db8::/64``, ``::1``). None for a
    name."""
    address = ip_literal(host)
    if address is None:
        return None
    if (
        isinstance(address, ipaddress.IPv4Address)
        or int(address) >> 64 == 0  # ::1, and IPv4 written the old way (::1.2.3.4)
        or address.ipv4_mapped is not None
        or address in _NAT64
    ):
        return host
    return str(ipaddress.IPv6Network((address, 64), strict=False))


@functools.cache
def public_suffixes() -> PublicSuffixList:
    """The Public Suffix List ``publicsuffixlist`` ships (read once: some 0.4 s); a name
    under no rule of it has its last label as its suffix (the list's ``*`` rule). Imported
    here too, with the list: a crawl that never needs it loads neither."""
    from publicsuffixlist import PublicSuffixList

    return PublicSuffixList()


@functools.lru_cache(maxsize=4096)
def registrable_domain(host: str) -> str:
    """The registrable domain (eTLD+1) of a URL's host (lowercase): ``example.co.uk`` of
    ``www.example.co.uk``; the host itself when it is an IP literal, a public suffix or a
    name with none (``localhost``)."""
    if ip_literal(host) is not None:
        return host
    return public_suffixes().privatesuffix(host) or host


def _ipv4(text: str) -> ipaddress.IPv4Address | None:
    """The URL Standard's IPv4 parser, for a host that ends in a number; None otherwise."""
    parts = text.split(".")
    if len(parts) > 1 and not parts[-1]:
        parts.pop()
    last = _ipv4_number(parts[-1])  # a name ends in no number: the usual case, told first
    if last is None or len(parts) > 4 or last >= 256 ** (5 - len(parts)):
        return None
    value = last
    for index, part in enumerate(parts[:-1]):
        number = _ipv4_number(part)
        if number is None or number > 255:
            return None
        value += number * 256 ** (3 - index)
    return ipaddress.IPv4Address(value)


def _ipv4_number(part: str) -> int | None:
    """One part of an IPv4 host: decimal, ``0x`` hex or ``0`` octal; None if it is none."""
    if part.isascii() and part.isdigit() and (part[0] != "0" or len(part) == 1):
        return int(part)  # decimal, the usual form: told first
    if not part:
        return None
    radix = 10
    if len(part) > 1 and part[:2] in ("0x", "0X"):
        part, radix = part[2:], 16
    elif len(part) > 1 and part[0] == "0":
        part, radix = part[1:], 8
    if not _DIGITS[radix].fullmatch(part):
        return None
    return int(part, radix) if part else 0
