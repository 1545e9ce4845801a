"""The rule parser: rule documents that say, per site, which pages hold which data and which
of their links to follow.

A rule names a URL pattern, fields read by CSS, XPath, a regex, JSON-LD or a meta tag and
turned by named processors (``processors``), optionally a record container (an item per
element) and link rules. ``schema`` reads and checks the TOML or JSON documents once into a
:class:`RuleSet` (``check`` checks and compiles each rule, ``model`` holds what it compiles
to); ``evaluate`` picks the one rule for a page (highest priority, then document order) and
reads it on the page the crawler parsed, with lexbor for CSS and lxml for XPath (parsed only
for rules that use it). ``pool`` runs that evaluation in worker processes, each page within its
time bound (the crawl, ``rules try`` and the editor read pages only through it).
``docs/rules.md`` describes every key.

This package may import what `gossamer.extract` may (it is part of that stage): the standard
library, selectolax, pydantic, lxml (imported only when a rule uses XPath), `gossamer.parse`,
`gossamer.urls`, `gossamer.safe`, and `gossamer.hooks` to import the functions that rule
documents may call by name (registered in the settings' ``rule_functions``, never code in a
document), google-re2 for every regex. Nothing here does I/O but reading the documents and
``pool``'s pipes to its workers.
"""

from gossamer.extract.rules.evaluate import PageItems, evaluate, evaluate_body, evaluate_rule
from gossamer.extract.rules.processors import PROCESSORS
from gossamer.extract.rules.schema import (
    Document,
    Rule,
    RuleError,
    RuleSet,
    digest_of,
    load_functions,
    load_rules,
    read_documents,
    rules_from_documents,
)

__all__ = [
    "PROCESSORS",
    "Document",
    "PageItems",
    "Rule",
    "RuleError",
    "RuleSet",
    "digest_of",
    "evaluate",
    "evaluate_body",
    "evaluate_rule",
    "load_functions",
    "load_rules",
    "read_documents",
    "rules_from_documents",
]
