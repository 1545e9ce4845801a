"""A parse worker's imports leave out ``hashlib`` (OpenSSL's start), which only a seed's
masked user name needs."""

from __future__ import annotations

import subprocess
import sys


def test_a_parse_worker_imports_no_hashlib() -> None:
    script = "import sys, gossamer.page.sandboxed; print('hashlib' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "False"
