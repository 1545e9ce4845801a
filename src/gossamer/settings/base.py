"""The base of the settings models: their errors and :class:`SettingsModel`."""

from __future__ import annotations

import msgspec

__all__ = ["FieldError", "InvalidSetting", "SettingsError", "SettingsModel"]


class SettingsError(ValueError):
    """Bad configuration; the message names the offending field."""


class InvalidSetting(SettingsError):
    """A value that fails its setting's checks: ``field`` is its place (``auth.0.type``,
    ``allow_ports.0``; ``settings`` for the whole), ``problem`` what is wrong with it."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"invalid setting '{field}': {problem}")
        self.field = field
        self.problem = problem


class FieldError(ValueError):
    """A ``__post_init__`` check's error about the field ``name`` of its model."""

    def __init__(self, name: str, problem: str) -> None:
        super().__init__(problem)
        self.name = name


class SettingsModel(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Base of every settings model (each also says ``frozen=True, kw_only=True``: Structs do
    not inherit ``kw_only``, and mypy wants ``frozen`` on each)."""
