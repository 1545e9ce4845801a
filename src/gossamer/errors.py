"""The failure a command prints as one line with exit status 1 (bad configuration is
:class:`gossamer.settings.SettingsError`, exit status 2)."""

from __future__ import annotations


class CommandError(RuntimeError):
    """Something outside the crawler failed for good (Redis unreachable, the page store lost,
    no job): the message is the one line to print, ``exit_status`` the command's status."""

    exit_status = 1
