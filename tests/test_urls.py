"""Canonicalization, fingerprints and scope."""

import pytest

from gossamer.urls import (
    InvalidURL,
    OriginCache,
    Resolver,
    Scope,
    canonicalize,
    credentials_of,
    explicit_port,
    fingerprint,
    host_key,
    host_of,
    is_plainly_canonical,
)


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        ("HTTP://Example.COM/", "http://example.com/"),
        ("http://example.com", "http://example.com/"),
        ("http://example.com:80/a", "http://example.com/a"),
        ("https://example.com:443/a", "https://example.com/a"),
        ("https://example.com:8443/a", "https://example.com:8443/a"),
        ("http://example.com/a/./b/../c", "http://example.com/a/c"),
        ("http://example.com/a/b/..", "http://example.com/a/"),
        ("http://example.com/../../x", "http://example.com/x"),
        ("http://example.com/a#frag", "http://example.com/a"),
        ("http://example.com/%7euser", "http://example.com/~user"),
        ("http://example.com/%7Euser/%41", "http://example.com/~user/A"),
        ("http://example.com/a%2fb", "http://example.com/a%2Fb"),
        ("http://example.com/a b", "http://example.com/a%20b"),
        ("http://example.com/ü", "http://example.com/%C3%BC"),
        ("http://example.com/%zz", "http://example.com/%25zz"),
        ("http://example.com/?b=2&a=1", "http://example.com/?b=2&a=1"),
        ("http://example.com/p?q=a%20b#x", "http://example.com/p?q=a%20b"),
        ("http://example.com/?", "http://example.com/"),
        ("http://example.com/i?&&id=7&&&color=red&&", "http://example.com/i?id=7&color=red"),
        ("http://example.com/i?&", "http://example.com/i"),
        ("http://example.com/i?a&&b=%41&", "http://example.com/i?a&b=A"),
        ("http://example.com/i?a=%26&&b", "http://example.com/i?a=%26&b"),
        ("http://EXAMPLE.com./x", "http://example.com/x"),
        ("http://[::1]:8080/x", "http://[::1]:8080/x"),
        ("http://münchen.de/", "http://xn--mnchen-3ya.de/"),
        ("  http://example.com/x  ", "http://example.com/x"),
    ],
)
def test_canonicalize(raw: str, canonical: str) -> None:
    assert canonicalize(raw) == canonical


def test_canonical_is_idempotent() -> None:
    for raw in ["http://a.b/%7e/ü?x=%41%2f", "HTTP://A.B:80/./x/../y#z"]:
        once = canonicalize(raw)
        assert canonicalize(once) == once


@pytest.mark.parametrize(
    "bad", ["ftp://example.com/", "mailto:a@b.c", "http://", "http://[::1/x", "/relative", ""]
)
def test_invalid_urls_raise(bad: str) -> None:
    with pytest.raises(InvalidURL):
        canonicalize(bad)


def test_fingerprint_is_signed_64_bit_and_stable() -> None:
    a = fingerprint("http://example.com/")
    assert a == fingerprint("http://example.com/")
    assert a != fingerprint("http://example.com/x")
    assert -(2**63) <= a < 2**63


def test_host_helpers() -> None:
    assert host_key("http://example.com:8080/a/b") == "http://example.com:8080"
    assert host_of("http://user@example.com:8080/a") == "example.com"
    assert host_of("http://[::1]:80/") == "::1"


def test_scope_hosts_and_domains() -> None:
    scope = Scope.for_seeds(["http://a.example.org/"], ["test"])
    assert scope.reject_reason("http://a.example.org/x", 1) is None
    assert scope.reject_reason("http://b.example.org/x", 1) == "offsite"
    assert scope.reject_reason("http://site1.test/x", 1) is None
    assert scope.reject_reason("http://deep.site1.test/x", 1) is None
    assert scope.reject_reason("http://nottest/x", 1) == "offsite"
    assert scope.reject_reason("http://attest/x", 1) == "offsite"


def test_an_allowed_address_is_allowed_as_itself_only() -> None:
    """An IP address is no subdomain (of ``1``, ``0.1``), and an address allowed in any form
    a URL's host has (``[::1]``, ``127.1``) allows that address."""
    numbers = Scope.for_seeds(["http://a.test/"], ["1", "0.1"])
    assert numbers.reject_reason("http://127.0.0.1/", 1) == "offsite"
    assert numbers.reject_reason("http://10.0.0.1/", 1) == "offsite"
    addresses = Scope.for_seeds(["http://a.test/"], ["[::1]", "127.1", "[::FFFF:10.0.0.1]"])
    assert addresses.reject_reason("http://[::1]/", 1) is None
    assert addresses.reject_reason("http://127.0.0.1/", 1) is None
    assert addresses.reject_reason("http://[::ffff:a00:1]/", 1) is None
    assert addresses.reject_reason("http://10.0.0.1/", 1) == "offsite"


def test_scope_ports_are_the_seeds_the_defaults_and_the_allowed() -> None:
    scope = Scope.for_seeds(["http://127.0.0.1:8080/", "http://site0.test:8080/"], ["test"])
    assert scope.reject_reason("http://127.0.0.1:8080/x", 1) is None
    assert scope.reject_reason("http://127.0.0.1:6379/", 1) == "offsite-port"
    assert scope.reject_reason("http://site1.test:8080/x", 1) is None
    assert scope.reject_reason("http://site1.test:6379/", 1) == "offsite-port"
    # No explicit port: the scheme's default, so a seed's http -> https redirect stays in.
    assert scope.reject_reason("https://127.0.0.1/x", 1) is None
    assert scope.reject_reason("http://site1.test/x", 1) is None
    assert scope.reject_reason("http://site1.test:443/x", 1) == "offsite-port"
    assert scope.reject_reason("http://elsewhere.org:8080/", 1) == "offsite"
    wider = Scope.for_seeds(["http://[::1]:8080/"], allow_ports=[6379])
    assert wider.reject_reason("http://[::1]:6379/", 1) is None
    assert wider.reject_reason("http://[::1]:6380/", 1) == "offsite-port"
    assert explicit_port("http://user@[::1]:6379") == 6379
    assert explicit_port("https://h.test/a:1") is None


def test_origin_cache_stays_bounded() -> None:
    cache = OriginCache(Scope.for_seeds(["http://a.test/"]), limit=1000)
    for i in range(220_000):
        assert cache.reason(f"http://h{i}.example") == "offsite"
        assert len(cache) <= 1000
    assert cache.reason("http://a.test") is None
    assert cache.reason("http://a.test:6379") == "offsite-port"


def test_scope_trap_guards() -> None:
    scope = Scope.for_seeds(["http://h/"], max_depth=2, max_url_length=40, max_repeated_segments=2)
    assert scope.reject_reason("http://h/a", 3) == "depth"
    assert scope.reject_reason("http://h/" + "x" * 50, 0) == "url-too-long"
    assert scope.reject_reason("http://h/a/b/a/c/a", 0) == "repeated-segments"
    assert scope.reject_reason("http://h/a/b/a", 0) is None


def test_fast_path_agrees_with_full_canonicalization() -> None:
    import random

    from gossamer.urls import _canonicalize, is_plainly_canonical

    rng = random.Random(5)
    pieces = ["a", "Z", "0", "-", ".", "..", "/", "~", "%41", "%7e", "?", "=", "&", "#", ":", "@"]
    pieces += ["&", "?&", "&&"]
    pieces += ["é", " ", "!", "'", "(", "*", ";", ",", "+", "$", "_", "%2F", "%zz"]
    hosts = ["a.test", "a.test:80", "a.test:8080", "A.test", "a.test.", "a.test:0", "1.2.3.4"]
    accepted = 0
    for _ in range(20_000):
        path = "".join(rng.choice(pieces) for _ in range(rng.randrange(0, 12)))
        url = f"{rng.choice(['http', 'https'])}://{rng.choice(hosts)}/{path}"
        if is_plainly_canonical(url):
            accepted += 1
            assert _canonicalize(url) == url, url
    assert accepted > 1000


@pytest.mark.parametrize(
    "url", ["http://[fe80::1%25eth0]/", "http://[::1%eth0]/", "http://a b/", "http://x%41.test/"]
)
def test_hosts_no_server_can_have_are_invalid(url: str) -> None:
    with pytest.raises(InvalidURL):
        canonicalize(url)


def test_user_info_is_not_part_of_the_politeness_key() -> None:
    assert host_key(canonicalize("http://a:b@h.test:81/x")) == "http://h.test:81"
    assert host_key("http://a@h.test/") == host_key("http://b@h.test/") == "http://h.test"


def test_a_seed_port_is_allowed_for_its_own_host_and_the_allowed_domains() -> None:
    scope = Scope.for_seeds(["http://a.test:8080/", "http://b.test:9090/"])
    assert scope.reject_reason("http://a.test:8080/x", 0) is None
    assert scope.reject_reason("http://a.test:9090/x", 0) == "offsite-port"
    assert scope.reject_reason("http://b.test/x", 0) is None  # default port
    pooled = Scope.for_seeds(["http://a.test:8080/", "http://b.test:9090/"], ["test"])
    assert pooled.reject_reason("http://a.test:9090/x", 0) is None  # one web on both ports
    assert pooled.reject_reason("http://c.test:8080/x", 0) is None
    assert pooled.reject_reason("http://c.test:6379/x", 0) == "offsite-port"
    given = Scope.for_seeds(["http://a.test:8080/"], allow_ports=[6379])
    assert given.reject_reason("http://a.test:6379/x", 0) is None


@pytest.mark.parametrize(
    ("base", "reference", "resolved"),
    [
        ("http://h.test/d/p.html?q", "x.html", "http://h.test/d/x.html"),
        ("http://h.test/d/p.html?q", "../../x", "http://h.test/x"),
        ("http://h.test/d/p.html?q", "/a/./b/../c", "http://h.test/a/c"),
        ("http://h.test/d/p.html?q", "?r", "http://h.test/d/p.html?r"),
        ("http://h.test/d/p.html?q", "#f", "http://h.test/d/p.html?q"),
        ("http://h.test/d/p.html?q", "//O.test:80/x", "http://o.test/x"),
        ("https://h.test/d/", "//o.test/x", "https://o.test/x"),
        ("http://h.test/d/", "http:x", "http://h.test/d/x"),
        ("http://h.test/d/", "http:/x", "http://h.test/x"),
        ("http://h.test/d/p", "http:", "http://h.test/d/p"),
        ("http://h.test/d/", "https:x", "https://x/"),
        ("http://h.test/d/", "HTTP://X.test/%7e", "http://x.test/%7e"),
        ("http://h.test/d/", " \tx\n y ", "http://h.test/d/x%20y"),
        ("http://u:p@h.test/d/", "/x", "http://u:p@h.test/x"),
        ("http://h.test/d/p?", "x", "http://h.test/d/x"),  # a base's empty query or fragment
        ("http://h.test/d/p?", "", "http://h.test/d/p?"),
        ("http://h.test/d/p#", "?r", "http://h.test/d/p?r"),
        ("http://h.test/d/p?#", "/x", "http://h.test/x"),
        ("http://h.test/d/", "mailto:a@h.test", None),
        ("http://h.test/d/", "http://[::1", None),
        ("http://h.test/d/", "http://h.test:65536/", None),
    ],
)
def test_resolver(base: str, reference: str, resolved: str | None) -> None:
    assert Resolver(base).resolve(reference) == resolved


def test_resolved_links_are_canonical_after_one_regex_match() -> None:
    resolver = Resolver("http://h.test/docs/library/os.html")
    for href in ["../glossary.html#term", "os.path.html", "/3/x?y=1", "#top", "../_static/a.js"]:
        resolved = resolver.resolve(href)
        assert resolved is not None and is_plainly_canonical(resolved)
        assert canonicalize(resolved) == resolved


def test_repeated_segments_ignore_empty_ones() -> None:
    scope = Scope.for_seeds(["http://h/"], max_repeated_segments=2)
    assert scope.reject_reason("http://h/a//b//c//d//e", 0) is None
    assert scope.reject_reason("http://h/x/y/x/z/x", 0) == "repeated-segments"
    assert scope.reject_reason("http://h/" + "/".join(f"s{i}" for i in range(400)), 0) is None


def test_remembered_resolutions_depend_on_what_they_read() -> None:
    """Each reference resolves against every base as a fresh resolution would, whatever was
    resolved before (resolutions are remembered by origin and directory)."""
    bases = [
        "http://h.test/a/b.html?q=1",
        "http://h.test/a/c.html",
        "http://h.test/a/",
        "https://h.test/a/b.html",
        "http://g.test/a/b.html",
        "http://h.test/",
        "http://h.test/a/b?",
        "http://h.test/a/b?q#",
    ]
    references = ["", "?x", "#f", "c.html", "../d", "/e", "//g.test/f", "http:", "http:?y",
                  "http:z", "https://k.test/./l", " c.html ", "http://H.test/a"]  # fmt: skip
    for _ in range(2):
        for base in bases:
            resolver = Resolver(base)
            for reference in references:
                assert resolver.resolve(reference) == resolver._resolve(reference)


@pytest.mark.parametrize(
    "seed",
    [
        "http://alice:p@ss:w0rd@h.test/d/",
        "http://alice:p%40ss%3Aw0rd@h.test/d/",
        "http://al%40ice:p;w=x[y]@[::1]:8080/d/",
        "http://:pw@h.test/d/",
    ],
)
def test_a_seeds_links_carry_its_very_user_info(seed: str) -> None:
    """However the seed writes a password's '@', ':' and other delimiters, its canonical form
    and the links resolved against it name the same user info (a link's credentials must
    be its page's own to be sent)."""
    canonical = canonicalize(seed)
    for link in ("/x", "x", "?q", seed):
        resolved = Resolver(canonical).resolve(link)
        assert resolved is not None
        assert credentials_of(canonicalize(resolved)) == credentials_of(canonical), link
    assert canonicalize(canonical) == canonical


def test_a_fragment_is_resolved_once_for_all_its_spellings() -> None:
    """A page's links to the sections of another page (``x.html#a``, ``x.html#b``) are one
    remembered resolution, the reference without its fragment; one that a space ends before
    its fragment resolves as a fresh resolution would."""
    from gossamer.urls import _REMEMBERED

    # forgotten first, so that no earlier test's resolutions fill the cache past its limit
    _REMEMBERED.absolute.clear()
    _REMEMBERED.by_base.clear()
    _REMEMBERED.size = before = 0
    resolver = Resolver("http://fragments.test/d/p.html?q")
    found = {resolver.resolve(f"x.html#s{i}") for i in range(5)} | {resolver.resolve("x.html")}
    assert found == {"http://fragments.test/d/x.html"}
    assert _REMEMBERED.size == before + 1
    for reference in ["http: #f", "y.html\t#f", " #f", "#", "z.html#"]:
        assert resolver.resolve(reference) == resolver._resolve(reference)
    assert resolver.resolve("http: #f") == "http://fragments.test/d/"


def test_a_lone_surrogate_is_a_malformed_url_not_a_crash() -> None:
    """A byte that is not UTF-8 in a seed file or an argument comes as a lone surrogate
    (``surrogateescape``): the URL parser refuses such text with a TypeError, which every
    caller reads as a malformed URL."""
    url = "http://a.test/\udcff"
    with pytest.raises(InvalidURL):
        canonicalize(url)
    with pytest.raises(ValueError, match="not an absolute http"):
        Resolver(url)
    assert Resolver("http://a.test/").resolve("x\udcff.html") is None
