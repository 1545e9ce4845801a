"""Rule documents written to real files and evaluated on real pages through the one
evaluation path (`evaluate_body`: the crawl's parse, then the rule)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gossamer.extract.rules import RuleSet, evaluate_body, load_rules
from gossamer.extract.rules.evaluate import PageItems

Load = Callable[..., RuleSet]
Run = Callable[..., PageItems]


@pytest.fixture
def load(tmp_path: Path) -> Load:
    """Write ``text`` to ``tmp_path/name`` and load it (with ``functions``)."""

    def load(text: str, name: str = "rules.toml", **functions: str) -> RuleSet:
        path = tmp_path / name
        path.write_text(text, "utf-8")
        return load_rules([path], functions)

    return load


@pytest.fixture
def run(load: Load) -> Run:
    """Load ``rules`` and evaluate them on ``html`` fetched from ``url``."""

    def run(rules: str, html: str, url: str = "https://site.test/page", **functions: str) -> Any:
        ruleset = load(rules, **functions)
        _page, found = evaluate_body(ruleset, url, html.encode("utf-8"))
        assert found is not None, "no rule for the URL"
        return found

    return run
