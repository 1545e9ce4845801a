"""The base of the settings models: their errors and :class:`SettingsModel`."""

from collections.abc import Iterator
from typing import Any, ClassVar

import msgspec

from gossamer.redact import MASK, redact_text

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


class FieldError(InvalidSetting):
    """A model's check's error (``_check``) about the field ``name`` of the model: an
    :class:`InvalidSetting` naming it, so a model built in Python (``CrawlSettings(...)``)
    raises what a converted one does (converted, its place is the field's dotted path)."""

    def __init__(self, name: str, problem: str) -> None:
        super().__init__(name, problem)
        self.name = name


class SettingsModel(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Base of every settings model (each also says ``frozen=True, kw_only=True``: Structs do
    not inherit ``kw_only``, and mypy wants ``frozen`` on each).

    Its ``repr`` (and ``str``, and rich's) shows no credential: passwords in URLs and DSNs
    (proxies, seeds, the page store) are masked by :func:`gossamer.redact.redact_text`, and
    the values of the fields a model names in ``_masked_fields`` are shown as ``***``."""

    _masked_fields: ClassVar[tuple[str, ...]] = ()

    def __post_init__(self) -> None:
        try:
            self._check()
        except (TypeError, AttributeError):
            # A value of another type than its field's, in a model built in Python: its
            # conversion (when a Crawl takes the settings) names the field, then runs the
            # checks again on converted values.
            return

    def _check(self) -> None:
        """The model's checks beyond its fields' types and bounds (each raises
        :class:`FieldError`); they may assume every value has its field's type."""

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={value!r}" for name, value in self.__rich_repr__())
        return f"{type(self).__name__}({shown})"

    def __rich_repr__(self) -> Iterator[tuple[str, Any]]:
        for name in self.__struct_fields__:
            value = getattr(self, name)
            if name in self._masked_fields and isinstance(value, dict):
                value = dict.fromkeys(value, MASK)
            elif name in self._masked_fields and value:
                value = MASK
            yield name, redacted(value)


def redacted(value: Any) -> Any:
    """``value`` to be shown: each string in it (in lists, tuples, dict values) with its
    passwords masked (:func:`gossamer.redact.redact_text`); other values as they are."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, list | tuple):
        return type(value)(redacted(item) for item in value)
    if isinstance(value, dict):
        return {key: redacted(item) for key, item in value.items()}
    return value
