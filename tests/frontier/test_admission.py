"""Admission's verdicts remembered per spelling: the same counts, fewer URLs canonicalized."""

from __future__ import annotations

import pytest

from gossamer.frontier import admission as admission_module
from gossamer.frontier.admission import Admission
from gossamer.frontier.base import Candidate, Outlinks
from gossamer.urls import Scope, canonicalize, credentials_of, host_key, plain_origin

PAGE = "http://site.test/a.html"
LINKS = [
    "http://site.test/b.html",
    "http://elsewhere.test/x",
    "http://site.test/b.html",
    "http://elsewhere.test/x",
    "http://site.test:8080/y",
    "not a url",
    "http://site.test/c.html",
]


@pytest.fixture
def canonicalized(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The URLs admission canonicalizes, in order."""
    seen: list[str] = []

    def counted(url: str) -> str:
        seen.append(url)
        return canonicalize(url)

    monkeypatch.setattr(admission_module, "canonicalize", counted)
    return seen


def test_a_page_s_offsite_and_repeated_links_are_canonicalized_once(
    canonicalized: list[str],
) -> None:
    admission = Admission(Scope.for_seeds([PAGE]))
    first, rejected = admission.admit(Outlinks(LINKS, 1, PAGE))
    assert [url for url, *_ in first] == [LINKS[0], LINKS[0], LINKS[6]]
    assert rejected == {"offsite": 2, "offsite-port": 1, "invalid-url": 1}
    assert sorted(canonicalized) == sorted(set(LINKS))

    canonicalized.clear()  # another page with the same links: only the in-scope ones again
    again, rejected = admission.admit(Outlinks(LINKS, 2, "http://site.test/b.html"))
    assert again == [(url, key, fp, Candidate(url, 2)) for url, key, fp, _ in first]
    assert rejected == {"offsite": 2, "offsite-port": 1, "invalid-url": 1}
    assert sorted(canonicalized) == [LINKS[0], LINKS[6]]
    assert admission.rejected == {"offsite": 4, "offsite-port": 2, "invalid-url": 2}


def test_an_offsite_url_with_user_info_is_judged_on_each_page() -> None:
    """Whether a URL's user name and password may be sent depends on the page naming it
    (the reason it is turned away): such a URL's verdict is not remembered."""
    secret = "http://bob:pw@elsewhere.test/x"
    admission = Admission(Scope.for_seeds([PAGE]))
    _, rejected = admission.admit(Outlinks([secret], 1, "http://bob:pw@elsewhere.test/"))
    assert rejected == {"offsite": 1}
    _, rejected = admission.admit(Outlinks([secret], 1, PAGE))
    assert rejected == {"userinfo": 1}


def test_a_candidate_with_a_priority_is_judged_as_it_comes() -> None:
    admission = Admission(Scope.for_seeds([PAGE]))
    admission.admit([Candidate("http://elsewhere.test/x", 1)])
    _, rejected = admission.admit([Candidate("http://elsewhere.test/x", 1, priority=0.5)])
    assert rejected == {"offsite": 1}
    _, rejected = admission.admit([Candidate("http://site.test/d", 1, priority=float("nan"))])
    assert rejected == {"bad-priority": 1}


OFFSITE_SPELLINGS = [
    "http://elsewhere.test/",
    "http://elsewhere.test/a?@action=redirect&bpo=1",  # an @ in the query: no user info
    "http://elsewhere.test/a b/../c#frag",  # canonicalized by ada
    "http://elsewhere.test/\u00e9",  # not ASCII: canonicalized
    "http://elsewhere.test/\ud800",  # a lone surrogate: invalid-url
    "http://u:p@elsewhere.test/x",  # user info none of the seeds gave
    "http://elsewhere.test:8080/x",
    "HTTP://ELSEWHERE.test/y",
    "http://0x7f.1/x",  # plainly spelled, yet ada reads 127.0.0.1 ...
    "http://0x7f.1/a b",  # ... so this one is the seed's host
    "http://elsewhere.test/\t\x00\\x",
]


def test_offsite_spellings_of_a_known_origin_are_not_canonicalized(
    canonicalized: list[str],
) -> None:
    admission = Admission(Scope.for_seeds([PAGE]))
    admission.admit(Outlinks(["http://elsewhere.test/first"], 1, PAGE))
    canonicalized.clear()
    links = [f"http://elsewhere.test/p{i}?@q" for i in range(3)]
    admitted, rejected = admission.admit(Outlinks(links, 1, PAGE))
    assert (admitted, rejected) == ([], {"offsite": 3})
    assert canonicalized == []


def test_verdicts_are_the_same_whatever_admission_met_before() -> None:
    seeds = [PAGE, "http://127.0.0.1/"]
    warm = Admission(Scope.for_seeds(seeds))
    for round_ in range(2):  # the second round meets every origin known
        for spelling in OFFSITE_SPELLINGS:
            for priority in (0.0, float("nan")):
                cand = Candidate(spelling, 1, priority=priority)
                fresh = Admission(Scope.for_seeds(seeds)).admit([cand], source=PAGE)
                assert warm.admit([cand], source=PAGE) == fresh, (round_, spelling, priority)


def test_a_plain_origin_keeps_its_host_key_whatever_ascii_follows() -> None:
    assert plain_origin("http://elsewhere.test/")
    assert plain_origin("https://a.test:8443/")
    for odd in ("http://0x7f.1/", "http://elsewhere.test", "http://a.test/b/", "http://A.test/"):
        assert not plain_origin(odd)
    for code in range(128):
        for tail in (chr(code), f"a{chr(code)}b", f"?{chr(code)}=@", f"#{chr(code)}"):
            url = canonicalize("http://elsewhere.test/" + tail)
            assert host_key(url) == "http://elsewhere.test", repr(tail)
            assert credentials_of(url) is None
