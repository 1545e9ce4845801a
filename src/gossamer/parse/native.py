"""gossamer's C parts (``setup.py``), loaded where they were built.

Each speeds up a Python function that stays beside it as the reference: the Python code runs
where the C part was not built (no C compiler at install time: the build skips it and says
so), does not bind (:data:`LINKWALK`: selectolax's module must export lexbor's functions and
lay its nodes out as its ``lexbor.pxd`` says), or is turned off with ``GOSSAMER_NATIVE=0``
(the tests run both and compare them). `in_use` names the parts that run; ``make`` prints it
after each install.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

__all__ = ["LINKWALK", "SIMHASH", "SQUASH", "WHOLE", "in_use"]


def _enabled() -> bool:
    return os.environ.get("GOSSAMER_NATIVE", "1").strip() != "0"


def _module(name: str) -> ModuleType | None:
    """The C module ``name`` where it was built and is not turned off, or None."""
    if not _enabled():
        return None
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def _linkwalk() -> ModuleType | None:
    """`gossamer.parse._linkwalk` bound to the lexbor of selectolax's loaded module, or None."""
    if not _enabled():
        return None
    try:
        _linkwalk = importlib.import_module("gossamer.parse._linkwalk")
    except ImportError:
        return None
    import selectolax.lexbor as lexbor

    ids = [lexbor.create_tag(name).tag_id for name in ("a", "area", "link", "meta", "base")]
    try:
        _linkwalk.bind(lexbor.__file__, lexbor.LexborNode, *ids)
    except ImportError:
        return None
    return _linkwalk


LINKWALK: ModuleType | None = _linkwalk()
"""The search for a page's links in C (``parse/_linkwalk.c``): `gossamer.parse.links`' own
pass over lexbor's tree, made without a Python object per element; None: the Python pass."""


SQUASH: ModuleType | None = _module("gossamer.extract._squash")
"""A text's words, one space between them, in C (``extract/_squash.c``): the walk's blocks
(`gossamer.extract.spaces`); None: the Python expression."""

SIMHASH: ModuleType | None = _module("gossamer.digests._simhash")
"""The SimHash of a text's letters in one C pass (``digests/_simhash.c``); None: numpy's."""

WHOLE: ModuleType | None = _module("gossamer.extract._whole")
"""The scan of a box the walk reads whole, in C (``extract/_whole.c``), not yet bound:
`gossamer.extract.kinds` binds it (it knows the kinds); None: the Python scan."""


def in_use() -> dict[str, bool]:
    """Each C part and whether it runs."""
    return {
        "linkwalk": LINKWALK is not None,
        "squash": SQUASH is not None,
        "simhash": SIMHASH is not None,
        "whole": WHOLE is not None,
    }
