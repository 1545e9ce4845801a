"""The documented ACL (docs/security.md, tests/cluster/acl.py) covers every command gossamer's
Lua scripts send: a script added or changed cannot need a rule the docs do not give."""

from __future__ import annotations

import re
from pathlib import Path

import gossamer

from .acl import GOSSAMER_ACL

ROOT = Path(gossamer.__file__).parent
DOCS = ROOT.parents[1] / "docs" / "security.md"


def script_commands() -> set[str]:
    found: set[str] = set()
    for script in ROOT.rglob("*.lua"):
        text = script.read_text("utf-8")
        found |= {m.lower() for m in re.findall(r"redis\.p?call\(\s*['\"](\w+)['\"]", text)}
    return found


def test_the_acl_allows_every_command_of_the_scripts() -> None:
    commands = script_commands()
    assert {"hget", "zadd"} <= commands  # the scan finds them
    allowed = {rule[1:] for rule in GOSSAMER_ACL if rule.startswith("+")}
    assert commands - allowed == set()


def test_the_documented_acl_is_the_tested_one() -> None:
    line = next(x for x in DOCS.read_text("utf-8").splitlines() if x.startswith("user crawler "))
    assert " ".join(GOSSAMER_ACL) in line
