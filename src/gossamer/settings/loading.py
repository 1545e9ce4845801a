"""Where settings come from and how they are converted: defaults < a TOML file < the
environment < flags (:func:`load_settings`, :func:`load_model`), values converted and checked
(:func:`validate_model`), the JSON a cluster job stores (:func:`settings_to_json`,
:func:`settings_from_json`) and a field's type and description (:func:`setting_type`,
:func:`setting_description`)."""

from __future__ import annotations

import functools
import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, TypeVar, get_args, get_origin, get_type_hints

import msgspec
from msgspec import Meta

from gossamer.settings.base import FieldError, InvalidSetting, SettingsError, SettingsModel
from gossamer.settings.cluster import ClusterSettings
from gossamer.settings.models import CrawlSettings
from gossamer.settings.revisit import check_tables

Settings = TypeVar("Settings", bound=SettingsModel)

_ENV_PREFIX = "GOSSAMER_"


@functools.cache
def _table_fields(model: type[SettingsModel]) -> frozenset[str]:
    """The settings whose value is a table (a ``dict``): the top-level tables a config file
    without [crawl] may hold (``[host_page_budgets]``, ``[rule_functions]``). Worked out
    when a config file is read, not at import (it evaluates every setting's type)."""
    hints = get_type_hints(model, include_extras=True)
    return frozenset(name for name, hint in hints.items() if _is_table(hint))


def _is_table(hint: Any) -> bool:
    if get_origin(hint) is Annotated:
        hint = get_args(hint)[0]
    return get_origin(hint) is dict


_SPLIT_FIELDS = frozenset(
    {
        "seeds",
        "strip_params",
        "allow_domains",
        "allow_ports",
        "resolve",
        "rules",
        "proxies",
        "render_block",
        "focus_examples",
        "sitemap",
        "metrics_hosts",
    }
)
"""List settings a string (environment, TOML, a flag) gives comma-separated."""
_TRUE = frozenset({"1", "on", "t", "true", "y", "yes"})
_FALSE = frozenset({"0", "off", "f", "false", "n", "no"})
"""The strings (any case) a boolean setting takes."""
_MAX_CONFIG_BYTES = 1 << 20
_ERROR_AT = re.compile(r"(?s)(.*) - at `\$(.*)`")
_ERROR_STEP = re.compile(r"\.([^.\[]+)|\[([^\]]*)\]")
_ERROR_NAMED = re.compile(r"Object (contains unknown|missing required) field `(.*)`")


def _from_toml(path: Path) -> dict[str, Any]:
    """The settings of a TOML file: its top-level keys or its ``[crawl]`` table, not both;
    a ``[focus]`` table (beside either) holds the ``focus_`` settings without their prefix
    (``phrase``, ``examples``, ``threshold``, ``mode``, ``tolerance``)."""
    data = _read_toml(path)
    focus = data.pop("focus", None)
    if focus is not None and not isinstance(focus, dict):
        raise SettingsError("config: [focus] must be a table")
    focus = {f"focus_{k.replace('-', '_')}": v for k, v in (focus or {}).items()}
    if "focus_example" in focus:
        focus["focus_examples"] = focus.pop("focus_example")
    if "crawl" in data:
        section = data.pop("crawl")
        if not isinstance(section, dict):
            raise SettingsError("config: [crawl] must be a table")
        if "auth" in data and "auth" not in section:  # [[auth]] beside [crawl]
            section["auth"] = data.pop("auth")
        if data:
            stray = ", ".join(sorted(data))
            raise SettingsError(f"config: keys outside [crawl] in {path}: {stray}")
    else:
        section = data
        known = _table_fields(CrawlSettings)
        tables = [k for k, v in data.items() if isinstance(v, dict) and k not in known]
        if tables:
            raise SettingsError(f"config: unknown table [{tables[0]}] in {path}")
    return {k.replace("-", "_"): v for k, v in section.items()} | focus


def _read_toml(path: Path) -> dict[str, Any]:
    import tomllib  # only a crawl with a config file reads TOML

    try:
        with path.open("rb") as file:
            raw = file.read(_MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise SettingsError(f"config: cannot read {path}: {exc.strerror}") from exc
    if len(raw) > _MAX_CONFIG_BYTES:
        raise SettingsError(f"config: {path} is larger than {_MAX_CONFIG_BYTES} bytes")
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise SettingsError(f"config: {path} is not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"config: {path} is not valid TOML: {exc}") from None
    except RecursionError:  # tomllib parses nested arrays and tables recursively
        raise SettingsError(f"config: {path} nests arrays or tables too deeply") from None


def _from_env(env: Mapping[str, str], model: type[SettingsModel]) -> dict[str, Any]:
    fields = model.__struct_fields__
    values: dict[str, Any] = {}
    for key, value in env.items():
        if key.startswith(_ENV_PREFIX):
            name = key[len(_ENV_PREFIX) :].lower()
            if name in fields:
                values[name] = value
    return values


def load_settings(
    flags: Mapping[str, Any] | None = None,
    config: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> CrawlSettings:
    """Merge defaults < TOML < environment < flags and validate. Raises SettingsError."""
    return load_model(CrawlSettings, flags, config, env)


def load_model(
    model: type[Settings],
    flags: Mapping[str, Any] | None = None,
    config: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> Settings:
    """Like :func:`load_settings`, for any settings model (:class:`JobSettings`...)."""
    merged: dict[str, Any] = {}
    if config is not None:
        merged.update(_without_cluster_keys(_from_toml(config), model))
    merged.update(_from_env(os.environ if env is None else env, model))
    merged.update({k: v for k, v in (flags or {}).items() if v is not None})
    return validate_model(model, merged)


def _without_cluster_keys(values: dict[str, Any], model: type[SettingsModel]) -> dict[str, Any]:
    """A config file's values for ``model``: its cluster keys, when ``model`` has none, are
    checked (a bad one is still an error) and left out."""
    cluster = ClusterSettings.__struct_fields__
    if set(cluster) <= set(model.__struct_fields__):
        return values
    validate_model(ClusterSettings, {k: values.pop(k) for k in list(values) if k in cluster})
    return values


def validate_model(model: type[Settings], values: Mapping[str, Any]) -> Settings:
    """The ``model`` settings of ``values`` (strings of the environment, TOML values, flags,
    decoded JSON), converted and checked; a bad value raises :class:`InvalidSetting`."""
    try:
        return msgspec.convert(_prepared(model, values), model, strict=False, dec_hook=_decode)
    except msgspec.ValidationError as exc:
        raise _invalid(exc) from None


def settings_to_dict(settings: SettingsModel) -> dict[str, Any]:
    """The settings as JSON-like values (paths as strings), for :func:`validate_model`."""
    values: dict[str, Any] = msgspec.to_builtins(settings, enc_hook=_encode)
    return values


def settings_to_json(settings: SettingsModel) -> str:
    """The settings as a JSON object (what a cluster job stores)."""
    return msgspec.json.encode(settings, enc_hook=_encode).decode()


def settings_from_json(model: type[Settings], raw: str | bytes) -> Settings:
    """The ``model`` settings of :func:`settings_to_json`'s JSON, checked as any input is
    (the JSON may come from anyone who can write to the job's Redis)."""
    try:
        values = msgspec.json.decode(raw)
    except msgspec.DecodeError as exc:
        raise _invalid(exc) from None
    if not isinstance(values, dict):
        raise InvalidSetting("settings", f"not a JSON object: {type(values).__name__}")
    return validate_model(model, values)


def _kinds(model: type[SettingsModel]) -> dict[str, Any]:
    """The type of each field of ``model`` without its constraints and ``| None``."""
    kinds = _KINDS.get(model)
    if kinds is None:
        kinds = _KINDS[model] = {
            f.name: setting_type(f.type) for f in msgspec.structs.fields(model)
        }
    return kinds


_KINDS: dict[type[SettingsModel], dict[str, Any]] = {}


def setting_type(annotation: Any) -> Any:
    """The type of a field's annotation less ``Annotated`` and ``| None``: ``int``,
    ``Literal[...]``, ``list[str]``..."""
    while True:
        if get_origin(annotation) is Annotated:
            annotation = get_args(annotation)[0]
            continue
        args = [a for a in get_args(annotation) if a is not type(None)]
        if len(args) == 1 and type(None) in get_args(annotation):
            annotation = args[0]
            continue
        return annotation


def setting_description(annotation: Any) -> str | None:
    """The description of a field's annotation (its ``Meta``), if any."""
    for arg in get_args(annotation):
        if isinstance(arg, Meta) and arg.description is not None:
            return arg.description
        if get_origin(arg) is Annotated or type(None) in get_args(arg):
            found = setting_description(arg)
            if found is not None:
                return found
    return None


def _prepared(model: type[SettingsModel], values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` as msgspec converts them: comma-separated strings split into lists, a
    ``render_url`` string one pattern, ``NAME=module:function`` pairs a table, yes/no/on/off
    booleans; a float that is not finite (nan, inf) is an error."""
    kinds = _kinds(model)
    prepared = dict(values)
    for name, value in values.items():
        kind = kinds.get(name)
        if isinstance(value, str):
            if name in _SPLIT_FIELDS:
                prepared[name] = [v.strip() for v in value.split(",") if v.strip()]
            elif name == "render_url":  # a regular expression may hold commas
                prepared[name] = [value]
            elif name == "rule_functions":
                prepared[name] = _function_pairs(value)
            elif name == "host_page_budgets":
                prepared[name] = _budget_pairs(value)
            elif kind is bool and value.lower() in _TRUE | _FALSE:
                prepared[name] = value.lower() in _TRUE
        elif name == "revisit":
            check_tables(value)
        if kind is float and not _finite(value):
            raise InvalidSetting(name, "Input should be a finite number")
    return prepared


def _finite(value: Any) -> bool:
    """False for a number or numeric string that is nan, infinite or an integer too large
    for a float; True for the rest (a value that is no number fails its conversion)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return True
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False
    except ValueError:
        return True


def _budget_pairs(value: str) -> dict[str, str]:
    pairs = [pair.strip() for pair in value.split(",") if pair.strip()]
    if not all("=" in pair for pair in pairs):
        raise InvalidSetting("host_page_budgets", "expected PATTERN=N pairs, comma-separated")
    return {n.strip(): b.strip() for n, _, b in (p.rpartition("=") for p in pairs)}


def _function_pairs(value: str) -> dict[str, str]:
    pairs = [pair.strip() for pair in value.split(",") if pair.strip()]
    if not all("=" in pair for pair in pairs):
        raise InvalidSetting(
            "rule_functions", "expected NAME=module:function pairs, comma-separated"
        )
    return {n.strip(): f.strip() for n, _, f in (p.partition("=") for p in pairs)}


def _decode(kind: type, value: Any) -> Any:
    if kind is Path:
        if isinstance(value, Path):
            return value
        if isinstance(value, str):
            return Path(value)
        raise ValueError(f"Expected a path, got `{type(value).__name__}`")
    raise NotImplementedError(kind)


def _encode(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    raise NotImplementedError(type(value))


def _invalid(error: msgspec.MsgspecError) -> InvalidSetting:
    """The error naming the field as a dotted path (``auth.0.type``; a table's entry is the
    table's)."""
    text = str(error)
    match = _ERROR_AT.fullmatch(text)
    problem, path = (match[1], match[2]) if match else (text, "")
    steps = [name or index for name, index in _ERROR_STEP.findall(path) if index != "..."]
    cause = error.__cause__
    if isinstance(cause, FieldError):
        steps.append(cause.name)
        problem = cause.problem
    elif named := _ERROR_NAMED.fullmatch(problem):
        steps.append(named[2])
        problem = "not a setting" if named[1] == "contains unknown" else "required"
    return InvalidSetting(".".join(steps) or "settings", problem)
