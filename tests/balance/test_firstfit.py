"""P2's first-fit preferring busy nodes and its reservation/usage/extra cost model."""

from __future__ import annotations

import pytest

from gossamer.balance.firstfit import (
    NodeType,
    Resources,
    cheapest,
    cost_curve,
    first_fit,
    first_fit_rounds,
    plan,
)

NODE = Resources(cpu=4, memory=8, bandwidth=100)
TASK = Resources(cpu=1, memory=1, bandwidth=10)


def test_first_fit_prefers_busy_nodes_and_tasks_wait() -> None:
    small = Resources(cpu=1, memory=1, bandwidth=1)
    placed = first_fit([TASK, TASK, small, TASK], [NODE, NODE], busy=[1])
    assert placed == [1, 1, 1, 1]  # node 1 is busy: it takes all while it can
    big = Resources(cpu=5, memory=1, bandwidth=1)
    assert first_fit([big, TASK], [NODE, NODE]) == [None, 0]
    # a full busy node sends the task to the first idle node that fits
    assert first_fit([Resources(cpu=3), Resources(cpu=2)], [NODE, NODE]) == [0, 1]


def test_rounds_place_everything_even_beyond_capacity() -> None:
    nodes = first_fit_rounds([TASK] * 20 + [Resources(cpu=9)], [NODE, NODE.scaled(2)])
    assert len(nodes) == 21 and all(n in (0, 1) for n in nodes)
    assert nodes[-1] == 1  # too big for any node: the one with the most headroom
    with pytest.raises(ValueError):
        first_fit_rounds([TASK], [])


def test_cost_breakdown() -> None:
    kind = NodeType("n", NODE, count=3, reserve=1.0, usage=0.5, on_demand=2.0)
    p = plan([kind], [TASK] * 6, reserved=3)  # 6 tasks need 2 nodes (4 cpu each)
    assert [len(n.tasks) for n in p.nodes] == [4, 2, 0]
    assert (p.cost.reservation, p.cost.usage, p.cost.extra) == (3.0, 1.0, 0.0)
    short = plan([kind], [TASK] * 6, reserved=1)
    assert [n.reserved for n in short.nodes] == [True, False]
    assert (short.cost.reservation, short.cost.usage, short.cost.extra) == (1.0, 0.5, 2.0)
    assert short.cost.total == 3.5
    with pytest.raises(ValueError):
        plan([kind], [TASK], reserved=4)


def test_cost_curve_minimum_at_the_demand_matching_count() -> None:
    """P2's result: cheapest when the reserved nodes are exactly what the demand needs."""
    kind = NodeType("n", NODE, count=10, reserve=1.0, usage=0.6, on_demand=2.4)
    for tasks in (3, 9, 17, 24):
        demands = [TASK] * tasks
        needed = len([n for n in plan([kind], demands, 10).nodes if n.tasks])
        curve = cost_curve([kind], demands)
        totals = [p.cost.total for p in curve]
        assert cheapest(curve).reserved == needed == -(-tasks // 4)
        assert totals == sorted(totals[: needed + 1], reverse=True) + sorted(totals[needed + 1 :])


def test_job_bigger_than_the_cluster() -> None:
    """No on-demand price and too few reserved nodes: the rest wait; too-big tasks wait."""
    kind = NodeType("n", NODE, count=2, reserve=1.0, usage=0.5)
    p = plan([kind], [TASK] * 10 + [Resources(cpu=100)], reserved=2)
    assert len(p.waiting) == 3
    assert p.cost.extra == 0.0
    zero = NodeType("z", Resources(), count=2, reserve=1.0, usage=0.5, on_demand=3.0)
    assert len(plan([zero], [TASK] * 2, reserved=2).waiting) == 2
    assert plan([kind], [], reserved=0).cost.total == 0.0
