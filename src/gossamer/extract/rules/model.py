"""The compiled rules: :class:`RuleSet` and what it holds, and :class:`RuleError`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gossamer.extract.rules.patterns import Pattern
from gossamer.extract.rules.processors import Processor
from gossamer.extract.rules.sources import Source

__all__ = ["Document", "Field", "LinkRule", "Record", "Rule", "RuleError", "RuleSet", "Sample"]


class RuleError(ValueError):
    """Rule documents that cannot be used; ``problems`` holds one line per problem, each
    naming the file, the rule and the field."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = list(problems)


@dataclass(frozen=True, slots=True)
class Field:
    """One value of an item: where it comes from and what is done to it."""

    name: str
    source: Source
    multiple: bool = False
    required: bool = False
    process: tuple[Processor, ...] = ()


@dataclass(frozen=True, slots=True)
class Record:
    """The container each item is read from (one of ``css``, ``xpath``)."""

    css: str | None = None
    xpath: str | None = None


@dataclass(frozen=True, slots=True)
class LinkRule:
    """Links to follow: those inside ``css`` (default: the page's own links) whose absolute
    URL matches no ``deny`` pattern and, if there are ``allow`` patterns, one of them."""

    css: str | None = None
    allow: tuple[Pattern, ...] = ()
    deny: tuple[Pattern, ...] = ()

    def accepts(self, url: str) -> bool:
        if any(pattern.search(url) for pattern in self.deny):
            return False
        return not self.allow or any(pattern.search(url) for pattern in self.allow)


@dataclass(frozen=True, slots=True)
class Sample:
    """A saved page and the JSON its evaluation must give (``rules test``)."""

    html: Path
    url: str
    expect: Path


@dataclass(frozen=True, slots=True)
class Rule:
    """One compiled ``[[rule]]``."""

    name: str
    url: Pattern
    document: str
    """The name of the document it comes from."""
    order: int = 0
    """Its place among all the rules read together (ties of priority go to the lower)."""
    exclude: tuple[Pattern, ...] = ()
    priority: int = 0
    record: Record | None = None
    fields: tuple[Field, ...] = ()
    links: tuple[LinkRule, ...] | None = None
    """None when the rule has no link rules (the page's own links are followed)."""
    samples: tuple[Sample, ...] = ()

    def matches(self, url: str) -> bool:
        """Whether ``url`` is this rule's: its pattern finds it and no exclusion does."""
        if self.url.search(url) is None:
            return False
        return not any(pattern.search(url) for pattern in self.exclude)


@dataclass(frozen=True, slots=True)
class Document:
    """A rule document's text, with its name (a file name) and, read from disk, the
    directory its sample paths are relative to."""

    name: str
    text: str
    directory: Path | None = None


@dataclass(frozen=True)
class RuleSet:
    """Compiled rules in document order, the documents and their digest."""

    rules: tuple[Rule, ...]
    documents: tuple[Document, ...] = ()
    digest: str = ""
    """SHA-256 (hex) of the documents' names and texts, in order."""
    functions: tuple[tuple[str, str], ...] = ()
    """The functions ``call`` may name, as (name, module:function): what a worker process
    needs, with the documents, to compile the same rules."""
    _by_priority: tuple[Rule, ...] = field(init=False, repr=False, compare=False)
    url_program: int = field(init=False, repr=False, compare=False)
    """The RE2 instructions of every ``url`` and ``exclude`` pattern: what :meth:`select`
    costs per character of a URL at worst."""

    def __post_init__(self) -> None:
        ranked = sorted(self.rules, key=lambda rule: (-rule.priority, rule.order))
        object.__setattr__(self, "_by_priority", tuple(ranked))
        patterns = [pattern for rule in self.rules for pattern in (rule.url, *rule.exclude)]
        object.__setattr__(self, "url_program", sum(p.programsize for p in patterns))

    def select(self, url: str) -> Rule | None:
        """The one rule for ``url``: the highest priority among those that match, the
        first in document order among equals; None if no rule matches."""
        for rule in self._by_priority:
            if rule.matches(url):
                return rule
        return None
