"""docs/reference/settings.md, written from the settings models (see reference_pages.py).

Every field of :class:`~gossamer.settings.CrawlSettings`,
:class:`~gossamer.settings.ClusterSettings`, :class:`~gossamer.settings.AuthSettings` and the
``[[revisit]]`` rule becomes a row: its TOML
key, its flag (read from the ``gossamer`` command's own parser), its environment variable, its
type with its bounds, its default and the description the model gives it.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import msgspec
from msgspec import Meta

from gossamer import eventloop
from gossamer.cli import build_parser
from gossamer.settings import (
    AuthSettings,
    ClusterSettings,
    CrawlSettings,
    setting_description,
    setting_type,
)
from gossamer.settings.revisit import RevisitRule

_NAMES: dict[Any, str] = {
    int: "integer",
    float: "number",
    bool: "boolean",
    str: "string",
    Path: "path",
}
_LINKED = {
    AuthSettings: "[`[[auth]]` tables](#logins-auth)",
    RevisitRule: "[`[[revisit]]` tables](#revisit-intervals-revisit)",
}
_BOUNDS = (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<"))

HEADER = """\
# Settings

<!-- Written by scripts/reference_pages.py from src/gossamer/settings/: do not edit by hand.
     `make docs` writes it again; tests/test_docs_reference.py fails while it is not current. -->

Every setting is a field of a typed model in `src/gossamer/settings/`; this page is generated
from them. A value comes from, lowest precedence first: the default, a TOML file
(`--config FILE`: top-level keys or a `[crawl]` table), a `GOSSAMER_<FIELD>` environment
variable (lists comma-separated; booleans `true`/`false`, `yes`/`no`, `on`/`off`, `1`/`0`),
then the flag. An invalid value exits with status 2 and one line naming the field; unknown keys
are errors too, and numbers must be finite. A focused crawl's settings also go in a `[focus]`
table (`phrase`, `examples`, `threshold`, `mode`, `tolerance`).

```toml
[crawl]
seeds = ["https://docs.example.org/"]
concurrency = 128
per_host = 2
delay = 0.5
max_depth = 8
total_timeout = 30
```
"""

SECTIONS: tuple[tuple[type[msgspec.Struct], str, str, str | None], ...] = (
    (
        CrawlSettings,
        "Crawl settings",
        "What any crawl can be told: `gossamer crawl`'s flags, and a cluster job's "
        "(`gossamer cluster submit` and `cluster up` take them too).",
        "crawl",
    ),
    (
        ClusterSettings,
        "Cluster settings",
        "What only a cluster job adds: flags of `gossamer cluster submit` and `cluster up`, "
        "not of `crawl` (which checks them in a TOML file without using them).",
        "submit",
    ),
    (
        AuthSettings,
        "Logins: `[[auth]]`",
        "One `[[auth]]` table per site in the `--config` file; there are no flags or "
        "environment variables for them, so nothing secret shows in `ps`. Secrets are named "
        "(`NAME_env`, `NAME_file`), never written. See [Proxies and logins]"
        "(../guides/proxies-logins.md#logging-in-auth).",
        None,
    ),
    (
        RevisitRule,
        "Revisit intervals: `[[revisit]]`",
        "`[[revisit]]` tables override `revisit_initial`, `revisit_min` and `revisit_max` by "
        "URL or content type, the first that matches winning. See [Keeping a crawl fresh]"
        "(../guides/recrawl.md).",
        None,
    ),
)


def _flags(command: str) -> dict[str, list[str]]:
    """Each setting's flags (by argparse ``dest``) of ``gossamer crawl`` or ``cluster submit``."""
    parser = build_parser()
    sub = _subparser(parser, "crawl" if command == "crawl" else "cluster")
    if command != "crawl":
        sub = _subparser(sub, command)
    found: dict[str, list[str]] = {}
    for action in sub._actions:
        names = action.option_strings or [f"{action.metavar or action.dest} ..."]
        found.setdefault(action.dest, []).extend(names)
    return found


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found: argparse.ArgumentParser = action.choices[name]
            return found
    raise LookupError(name)


def _metas(annotation: Any) -> list[Meta]:
    """The Meta constraints of an annotation, ``| None`` and nesting looked through."""
    found: list[Meta] = []
    for arg in get_args(annotation):
        if isinstance(arg, Meta):
            found.append(arg)
        elif get_args(arg) and get_origin(arg) is not Literal:
            found.extend(_metas(arg))
    return found


def _bounds(annotation: Any) -> str:
    parts = []
    for meta in _metas(annotation):
        parts += [
            f"{sign} {getattr(meta, key):,}"
            for key, sign in _BOUNDS
            if getattr(meta, key) is not None
        ]
        if meta.min_length:
            parts.append("not empty")
    return ", ".join(dict.fromkeys(parts))


def _type_name(kind: Any) -> str:
    kind = setting_type(kind)
    if get_origin(kind) is Literal:
        return "one of " + ", ".join(f"`{value}`" for value in get_args(kind))
    if kind in _LINKED:
        return _LINKED[kind]
    if kind in _NAMES:
        return _NAMES[kind]
    if get_origin(kind) is list:
        return "list of " + _type_name(get_args(kind)[0])
    if get_origin(kind) is dict:
        key, value = get_args(kind)
        return f"table of {_type_name(key)} to {_type_name(value)}"
    if isinstance(kind, type) and issubclass(kind, msgspec.Struct):
        return "table"
    return f"`{kind}`"


def _default(info: msgspec.structs.FieldInfo) -> str:
    if info.default_factory is not msgspec.NODEFAULT:
        value = info.default_factory()
    elif info.default is msgspec.NODEFAULT:
        return "required"
    else:
        value = info.default
    if value is None:
        return "none"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, list | dict) and not value:
        return "empty"
    if isinstance(value, list):
        return ", ".join(f"`{v}`" for v in value)
    return f"`{value}`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace("\n", " ")


def _rows(model: type[msgspec.Struct], command: str | None) -> list[str]:
    flags = _flags(command) if command else {}
    rows = []
    for info in msgspec.structs.fields(model):
        kind = setting_type(info.type)
        bounds = _bounds(info.type)
        described = setting_description(info.type) or ""
        names = flags.get(info.name, [])
        flag = " ".join(f"`{name}`" for name in names) or "-"
        env = f"`GOSSAMER_{info.name.upper()}`" if command and names else "-"
        type_text = _type_name(kind) + (f" ({bounds})" if bounds else "")
        row = [f"`{info.name}`", flag, env, type_text, _default(info), described]
        rows.append("| " + " | ".join(_cell(cell) for cell in row) + " |")
    return rows


def _process() -> str:
    """The section of what a process chooses before it reads any setting: its event loop."""
    loops = ", ".join(f"`{name}`" for name in get_args(eventloop.Loop))
    row = [f"`{eventloop.ENV}`", f"one of {loops}", f"`{eventloop.chosen({})}`", eventloop.ABOUT]
    line = " | ".join(_cell(cell) for cell in row)
    return (
        "\n## The process: its event loop\n\n"
        "Not a crawl setting: every `gossamer` command (`crawl`, `cluster worker` and the other "
        "cluster commands, `ui`, `rules`) and `gossamer.run()` choose their event loop when "
        "they start, before they read a config file or a cluster job, from the environment "
        f"only.\n\n| Environment | Type | Default | Description |\n|---|---|---|---|\n| {line} |"
    )


def render() -> str:
    """The settings page, as it must read for the models of this tree."""
    parts = [HEADER]
    for model, title, intro, command in SECTIONS:
        head = "| Key | Flag | Environment | Type | Default | Description |"
        parts.append(f"\n## {title}\n\n{intro}\n\n{head}\n|---|---|---|---|---|---|")
        parts.append("\n".join(_rows(model, command)))
    parts.append(_process())
    return "\n".join(parts) + "\n"
