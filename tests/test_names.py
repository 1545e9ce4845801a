"""Code names things by what they do: the labels of the source papers (P1-P5, see the README)
appear in the documentation, never in gossamer's code, docstrings or help texts."""

from __future__ import annotations

import re
from pathlib import Path

import gossamer

ROOT = Path(gossamer.__file__).parent
PAPER_LABEL = re.compile(r"\bP[1-5]\b")


def test_no_paper_labels_in_the_code() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sorted(ROOT.rglob("*.py"))
        for number, line in enumerate(path.read_text("utf-8").splitlines(), 1)
        if PAPER_LABEL.search(line)
    ]
    assert found == []
