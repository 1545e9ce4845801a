"""The typed settings models: :class:`CrawlSettings` (what any crawl can be told),
:class:`ClusterSettings` (what only a cluster job adds) and :class:`JobSettings` (both: what
``cluster submit`` stores and every worker of the job reads).

Values come, lowest precedence first, from the models' defaults, a TOML file (``--config``;
top-level keys or a ``[crawl]`` table, not both), ``GOSSAMER_<FIELD>`` environment variables
and command line flags. Invalid values raise :class:`SettingsError` naming the field; so does
a seeds file that is not text. One TOML file serves both: a single-process crawl checks its
cluster keys and does not use them.

The models are msgspec Structs: immutable, every key known, keyword arguments only. Types and
bounds are checked when values are converted (:func:`load_model`, :func:`validate_model`,
:func:`settings_from_json`), not when a model is built directly (``CrawlSettings(...)``);
the checks of ``__post_init__`` (each model's ``_check``) run in both, and raise
:class:`InvalidSetting` naming the field (a value of another type than its field's is left
to the conversion).

``base`` holds the errors and :class:`SettingsModel`; ``models`` the crawl's settings Structs
(:class:`CrawlSettings`, :class:`JobSettings`), ``auth`` a login's and ``cluster`` a cluster
job's, each with its fields' types, defaults and ``__post_init__`` checks; ``loading`` where
values come from and how they are converted (TOML, the environment, :func:`load_settings`,
:func:`load_model`, :func:`validate_model`, the JSON and dict forms, a field's type and
description); ``inputs`` what a crawl reads through its settings (the secrets of its logins,
its seeds, its scope); ``resolve`` the parser of the ``resolve`` setting's items, which the
fetch stage's resolver uses too; ``conninfo`` the reader of a ``key=value`` store DSN.
``loading`` and ``inputs`` build on the models, never on each other; code outside imports
from ``gossamer.settings``.

This package may import the standard library, msgspec, ``gossamer`` (its version),
``gossamer.proxyurl`` (proxy URLs checked), ``gossamer.addresses``, ``gossamer.redact``,
``gossamer.urls`` and ``gossamer.tracking`` (the default parameters stripped): it is the
lowest layer with them (the frontier's default focus slack lives here, in ``models``); never a
stage, the engine, the crawl's wiring or the cluster.
"""

from gossamer.settings.auth import AuthSettings, AuthType
from gossamer.settings.base import InvalidSetting, SettingsError, SettingsModel
from gossamer.settings.cluster import ClusterSettings, ShippedDocument, ShippedRules
from gossamer.settings.inputs import canonical_seeds, crawl_scope, read_secret, read_seeds
from gossamer.settings.loading import (
    Settings,
    load_model,
    load_settings,
    setting_description,
    setting_type,
    settings_from_json,
    settings_to_dict,
    settings_to_json,
    validate_model,
)
from gossamer.settings.models import CrawlSettings, JobSettings, RenderBlock

__all__ = [
    "AuthSettings",
    "AuthType",
    "ClusterSettings",
    "CrawlSettings",
    "InvalidSetting",
    "JobSettings",
    "RenderBlock",
    "Settings",
    "SettingsError",
    "SettingsModel",
    "ShippedDocument",
    "ShippedRules",
    "canonical_seeds",
    "crawl_scope",
    "load_model",
    "load_settings",
    "read_secret",
    "read_seeds",
    "setting_description",
    "setting_type",
    "settings_from_json",
    "settings_to_dict",
    "settings_to_json",
    "validate_model",
]
