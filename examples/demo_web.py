"""What the API examples crawl: the URL given with ``--seed``, or else the bundled test web
(``python -m gossamer.testweb``), started here on a free port and stopped at the end; and
where they write (``--out``).

The test web's hosts (``site0.test``, ``site1.test``...) all live on 127.0.0.1, so a crawl of
it says so (``resolve``) and lets the crawl follow links between them (``allow_domains``);
both settings are harmless for a crawl of a real site.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

RESOLVE = ["*.test=127.0.0.1"]
ALLOW_DOMAINS = ["test"]


def options(doc: str | None, out: str, redis: bool = False) -> argparse.Namespace:
    """An example's command line: ``--seed URL``, ``--out DIR`` (and ``--redis URL``)."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--seed", help="the URL to crawl (default: the bundled test web)")
    parser.add_argument("--out", type=Path, default=Path(out), help=f"output directory ({out})")
    if redis:
        parser.add_argument("--redis", help="Redis URL (default: a private redis-server)")
    return parser.parse_args()


@contextmanager
def demo_web(seed: str | None, hosts: int = 3, pages: int = 20) -> Iterator[str]:
    """The seed URL: ``seed`` if given, else the front page of a test web served for the
    duration of the block."""
    if seed:
        yield seed
        return
    command = [sys.executable, "-m", "gossamer.testweb", "--port", "0", "--hosts", str(hosts)]
    command += ["--pages", str(pages), "--specials", "none", "--crawl-delay", "0"]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        line = server.stdout.readline()  # "serving 3 hosts on http://127.0.0.1:PORT (...)"
        found = re.search(r":(\d+) ", line)
        if found is None:
            raise RuntimeError(f"the test web did not start: {line!r}")
        yield f"http://site0.test:{found.group(1)}/"
    finally:
        server.terminate()
        server.wait(10)
