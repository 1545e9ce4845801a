"""Per-host page budgets on the embedded frontier: a host stops at N page leases, its other
URLs go out once as ``budget`` leases and its new ones are turned away."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from gossamer.crawldb import CrawlDB
from gossamer.frontier.admission import Guards
from gossamer.frontier.base import Candidate, Lease
from gossamer.frontier.budgets import BudgetLimits
from gossamer.frontier.local import LocalFrontier
from gossamer.frontier.politeness import PolitenessPolicy
from gossamer.settings import load_settings
from gossamer.urls import Scope


def frontier(limits: BudgetLimits, db: CrawlDB | None = None) -> LocalFrontier:
    scope = Scope.for_seeds([], ["test"])
    return LocalFrontier(scope, PolitenessPolicy(per_host=2), db, guards=Guards(budgets=limits))


def urls(host: str, count: int) -> list[Candidate]:
    return [Candidate(f"http://{host}/p{i}") for i in range(count)]


async def drain(front: LocalFrontier) -> Counter[tuple[str, str]]:
    """Lease and ack everything; (host, kind) of each lease."""
    kinds: Counter[tuple[str, str]] = Counter()
    for _ in range(100):
        if await front.done():
            break
        for lease in await front.lease(10):
            kinds[lease.host.partition("//")[2], lease.kind] += 1
            await front.ack(lease, None)
    return kinds


async def test_a_host_stops_at_its_budget() -> None:
    front = frontier(BudgetLimits(per_host=3))
    await front.add(urls("a.test", 10) + urls("b.test", 2))
    assert await drain(front) == {
        ("a.test", "page"): 3,
        ("a.test", "budget"): 7,
        ("b.test", "page"): 2,
    }
    late = await front.add(urls("a.test", 12)[10:] + urls("b.test", 3)[2:])
    assert late.added == 1 and late.rejected == {"budget": 2}
    assert front.in_memory == 1  # a.test's URLs are gone from the queue
    assert front.budget_spent("http://a.test") and not front.budget_spent("http://b.test")


async def test_patterns_win_over_the_default() -> None:
    front = frontier(BudgetLimits(per_host=2, patterns={"*.big.test": 5, "none.test": 100}))
    await front.add(urls("x.big.test", 8) + urls("small.test", 8) + urls("none.test", 8))
    kinds = await drain(front)
    assert kinds[("x.big.test", "page")] == 5 and kinds[("x.big.test", "budget")] == 3
    assert kinds[("small.test", "page")] == 2 and kinds[("none.test", "page")] == 8


async def test_a_pattern_with_a_wildcard_is_one_budget_for_all_its_hosts() -> None:
    front = frontier(BudgetLimits(per_host=2, patterns={"*.x.test": 5, "exact.test": 3}))
    subdomains = [c for n in range(4) for c in urls(f"s{n}.x.test", 3)]
    await front.add(subdomains + urls("exact.test", 4) + urls("other.test", 3))
    kinds = await drain(front)
    pages = sum(
        n for (host, kind), n in kinds.items() if host.endswith(".x.test") and kind == "page"
    )
    assert pages == 5 and kinds[("exact.test", "page")] == 3 and kinds[("other.test", "page")] == 2
    late = await front.add(urls("s9.x.test", 2) + urls("exact.test", 5)[4:] + urls("new.test", 1))
    assert late.rejected == {"budget": 3} and late.added == 1  # a new subdomain: spent too


async def test_an_ipv6_literal_counts_in_its_64_as_the_domain_share_names_it() -> None:
    """Addresses of one /64 are one budget (one server may name itself by 2**64 of them),
    per scheme and port as a host's; another /64, loopback and IPv4-mapped addresses are
    each their own (gossamer.addresses.address_domain, the working set's domain share too)."""
    one = [f"2001:db8:0:1::{n:x}" for n in range(1, 9)]
    own = ["2001:db8:0:2::1", "::1", "::ffff:7f00:1", "::ffff:7f00:2"]
    scope = Scope.for_seeds([], [*one, *own], [8080])
    budgets = Guards(budgets=BudgetLimits(per_host=3))
    front = LocalFrontier(scope, PolitenessPolicy(per_host=2), None, guards=budgets)
    await front.add([c for host in [*one, *own] for c in urls(f"[{host}]", 2)])
    await front.add(urls(f"[{one[0]}]:8080", 2))
    kinds = await drain(front)
    pages = Counter({host: n for (host, kind), n in kinds.items() if kind == "page"})
    assert sum(pages[f"[{host}]"] for host in one) == 3  # 16 URLs, one budget
    assert pages[f"[{one[0]}]:8080"] == 2  # another port: another budget
    assert [pages[f"[{host}]"] for host in own] == [2] * len(own)
    late = await front.add(urls(f"[{one[-1]}]", 3)[2:] + urls(f"[{own[0]}]", 3)[2:])
    assert late.rejected == {"budget": 1} and late.added == 1


async def test_a_released_page_is_not_spent_and_a_retried_one_is_fetched() -> None:
    front = frontier(BudgetLimits(per_host=2))
    await front.add(urls("a.test", 5))
    first: list[Lease] = await front.lease(2)
    assert [lease.kind for lease in first] == ["page", "page"]
    await front.release(first[0], None)  # back unfetched: its page is given back
    await front.retry(first[1], 0.0, None)  # fetched, tried again: still this host's page
    kinds = await drain(front)
    assert kinds == {("a.test", "page"): 2, ("a.test", "budget"): 3}


async def test_resume_counts_the_pages_recorded_before(tmp_path: Path) -> None:
    db = CrawlDB(tmp_path / "crawl.db")
    front = frontier(BudgetLimits(per_host=4), db)
    await front.add(urls("a.test", 6))
    for lease in await front.lease(2):
        await front.ack(lease, None)
    await db.commit()
    db.close()
    db = CrawlDB(tmp_path / "crawl.db")
    again = frontier(BudgetLimits(per_host=4), db)
    again.restore()
    assert await drain(again) == {("a.test", "page"): 2, ("a.test", "budget"): 2}
    db.close()


def test_settings_give_the_guards() -> None:
    settings = load_settings(
        {
            "seeds": ["http://x.test/"],
            "strip_params": "",
            "host_page_budgets": "*.a.test=5, b.test=7",
            "max_pages_per_host": "2",
            "trap_guards": "off",
        },
        env={},
    )
    limits = BudgetLimits(2, {"*.a.test": 5, "b.test": 7})
    assert Guards.of(settings) == Guards(strip=(), traps=None, budgets=limits)
    assert Guards.of(load_settings({"seeds": ["http://x.test/"]}, env={})) == Guards()
