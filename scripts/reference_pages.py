"""Write the generated pages of the docs' reference, so they cannot drift from the code:
docs/reference/settings.md from the settings models (settings_page.py) and
docs/reference/records.md from the record's fields (records_page.py).

    python scripts/reference_pages.py          # write them (make docs does)
    python scripts/reference_pages.py --check  # exit 1 if one is not current (make test)
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import records_page
import settings_page

REFERENCE = Path(__file__).resolve().parent.parent / "docs" / "reference"
PAGES: dict[Path, Callable[[], str]] = {
    REFERENCE / "settings.md": settings_page.render,
    REFERENCE / "records.md": records_page.render,
}


def stale() -> list[Path]:
    """The generated pages whose file differs from what the code says now."""
    return [
        path
        for path, render in PAGES.items()
        if not path.exists() or path.read_text(encoding="utf-8") != render()
    ]


def main(argv: list[str] | None = None) -> int:
    """Write the pages, or with ``--check`` exit 1 when one of them is not current."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if a page is not current")
    args = parser.parse_args(argv)
    if args.check:
        for path in stale():
            print(f"{path} is not current: run `make docs`", file=sys.stderr)
        return 1 if stale() else 0
    for path, render in PAGES.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
