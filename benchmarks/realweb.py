"""A benchmark web of real documents: Debian's documentation packages, one loopback host each.

Each documentation set (`DOCS`) is served whole by nginx on its own loopback address, from a
symbolic link ``www/<ip>`` to the package's HTML directory: its pages link to each other with
relative links, so a set crawled from its ``index.html`` stays on its host. The packages
missing here are unpacked from their ``.deb`` files under ``bench-out/debs``
(`provide_missing`: ``apt-get download`` and ``dpkg-deb -x``, root or not; nothing is
installed), otherwise the sets found are served and the missing ones named.

The sets are hand-written and generated HTML of several tool chains (Sphinx, DocBook,
AsciiDoc, SQLite's own): API references of 20,000-50,000 tags, long tutorials, release notes,
and many small pages, with the markup those tools really emit.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
from argparse import ArgumentTypeError
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

    def root(self, unpacked: Path | None = None) -> Path | None:
        """The HTML directory, installed or else unpacked under ``unpacked``
        (`provide_missing`; `UNPACKED` by default), or None."""
        for base in (Path("/"), (unpacked or UNPACKED) / "root"):
            found = sorted(base.glob(self.pattern))
            if found and (found[-1] / "index.html").exists():
                return found[-1]
        return None


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


UNPACKED = Path(__file__).resolve().parent.parent / "bench-out" / "debs"
"""Where the documentation packages not installed here are unpacked (`provide_missing`)."""


def doc_sets(text: str) -> tuple[DocSet, ...]:
    """``PACKAGE=GLOB,...`` as documentation sets."""
    sets = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        package, equals, pattern = item.partition("=")
        if not (equals and package and pattern) or pattern.startswith("/"):
            raise ArgumentTypeError(f"{item!r}: want PACKAGE=GLOB, GLOB relative to /")
        sets.append(DocSet(package, pattern))
    if not sets:
        raise ArgumentTypeError("no documentation set given")
    return tuple(sets)


def provide_missing(docs: Sequence[DocSet] = DOCS, into: Path = UNPACKED) -> list[str]:
    """Unpack the documentation packages not found into ``into``: each ``.deb`` fetched
    with ``apt-get download`` (with the ``-doc`` packages it depends on, which hold the
    files of versioned sets such as python3.11-doc) and opened with ``dpkg-deb -x``.
    Nothing is installed: no installed package is upgraded or removed, root or not
    (installing python3-doc would upgrade the machine's Python to the docs' point
    release). The packages still missing."""
    missing = [doc for doc in docs if doc.root(into) is None]
    if missing and shutil.which("apt-get") and shutil.which("dpkg-deb"):
        debs = into / "files"
        debs.mkdir(parents=True, exist_ok=True)
        for doc in missing:
            print(f"unpacking {doc.package} (apt-get download) into {into}", flush=True)
            for package in (doc.package, *_doc_dependencies(doc.package)):
                _unpack(package, debs, into / "root")
    return [doc.package for doc in docs if doc.root(into) is None]


def located(path: Path) -> Path:
    """``path`` (an installed documentation directory) if it is there, else where
    `provide_missing` unpacked it, if it did."""
    unpacked = UNPACKED / "root" / path.relative_to("/")
    return unpacked if not path.exists() and unpacked.exists() else path


def _doc_dependencies(package: str) -> list[str]:
    """The ``-doc`` packages ``package`` depends on (``apt-cache depends``)."""
    listed = subprocess.run(
        ["apt-cache", "depends", package], capture_output=True, text=True, check=False
    )
    names = (
        line.split(":", 1)[1].strip().strip("<>")
        for line in listed.stdout.splitlines()
        if line.strip().startswith("Depends:")
    )
    return [name for name in names if name.endswith("-doc") or "-doc-" in name]


def _unpack(package: str, debs: Path, root: Path) -> None:
    """Fetch ``package``'s ``.deb`` into ``debs`` (kept for the next run) and open it
    under ``root``."""
    if not any(debs.glob(f"{package}_*.deb")):
        subprocess.run(
            ["apt-get", "download", "-q", package],
            cwd=debs,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,  # (as root: a warning that _apt cannot write here)
            check=False,
        )
    for deb in sorted(debs.glob(f"{package}_*.deb"))[-1:]:
        subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=False)


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
