"""The failure a command prints as one line with exit status 1 (bad configuration is
:class:`gossamer.settings.SettingsError`, exit status 2)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path


class CommandError(RuntimeError):
    """Something outside the crawler failed for good (Redis unreachable, the page store lost,
    no job): the message is the one line to print, ``exit_status`` the command's status."""

    exit_status = 1


def named(exc: OSError, path: Path) -> OSError:
    """``exc`` naming ``path`` if it names no file (a write, a flush): a full disk is then
    told as ``cannot write OUT/pages.jsonl``. Raise it ``from exc``."""
    if exc.filename is not None or exc.errno is None:
        return exc
    return OSError(exc.errno, exc.strerror, str(path))
