"""The ``resolve`` setting's ``HOST=IP[,IP...]`` items, parsed: the one parser both the
settings' checks and the fetch stage's resolver (:mod:`gossamer.fetch.dns`) use."""

import re

from gossamer.addresses import IPAddress, ip_literal

_LABEL = re.compile(r"(?!-)[a-z0-9_-]{1,63}(?<!-)")


def normalize_host(host: str) -> str:
    """Return the cache/override key of a host name: lower case, without a trailing dot."""
    return host.rstrip(".").lower()


def parse_resolve_item(item: str) -> tuple[str, list[IPAddress]]:
    """The host pattern (a normalized name, ``*.name`` or ``*``) and the addresses of one
    ``HOST=IP[,IP...]`` item; raises `ValueError` naming the item when it is malformed."""
    host, sep, ips = item.strip().partition("=")
    if not sep:
        raise ValueError(f"invalid resolve override {item!r}: expected HOST=IP")
    pattern = _parse_pattern(item, host.strip())
    texts = [t.strip() for t in ips.split(",")]
    if not any(texts):
        raise ValueError(f"invalid resolve override {item!r}: no IP address after '='")
    return pattern, [_parse_ip(item, text) for text in texts]


def _parse_pattern(item: str, host: str) -> str:
    if host == "*":
        return host
    wildcard = host.startswith("*.")
    name = host_name(host[2:] if wildcard else host)
    if name is None:
        raise ValueError(
            f"invalid resolve override {item!r}: bad host name {host!r} "
            "(expected a name like example.com, a wildcard like *.test, or *)"
        )
    return f"*.{name}" if wildcard else name


def host_name(text: str) -> str | None:
    """``text`` as a host name (normalized, IDNA-encoded), or None when it is none: empty,
    over 253 characters, or with a label of other characters than letters, digits, ``-``
    and ``_``."""
    name = normalize_host(text)
    try:
        name = name.encode("idna").decode("ascii")
    except UnicodeError:
        return None
    labels = name.split(".")
    if not name or len(name) > 253 or not all(_LABEL.fullmatch(label) for label in labels):
        return None
    return name


def _parse_ip(item: str, text: str) -> IPAddress:
    """The address of an item, in its usual form only (a typo such as ``1.2.3`` is refused,
    not read as the URL Standard would, ``1.2.0.3``)."""
    address = ip_literal(text, short_forms=False)
    if address is None:
        raise ValueError(
            f"invalid resolve override {item!r}: {text!r} is not an IPv4 or IPv6 address"
        )
    return address


__all__ = ["IPAddress", "host_name", "normalize_host", "parse_resolve_item"]
