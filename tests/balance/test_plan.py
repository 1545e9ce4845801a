"""``gossamer plan``: the table, the PNG plot and one-line errors on bad input."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gossamer.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
WORKERS = EXAMPLES / "plan-workers.toml"
DEMAND = EXAMPLES / "plan-demand.toml"


def test_plan_prints_assignment_cost_and_curve(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--workers", str(WORKERS), "--demand", str(DEMAND)]) == 0
    out = capsys.readouterr().out
    assert "assignment with 6 reserved nodes (the cheapest), 15 tasks" in out
    assert "cost: reservation 6.00 + usage 3.60 + extra 0.00 = 9.60" in out
    curve = out.split("cost curve over reserved nodes")[1].splitlines()[2:]
    assert len(curve) == 9  # 0..8 reserved nodes
    assert [line.split()[0] for line in curve if line.endswith("*")] == ["6"]


def test_plan_inline_demand_and_chosen_reserved(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workers = tmp_path / "w.json"
    workers.write_text(
        '{"types": [{"name": "n", "cpu": 4, "memory": 8, "bandwidth": 100, "count": 4,'
        ' "reserve": 1, "usage": 0.5, "on_demand": 2}]}'
    )
    argv = ["plan", "--workers", str(workers), "--demand", "cpu=12,memory=12,bandwidth=120"]
    assert main([*argv, "--tasks", "12", "--reserved", "1"]) == 0
    out = capsys.readouterr().out
    assert "assignment with 1 reserved nodes, 12 tasks" in out
    assert "on-demand" in out
    assert "extra 4.00" in out


def test_plan_plot_writes_png(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    png = tmp_path / "curve.png"
    argv = ["plan", "--workers", str(WORKERS), "--demand", str(DEMAND), "--plot", str(png)]
    assert main(argv) == 0
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and b"IEND" in data[-12:]
    assert len(data) > 5_000


def test_plot_without_matplotlib_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("matplotlib", "matplotlib.backends", "matplotlib.backends.backend_agg"):
        monkeypatch.setitem(sys.modules, name, None)  # what an install without [plot] has
    png = tmp_path / "curve.png"
    argv = ["plan", "--workers", str(WORKERS), "--demand", str(DEMAND), "--plot", str(png)]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert err == (
        "gossamer: plan: --plot needs matplotlib, which is not installed: "
        "pip install 'gossamer[plot]'\n"
    )
    assert out == "" and not png.exists()


@pytest.mark.parametrize(
    ("workers", "demand", "message"),
    [
        ("missing.toml", "cpu=1", "cannot read"),
        ("[[types]]\nname = 'x'\ncpu = 'four'\nreserve = 1\nusage = 1\n", "cpu=1", "number"),
        ("types = []\n", "cpu=1", "non-empty list"),
        ("not toml = = 1", "cpu=1", "cannot read"),
        ("[[types]]\nreserve = 1\nusage = 1\non_demand = 1.5\n", "cpu=1", "on_demand"),
        ("[[types]]\nreserve = 1\nusage = 1\n", "gpu=3", "unknown resource"),
        ("[[types]]\nreserve = 1\nusage = 1\n", "cpu=-3", "negative"),
    ],
)
def test_bad_input_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], workers: str, demand: str, message: str
) -> None:
    path = tmp_path / "workers.toml"
    if workers != "missing.toml":
        path.write_text(workers)
    assert main(["plan", "--workers", str(path), "--demand", demand]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gossamer: plan: ") and message in err
    assert err.count("\n") == 1


def test_bad_reserved_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["plan", "--workers", str(WORKERS), "--demand", str(DEMAND), "--reserved", "99"]
    assert main(argv) == 2
    assert "--reserved must be 0 to 8" in capsys.readouterr().err
