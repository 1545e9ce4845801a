"""User code named on the command line or in settings: ``module:function`` (``--hook``, a
login hook, a rule document's ``rule_functions``), imported once when the crawl is built.

It stands below every stage (it imports nothing of gossamer), so the rule parser and the hook
stage load user functions alike without importing each other.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = ["load_function"]


def load_function(spec: str) -> Callable[..., Any]:
    """Import ``module:function`` (a module on the path or in the working directory) or
    ``path/to/file.py:function``; raises ``ValueError`` with a clear message."""
    module_name, sep, name = spec.rpartition(":")
    if not sep or not module_name or not name.isidentifier():
        raise ValueError(f"hook {spec!r} is not of the form module:function")
    try:
        module = _import(module_name)
    except Exception as exc:
        raise ValueError(f"hook module {module_name!r} cannot be imported: {exc}") from None
    function = getattr(module, name, None)
    if not callable(function):
        raise ValueError(f"hook {spec!r}: {module_name} has no function {name!r}")
    loaded: Callable[..., Any] = function
    return loaded


def _import(module_name: str) -> ModuleType:
    if module_name.endswith(".py"):
        path = Path(module_name).resolve()
        loaded = sys.modules.get(f"gossamer_hook_{path.stem}")
        if loaded is not None and getattr(loaded, "__file__", None) == str(path):
            return loaded
        spec = importlib.util.spec_from_file_location(f"gossamer_hook_{path.stem}", path)
        if spec is None or spec.loader is None:
            raise ImportError(f"no Python file at {module_name}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[spec.name] = module
        return module
    if os.getcwd() not in sys.path:  # as `python -m` does: the user's own modules import
        sys.path.append(os.getcwd())
    return importlib.import_module(module_name)
