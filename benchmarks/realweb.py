"""A benchmark web of real documents: Debian's documentation packages, one loopback host each.

Each documentation set (`DOCS`) is served whole by nginx on its own loopback address, from a
symbolic link ``www/<ip>`` to the package's HTML directory: its pages link to each other with
relative links, so a set crawled from its ``index.html`` stays on its host. The packages
missing here are installed with ``apt-get install -y --no-install-recommends`` (as root only;
otherwise the sets found are served and the missing ones named).

The sets are hand-written and generated HTML of several tool chains (Sphinx, DocBook,
AsciiDoc, SQLite's own): API references of 20,000-50,000 tags, long tutorials, release notes,
and many small pages, with the markup those tools really emit.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from weblinks import host_ip

GUARD_TAGS = 4096
"""Pages with more ``<`` than this run the markup guard's scans (``parse/scan.py``)."""
HUGE_TAGS = 20_000


@dataclass(frozen=True)
class DocSet:
    """One Debian documentation package and where its HTML lives once installed."""

    package: str
    pattern: str
    """A glob from ``/`` matching the HTML directory (the version may be in the name)."""

    def root(self) -> Path | None:
        """The installed HTML directory, or None."""
        found = sorted(Path("/").glob(self.pattern))
        return found[-1] if found and (found[-1] / "index.html").exists() else None


DOCS = (
    DocSet("python3-doc", "usr/share/doc/python3-doc/html"),
    DocSet("postgresql-doc", "usr/share/doc/postgresql-doc-*/html"),
    DocSet("sqlite3-doc", "usr/share/doc/sqlite3"),
    DocSet("git-doc", "usr/share/doc/git-doc"),
)
"""The documentation sets served, one host each, in host order."""


@dataclass(frozen=True)
class Site:
    """One documentation set served on one host."""

    package: str
    root: Path
    ip: str


_APT = ["apt-get", "install", "-y", "-q", "--no-install-recommends"]


def install_missing(docs: Sequence[DocSet] = DOCS) -> list[str]:
    """Install the documentation packages not found (root only), each only if that upgrades
    or removes no installed package (postgresql-doc-N moves an installed PostgreSQL server
    of an older point release to its own); the ones still missing."""
    missing = [doc.package for doc in docs if doc.root() is None]
    if missing and os.geteuid() == 0 and shutil.which("apt-get"):
        env = os.environ | {"DEBIAN_FRONTEND": "noninteractive"}
        for package in missing:
            if (why := _touches_others(package, env)) is not None:
                print(f"not installing {package}: {why}", flush=True)
                continue
            print(f"installing {package} with apt-get", flush=True)
            command = [*_APT, package]
            subprocess.run(command, env=env, stdout=subprocess.DEVNULL, check=False)
    return [doc.package for doc in docs if doc.root() is None]


def _touches_others(package: str, env: dict[str, str]) -> str | None:
    """Why installing ``package`` would change installed packages (apt-get's simulation:
    an ``Inst`` with the old version in brackets is an upgrade, ``Remv`` a removal)."""
    plan = subprocess.run(
        [*_APT, "-s", package], env=env, capture_output=True, text=True, check=False
    )
    changes = [
        line.split()[1]
        for line in plan.stdout.splitlines()
        if line.startswith("Remv ") or (line.startswith("Inst ") and " [" in line)
    ]
    return f"it would upgrade or remove {', '.join(changes)}" if changes else None


def lay_out(www: Path, docs: Sequence[DocSet] = DOCS) -> list[Site]:
    """Link ``www/<ip>`` to each installed set's HTML directory; the sites served."""
    shutil.rmtree(www, ignore_errors=True)
    www.mkdir(parents=True)
    sites = []
    for doc in docs:
        root = doc.root()
        if root is None:
            continue
        ip = host_ip(len(sites))
        (www / ip).symlink_to(root, target_is_directory=True)
        sites.append(Site(doc.package, root, ip))
    return sites


def seeds(sites: Iterable[Site], port: int) -> list[str]:
    """Every site's front page."""
    return [f"http://{site.ip}:{port}/" for site in sites]


def html_files(sites: Iterable[Site]) -> list[Path]:
    """Every HTML file served, in a stable order."""
    return [file for site in sites for file in sorted(site.root.rglob("*.html"))]


def file_of(url: str, sites: Sequence[Site]) -> Path | None:
    """The file nginx answers ``url`` with, if it is one of the sites' regular files."""
    parts = urlsplit(url)
    roots = {site.ip: site.root for site in sites}
    root = roots.get(parts.hostname or "")
    if root is None:
        return None
    path = unquote(parts.path).lstrip("/")
    file = root / path
    if not path or path.endswith("/"):
        file = file / "index.html"
    return file if file.is_file() else None


@dataclass(frozen=True)
class TagSpread:
    """How many tags (``<``) the pages hold."""

    pages: int
    p50: float
    p90: float
    p99: float
    max: int
    over_guard: int
    """Pages with more than `GUARD_TAGS`."""
    over_huge: int
    """Pages with more than `HUGE_TAGS`."""
    mean_kb: float

    def text(self, label: str) -> str:
        """One line for the report."""
        return (
            f"tags per page ({label}: {self.pages} pages, {self.mean_kb:.1f} KB average): "
            f"p50 {self.p50:,.0f}, p90 {self.p90:,.0f}, p99 {self.p99:,.0f}, max {self.max:,}; "
            f"{self.over_guard} over {GUARD_TAGS:,}, {self.over_huge} over {HUGE_TAGS:,}"
        )


def tag_spread(files: Sequence[Path]) -> TagSpread:
    """The distribution of ``<`` counts (start and end tags, comments) over ``files``."""
    bodies = [file.read_bytes() for file in files]
    counts = sorted(body.count(b"<") for body in bodies)
    cuts = statistics.quantiles(counts, n=100, method="inclusive") if len(counts) > 1 else []
    pick = (lambda p: cuts[p - 1]) if cuts else (lambda p: float(counts[0] if counts else 0))
    return TagSpread(
        pages=len(counts),
        p50=pick(50),
        p90=pick(90),
        p99=pick(99),
        max=counts[-1] if counts else 0,
        over_guard=sum(c > GUARD_TAGS for c in counts),
        over_huge=sum(c > HUGE_TAGS for c in counts),
        mean_kb=sum(map(len, bodies)) / max(1, len(bodies)) / 1024,
    )
