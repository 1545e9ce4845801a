"""Multi-resource first-fit preferring busy nodes, and the reservation/usage/extra cost model.

Nodes have a capacity vector and tasks a demand vector of :class:`Resources` (CPU, memory,
bandwidth; any units, as long as capacities and demands use the same ones: ``gossamer plan``
uses cores, GB and Mbit/s). :func:`first_fit` gives each task, in order, to the first busy node
whose remaining CPU, memory and bandwidth all cover it, else to the first idle node that does
(it becomes busy), else the task waits.

Costs, for one crawl (the planning period), per :class:`NodeType`:

- reservation: ``reserve`` for every reserved node, used or not;
- usage: ``usage`` for every reserved node that runs at least one task;
- extra: ``on_demand`` for every on-demand node opened for the tasks no reserved node could
  take (priced above ``reserve + usage``).

:func:`plan` places a demand on a number of reserved nodes; :func:`cost_curve` does it for
every number, whose cheapest point is the number of nodes the demand needs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Resources:
    """A capacity or demand vector."""

    cpu: float = 0.0
    memory: float = 0.0
    bandwidth: float = 0.0

    def covers(self, demand: Resources) -> bool:
        """True if every component is at least ``demand``'s."""
        return (
            self.cpu >= demand.cpu
            and self.memory >= demand.memory
            and self.bandwidth >= demand.bandwidth
        )

    def __add__(self, other: Resources) -> Resources:
        return Resources(
            self.cpu + other.cpu, self.memory + other.memory, self.bandwidth + other.bandwidth
        )

    def __sub__(self, other: Resources) -> Resources:
        return Resources(
            self.cpu - other.cpu, self.memory - other.memory, self.bandwidth - other.bandwidth
        )

    def scaled(self, factor: float) -> Resources:
        return Resources(self.cpu * factor, self.memory * factor, self.bandwidth * factor)

    def headroom(self, demand: Resources) -> float:
        """How many times ``demand`` fits in this vector (the tightest component)."""
        pairs = (
            (self.cpu, demand.cpu),
            (self.memory, demand.memory),
            (self.bandwidth, demand.bandwidth),
        )
        return min((have / need for have, need in pairs if need > 0), default=float("inf"))


def first_fit(
    demands: Sequence[Resources], capacities: Sequence[Resources], busy: Sequence[int] = ()
) -> list[int | None]:
    """The first-fit placement: the node index of each task, or None where the task waits.

    Busy nodes (those in ``busy``, then those that take a task) are scanned first, in the
    order they became busy; idle nodes after them, in index order.
    """
    free = list(capacities)
    order = list(dict.fromkeys(busy))
    idle = [i for i in range(len(capacities)) if i not in set(order)]
    placed: list[int | None] = []
    for demand in demands:
        node = next((i for i in order if free[i].covers(demand)), None)
        if node is None:
            node = next((i for i in idle if free[i].covers(demand)), None)
            if node is not None:
                idle.remove(node)
                order.append(node)
        if node is not None:
            free[node] = free[node] - demand
        placed.append(node)
    return placed


def first_fit_rounds(demands: Sequence[Resources], capacities: Sequence[Resources]) -> list[int]:
    """Every task on a node: :func:`first_fit` again on the waiting tasks, capacities renewed,
    nodes busy in one round preferred in the next (each round is one more period of work).

    A task no node can hold even when idle goes to the node with the most headroom for it.
    Empty ``capacities``: ValueError.
    """
    if not capacities:
        raise ValueError("no nodes to place tasks on")
    result: list[int] = [-1] * len(demands)
    waiting = list(range(len(demands)))
    busy: list[int] = []
    while waiting:
        placed = first_fit([demands[t] for t in waiting], capacities, busy)
        for task, node in zip(waiting, placed, strict=True):
            if node is not None:
                result[task] = node
                busy.append(node)
        left = [t for t, node in zip(waiting, placed, strict=True) if node is None]
        if len(left) == len(waiting):
            for task in left:
                heads = [cap.headroom(demands[task]) for cap in capacities]
                result[task] = heads.index(max(heads))
            break
        waiting = left
    return result


# -- the cost model ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NodeType:
    """A kind of node: its capacity, how many can be reserved, and its prices."""

    name: str
    capacity: Resources
    count: int
    """Nodes of this type that can be reserved."""
    reserve: float
    """Price of reserving one node for the crawl, used or not."""
    usage: float
    """Price of one reserved node that runs tasks."""
    on_demand: float | None = None
    """Price of one on-demand node (> reserve + usage); None: none of this type."""


@dataclass(frozen=True, slots=True)
class Cost:
    """The cost of a placement: reservation, usage and extra."""

    reservation: float
    usage: float
    extra: float

    @property
    def total(self) -> float:
        return self.reservation + self.usage + self.extra


@dataclass(frozen=True, slots=True)
class NodeUse:
    """One node of a plan and the tasks it runs."""

    name: str
    type: NodeType
    reserved: bool
    tasks: tuple[int, ...]
    used: Resources


@dataclass(frozen=True, slots=True)
class Plan:
    """Where each task runs with ``reserved`` reserved nodes, and what it costs."""

    reserved: int
    nodes: tuple[NodeUse, ...]
    waiting: tuple[int, ...]
    """Tasks no node type can hold."""
    cost: Cost


def reserved_nodes(types: Sequence[NodeType], reserved: int) -> list[NodeType]:
    """The first ``reserved`` nodes, taking the types in order, each up to its count."""
    nodes = [kind for kind in types for _ in range(max(kind.count, 0))]
    if not 0 <= reserved <= len(nodes):
        raise ValueError(f"can reserve 0 to {len(nodes)} nodes, not {reserved}")
    return nodes[:reserved]


def plan(types: Sequence[NodeType], demands: Sequence[Resources], reserved: int) -> Plan:
    """First-fit ``demands`` on ``reserved`` reserved nodes, the rest on on-demand nodes.

    Tasks no reserved node can take go to on-demand nodes: busy ones first, else a new node of
    the cheapest type with an on-demand price that can hold the task; tasks no type can hold
    wait. ValueError if ``reserved`` is more than the types' counts.
    """
    kinds = reserved_nodes(types, reserved)
    placed = first_fit(demands, [kind.capacity for kind in kinds])
    tasks: list[list[int]] = [[] for _ in kinds]
    extra_kinds: list[NodeType] = []
    extra_free: list[Resources] = []
    extra_tasks: list[list[int]] = []
    waiting: list[int] = []
    offers = sorted((k for k in types if k.on_demand is not None), key=lambda k: k.on_demand or 0)
    for task, node in enumerate(placed):
        if node is not None:
            tasks[node].append(task)
            continue
        demand = demands[task]
        slot = next((i for i, free in enumerate(extra_free) if free.covers(demand)), None)
        if slot is None:
            kind = next((k for k in offers if k.capacity.covers(demand)), None)
            if kind is None:
                waiting.append(task)
                continue
            extra_kinds.append(kind)
            extra_free.append(kind.capacity)
            extra_tasks.append([])
            slot = len(extra_kinds) - 1
        extra_free[slot] = extra_free[slot] - demand
        extra_tasks[slot].append(task)
    nodes = [_use(f"r{i + 1}", k, True, tasks[i], demands) for i, k in enumerate(kinds)]
    nodes += [
        _use(f"d{i + 1}", k, False, extra_tasks[i], demands) for i, k in enumerate(extra_kinds)
    ]
    cost = Cost(
        reservation=sum(kind.reserve for kind in kinds),
        usage=sum(n.type.usage for n in nodes if n.reserved and n.tasks),
        extra=sum(kind.on_demand or 0.0 for kind in extra_kinds),
    )
    return Plan(reserved, tuple(nodes), tuple(waiting), cost)


def _use(
    name: str, kind: NodeType, reserved: bool, tasks: list[int], demands: Sequence[Resources]
) -> NodeUse:
    used = Resources()
    for task in tasks:
        used = used + demands[task]
    return NodeUse(name, kind, reserved, tuple(tasks), used)


def cost_curve(types: Sequence[NodeType], demands: Sequence[Resources]) -> list[Plan]:
    """:func:`plan` for every number of reserved nodes from 0 to the types' total count."""
    most = sum(max(kind.count, 0) for kind in types)
    return [plan(types, demands, reserved) for reserved in range(most + 1)]


def cheapest(curve: Sequence[Plan]) -> Plan:
    """The plan with the lowest total cost, fewest waiting tasks first (then fewest reserved)."""
    return min(curve, key=lambda p: (len(p.waiting), p.cost.total, p.reserved))
