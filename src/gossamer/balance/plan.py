"""``gossamer plan``: the first-fit placement and cost curve for given node types and demand.

The workers file (TOML or JSON) lists node types; units are cores, GB and Mbit/s, prices are
per node for the whole crawl::

    [[types]]
    name = "small"
    cpu = 4            # cores
    memory = 8         # GB
    bandwidth = 100    # Mbit/s
    count = 6          # nodes of this type that can be reserved
    reserve = 1.0      # reserving one node, used or not
    usage = 0.5        # one reserved node that runs tasks
    on_demand = 2.5    # one on-demand node (> reserve + usage); leave out for none

The demand is a file of ``[[tasks]]`` (``cpu``, ``memory``, ``bandwidth``, optional ``count``
and ``name``), or an inline total vector ``cpu=40,memory=64,bandwidth=800`` split into
``--tasks`` equal tasks. See ``examples/plan-workers.toml`` and ``examples/plan-demand.toml``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gossamer.balance.firstfit import (
    NodeType,
    Plan,
    Resources,
    cheapest,
    cost_curve,
)

EXIT_BAD_INPUT = 2
DIMENSIONS = ("cpu", "memory", "bandwidth")


class PlanError(ValueError):
    """A bad workers or demand input (one line, for the command's error)."""


def add_plan_parser(sub: Any) -> None:
    """The ``plan`` command."""
    cmd = sub.add_parser("plan", help="node cost plan: first-fit placement and cost curve")
    cmd.add_argument("--workers", type=Path, required=True, help="node types (TOML or JSON)")
    cmd.add_argument(
        "--demand",
        required=True,
        help="tasks file (TOML or JSON) or a total vector cpu=..,memory=..,bandwidth=..",
    )
    cmd.add_argument("--tasks", type=int, default=40, help="equal tasks of a total vector (40)")
    cmd.add_argument("--reserved", type=int, help="reserved nodes to show (default: cheapest)")
    cmd.add_argument("--plot", type=Path, help="write the cost curve as a PNG to this file")
    cmd.set_defaults(handler=run_plan)


def run_plan(args: argparse.Namespace) -> int:
    """Print the assignment, its cost and the cost curve; exit 2 on bad input."""
    try:
        if args.plot:
            check_plotting()
        types = load_types(args.workers)
        demands = load_demand(args.demand, args.tasks)
        curve = cost_curve(types, demands)
        shown = cheapest(curve) if args.reserved is None else _pick(curve, args.reserved)
    except PlanError as exc:
        print(f"gossamer: plan: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(format_plan(shown, demands, chosen=args.reserved is None))
    print()
    print(format_curve(curve))
    if args.plot:
        plot_curve(curve, args.plot)
        print(f"\ncost curve plot: {args.plot}")
    return 0


def _pick(curve: Sequence[Plan], reserved: int) -> Plan:
    if not 0 <= reserved < len(curve):
        raise PlanError(f"--reserved must be 0 to {len(curve) - 1}, not {reserved}")
    return curve[reserved]


# -- input ------------------------------------------------------------------------------------


def _read(path: Path) -> Mapping[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise PlanError(f"cannot read {path}: {exc}".splitlines()[0]) from None
    if not isinstance(data, dict):
        raise PlanError(f"{path}: expected a table at the top")
    return data


def _number(item: Mapping[str, Any], key: str, where: str, default: float | None = None) -> float:
    value = item.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise PlanError(f"{where}: {key} must be a number, not {value!r}")
    if value < 0:
        raise PlanError(f"{where}: {key} must not be negative")
    return float(value)


def _vector(item: Mapping[str, Any], where: str) -> Resources:
    return Resources(*(_number(item, key, where, 0.0) for key in DIMENSIONS))


def load_types(path: Path) -> list[NodeType]:
    """The node types of a workers file (PlanError on bad input)."""
    items = _read(path).get("types")
    if not isinstance(items, list) or not items:
        raise PlanError(f"{path}: needs a non-empty list of [[types]]")
    types = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise PlanError(f"{path}: types[{i}] is not a table")
        name = str(item.get("name", f"type{i + 1}"))
        where = f"{path}: type {name}"
        count = _number(item, "count", where, 1)
        if count != int(count):
            raise PlanError(f"{where}: count must be a whole number")
        reserve, usage = _number(item, "reserve", where), _number(item, "usage", where)
        on_demand = None if item.get("on_demand") is None else _number(item, "on_demand", where)
        if on_demand is not None and on_demand <= reserve + usage:
            raise PlanError(f"{where}: on_demand must be above reserve + usage")
        capacity = _vector(item, where)
        types.append(NodeType(name, capacity, int(count), reserve, usage, on_demand))
    return types


def load_demand(spec: str, tasks: int) -> list[Resources]:
    """Task demand vectors from a tasks file or an inline total vector split ``tasks`` ways."""
    if "=" in spec and not Path(spec).exists():
        if tasks < 1:
            raise PlanError("--tasks must be at least 1")
        return [_inline(spec).scaled(1.0 / tasks)] * tasks
    items = _read(Path(spec)).get("tasks")
    if not isinstance(items, list) or not items:
        raise PlanError(f"{spec}: needs a non-empty list of [[tasks]]")
    demands: list[Resources] = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise PlanError(f"{spec}: tasks[{i}] is not a table")
        where = f"{spec}: task {item.get('name', i + 1)}"
        count = _number(item, "count", where, 1)
        demands += [_vector(item, where)] * int(count)
    return demands


def _inline(spec: str) -> Resources:
    values: dict[str, float] = {}
    for part in filter(None, spec.split(",")):
        key, _, raw = part.partition("=")
        if key.strip() not in DIMENSIONS:
            raise PlanError(f"--demand: unknown resource {key.strip()!r} (cpu, memory, bandwidth)")
        try:
            values[key.strip()] = float(raw)
        except ValueError:
            raise PlanError(f"--demand: {key.strip()} must be a number, not {raw!r}") from None
    return _vector(values, "--demand")


# -- output -----------------------------------------------------------------------------------


def format_plan(shown: Plan, demands: Sequence[Resources], chosen: bool) -> str:
    """The assignment table, waiting tasks and cost breakdown."""
    why = " (the cheapest)" if chosen else ""
    lines = [f"assignment with {shown.reserved} reserved nodes{why}, {len(demands)} tasks"]
    lines.append(f"{'node':<6}{'type':<12}{'kind':<11}{'tasks':>6}  {'cpu':>14}  ")
    lines[-1] += f"{'memory':>14}  {'bandwidth':>16}"
    for node in shown.nodes:
        cap, used = node.type.capacity, node.used
        kind = "reserved" if node.reserved else "on-demand"
        lines.append(
            f"{node.name:<6}{node.type.name:<12}{kind:<11}{len(node.tasks):>6}  "
            f"{_frac(used.cpu, cap.cpu):>14}  {_frac(used.memory, cap.memory):>14}  "
            f"{_frac(used.bandwidth, cap.bandwidth):>16}"
        )
    waiting = ", ".join(str(t + 1) for t in shown.waiting) or "none"
    lines.append(f"waiting tasks (fit no node type): {waiting}")
    cost = shown.cost
    lines.append(
        f"cost: reservation {cost.reservation:.2f} + usage {cost.usage:.2f} + "
        f"extra {cost.extra:.2f} = {cost.total:.2f}"
    )
    return "\n".join(lines)


def _frac(used: float, capacity: float) -> str:
    return f"{used:.4g}/{capacity:.4g}"


def format_curve(curve: Sequence[Plan]) -> str:
    """The cost over the number of reserved nodes; ``*`` marks the cheapest."""
    best = cheapest(curve).reserved
    lines = ["cost curve over reserved nodes"]
    lines.append(
        f"{'reserved':>8}  {'reservation':>11}  {'usage':>9}  {'extra':>9}  {'total':>9}  waiting"
    )
    for p in curve:
        mark = "  *" if p.reserved == best else ""
        c = p.cost
        lines.append(
            f"{p.reserved:>8}  {c.reservation:>11.2f}  {c.usage:>9.2f}  {c.extra:>9.2f}  "
            f"{c.total:>9.2f}  {len(p.waiting):>7}{mark}"
        )
    return "\n".join(lines)


def check_plotting() -> None:
    """PlanError unless matplotlib, the optional ``plot`` extra, can be imported."""
    try:
        import matplotlib.backends.backend_agg  # noqa: F401
    except ImportError:
        raise PlanError(
            "--plot needs matplotlib, which is not installed: pip install 'gossamer[plot]'"
        ) from None


def plot_curve(curve: Sequence[Plan], path: Path) -> None:
    """The cost curve as a PNG: stacked reservation/usage/extra bars and the total (needs
    matplotlib: see :func:`check_plotting`)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    xs = [p.reserved for p in curve]
    reservation = [p.cost.reservation for p in curve]
    usage = [p.cost.usage for p in curve]
    extra = [p.cost.extra for p in curve]
    bottom = [r + u for r, u in zip(reservation, usage, strict=True)]
    figure = Figure(figsize=(7, 4), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    axes.bar(xs, reservation, label="reservation")
    axes.bar(xs, usage, bottom=reservation, label="usage")
    axes.bar(xs, extra, bottom=bottom, label="extra (on-demand)")
    axes.plot(xs, [p.cost.total for p in curve], color="black", marker="o", label="total")
    best = cheapest(curve)
    axes.axvline(best.reserved, color="grey", linestyle="--", label=f"cheapest: {best.reserved}")
    axes.set_xlabel("reserved nodes")
    axes.set_ylabel("cost")
    axes.set_title("Cost over the number of reserved nodes")
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, format="png")
