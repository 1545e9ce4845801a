"""The generated reference pages (settings, records) are current: a setting or a record field
added to the code without `make docs` fails here, naming the page."""

from __future__ import annotations

import sys
from pathlib import Path

import msgspec

from gossamer.settings import AuthSettings, ClusterSettings, CrawlSettings

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import reference_pages  # noqa: E402


def test_the_generated_pages_are_current() -> None:
    assert [str(path.relative_to(ROOT)) for path in reference_pages.stale()] == []


def test_every_setting_has_its_row() -> None:
    page = (ROOT / "docs" / "reference" / "settings.md").read_text(encoding="utf-8")
    for model in (CrawlSettings, ClusterSettings, AuthSettings):
        for info in msgspec.structs.fields(model):
            assert f"| `{info.name}` |" in page, info.name
    assert "| `concurrency` | `--concurrency` | `GOSSAMER_CONCURRENCY` |" in page
    assert "| `robots` | `--no-robots` |" in page
