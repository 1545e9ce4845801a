"""Admission's verdicts remembered per spelling: the same counts, fewer URLs canonicalized."""

from __future__ import annotations

import pytest

from gossamer.frontier import admission as admission_module
from gossamer.frontier.admission import Admission
from gossamer.frontier.base import Candidate, Outlinks
from gossamer.urls import Scope, canonicalize

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
