"""``gossamer rules``: check rule documents, test them on their saved samples, try them on a
page. All three read pages through :func:`gossamer.extract.rules.evaluate_body` in a worker
process of :class:`gossamer.extract.rules.pool.RulePool`, the code path the crawl uses, within
the time bound of a page (a page over it prints the rule's error).

- ``rules check PATH...``: exit 0, or 2 with one line per problem (file, rule, field).
- ``rules test PATH... [--update]``: each ``[[rule.sample]]`` page evaluated and compared with
  its ``expect`` JSON (exit 1 with a diff when they differ; ``--update`` writes them).
- ``rules try PATH PAGE --url URL``: the JSON of one saved page (``{"url", "rule", "items",
  "links", "errors"}``, each item its fields by name; ``rule`` null when no rule is for the
  URL); ``rules try PATH URL`` fetches the page first, as the crawl would
  (its fetcher and address guard, robots.txt obeyed unless ``--no-robots``, redirects
  followed, each target checked again).

The functions rule documents may call come from the settings' ``rule_functions`` (``--config``,
``GOSSAMER_RULE_FUNCTIONS``) and ``--function NAME=module:function`` flags.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import json
import math
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from gossamer import eventloop
from gossamer.crawl import address_guard, politeness_policy
from gossamer.errors import CommandError
from gossamer.extract.rules import RuleError, RuleSet, load_rules
from gossamer.extract.rules.pool import RULE_TIMEOUT, RulePool
from gossamer.extract.rules.schema import Rule, Sample
from gossamer.fetch.gated import GatedFetch
from gossamer.fetch.http import FetchConfig, Fetcher
from gossamer.fetch.render import RenderingFetcher
from gossamer.frontier.gate import HostGate
from gossamer.frontier.robots import RobotsCache
from gossamer.settings import CrawlSettings, SettingsError, crawl_scope, load_settings
from gossamer.urls import InvalidURL, Resolver, canonicalize

__all__ = [
    "add_rules_parser",
    "fetch_config",
    "fetch_following",
    "fetch_page",
    "pooled_output",
    "sample_output",
]

EXIT_PROBLEMS = 2
EXIT_FAILED = 1
MAX_PAGE_BYTES = 50 << 20
"""The largest saved page ``rules try`` and ``rules test`` read."""


def add_rules_parser(sub: Any) -> None:
    """``gossamer rules check|test|try``."""
    rules = sub.add_parser("rules", help="check, test and try rule documents")
    commands = rules.add_subparsers(dest="rules_command", required=True)
    check = commands.add_parser("check", help="check rule documents; one line per problem")
    _documents(check)
    check.set_defaults(handler=_check)
    test = commands.add_parser("test", help="compare each rule's samples with their JSON")
    _documents(test)
    test.add_argument("--update", action="store_true", help="write the samples' JSON")
    test.set_defaults(handler=_test)
    attempt = commands.add_parser("try", help="print the items a saved page gives")
    attempt.add_argument("path", type=Path, metavar="PATH", help="rule document or directory")
    attempt.add_argument("page", metavar="PAGE", help="a saved HTML file, or a URL to fetch")
    attempt.add_argument("--url", help="the URL the page was fetched from (picks the rule)")
    attempt.add_argument("--charset", help="the charset of the page's Content-Type header")
    attempt.add_argument(
        "--resolve", action="append", default=[], metavar="HOST=IP", help="as crawl's --resolve"
    )
    attempt.add_argument(
        "--no-robots", dest="robots", action="store_false", help="ignore robots.txt"
    )
    attempt.add_argument("--user-agent", help="User-Agent header of the fetch")
    _common(attempt)
    attempt.set_defaults(handler=_try)


def _documents(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths", type=Path, nargs="+", metavar="PATH", help="rule documents or directories"
    )
    _common(parser)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=Path, help="TOML settings file (its rule_functions)")
    parser.add_argument(
        "--rule-timeout",
        type=_seconds,
        default=RULE_TIMEOUT,
        metavar="SECONDS",
        help=f"time a page's rule may take ({RULE_TIMEOUT:g})",
    )
    parser.add_argument(
        "--function",
        action="append",
        default=[],
        metavar="NAME=module:function",
        help="a function rule documents may call by NAME (repeatable)",
    )


def _seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not 0 < seconds <= 3600:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds (0 to 3600)")
    return seconds


def _load(args: argparse.Namespace, paths: list[Path]) -> RuleSet:
    """The rule set, or exit status 2 with its problems on stderr."""
    flags = {"rule_functions": ",".join(args.function)} if args.function else {}
    try:
        functions = load_settings(flags, config=args.config).rule_functions
    except SettingsError as exc:
        raise _Problems([str(exc)]) from None
    try:
        return load_rules(paths, functions)
    except RuleError as exc:
        raise _Problems(exc.problems) from None


class _Problems(Exception):
    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


def _reporting(handler: Any) -> Any:
    def run(args: argparse.Namespace) -> int:
        try:
            code: int = handler(args)
        except _Problems as exc:
            for problem in exc.problems:
                print(problem, file=sys.stderr)
            return EXIT_PROBLEMS
        return code

    return run


@_reporting
def _check(args: argparse.Namespace) -> int:
    rules = _load(args, args.paths)
    samples = sum(len(rule.samples) for rule in rules.rules)
    print(
        f"ok: {len(rules.rules)} rules in {len(rules.documents)} documents, {samples} samples "
        f"(sha256 {rules.digest[:16]})"
    )
    return 0


@_reporting
def _try(args: argparse.Namespace) -> int:
    rules = _load(args, [args.path])
    if args.page.startswith(("http://", "https://")):
        flags = {"resolve": args.resolve, "robots": args.robots, "user_agent": args.user_agent}
        try:
            settings = load_settings(flags, config=args.config)
        except SettingsError as exc:
            raise _Problems([str(exc)]) from None
        url, body, charset = eventloop.run(fetch_page(settings, args.page))
    elif args.url is None:
        raise CommandError("rules try: give --url, the URL the page was fetched from")
    else:
        url, body, charset = args.url, _read_page(Path(args.page)), args.charset
    output = sample_output(rules, url, body, charset, timeout=args.rule_timeout)
    if output["rule"] is None:
        print(f"gossamer: no rule is for {url}: no items, the page's links", file=sys.stderr)
    print(json.dumps(output, ensure_ascii=False, indent=2))
    return 0


async def fetch_page(settings: CrawlSettings, url: str) -> tuple[str, bytes, str | None]:
    """(final URL, body, charset) of ``url`` fetched as the crawl fetches: its address guard
    (``url``'s host and ``--resolve`` names may reach private addresses), robots.txt unless
    ``settings.robots`` is off, redirects followed up to ``max_redirects``."""
    target = _canonical(url)
    guard = address_guard(settings, crawl_scope(settings, [target]))
    gate = HostGate(politeness_policy(settings))  # robots.txt, then the page at its pace
    async with Fetcher(fetch_config(settings), guard=guard) as fetcher:
        gated = GatedFetch(fetcher, gate)
        robots = None
        if settings.robots:
            robots = RobotsCache(gated.fetch, token=settings.robots_name)
            gate.use_rules(robots.known)
        return await fetch_following(gated, robots, target, settings.max_redirects)


def _canonical(url: str) -> str:
    try:
        return canonicalize(url)
    except InvalidURL as exc:
        raise CommandError(f"bad URL {url!r}: {exc}") from None


def fetch_config(settings: CrawlSettings) -> FetchConfig:
    """The fetcher settings of a page fetched on its own (``rules try``, the rule editor)."""
    return FetchConfig(
        user_agent=settings.user_agent,
        connect_timeout=settings.connect_timeout,
        read_timeout=settings.read_timeout,
        total_timeout=settings.total_timeout,
        max_body_bytes=settings.max_body_bytes,
        concurrency=2,
        resolve=tuple(settings.resolve),
    )


async def fetch_following(
    fetcher: Fetcher | RenderingFetcher | GatedFetch,
    robots: RobotsCache | None,
    url: str,
    max_redirects: int,
    check: Callable[[str], None] | None = None,
) -> tuple[str, bytes, str | None]:
    """(final URL, body, charset) of ``url`` (rendered when ``fetcher`` renders it):
    robots.txt asked first (unless ``robots`` is None), redirects followed, each target
    passed to ``check`` (which raises CommandError to refuse it); a CommandError for a page
    that cannot be had."""
    target = _canonical(url)
    for _hop in range(max_redirects + 1):
        if check is not None:
            check(target)
        if robots is not None and not await robots.allowed(target):
            raise CommandError(f"robots.txt disallows {target} (--no-robots to fetch it)")
        result = await fetcher.fetch(target)
        if result.is_redirect and result.location is not None:
            resolved = Resolver(target).resolve(result.location)
            if resolved is None:
                raise CommandError(f"{target}: bad redirect to {result.location!r}")
            target = canonicalize(resolved)
            continue
        if not result.ok:
            raise CommandError(f"{target}: {result.error or f'status {result.status}'}")
        return target, result.body, result.charset
    raise CommandError(f"{url}: more than {max_redirects} redirects")


def _read_page(path: Path) -> bytes:
    try:
        with path.open("rb") as file:
            body = file.read(MAX_PAGE_BYTES + 1)
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror}") from None
    if len(body) > MAX_PAGE_BYTES:
        raise CommandError(f"{path} is larger than {MAX_PAGE_BYTES} bytes")
    return body


def sample_output(
    rules: RuleSet,
    url: str,
    body: bytes,
    charset: str | None = None,
    *,
    timeout: float = RULE_TIMEOUT,
) -> dict[str, Any]:
    """The JSON of a page: what ``rules try`` prints and ``rules test`` compares, read in a
    worker process of its own within the time bound of a page (not in a running loop)."""

    async def read() -> dict[str, Any]:
        async with _pool(timeout) as pool:
            return await pooled_output(pool, rules, url, body, charset)

    return eventloop.run(read())


async def pooled_output(
    pool: RulePool, rules: RuleSet, url: str, body: bytes, charset: str | None = None
) -> dict[str, Any]:
    """:func:`sample_output` read by one of ``pool``'s workers."""
    try:
        found = await pool.evaluate(rules, url, body, charset)
    except ValueError as exc:  # the URL is not an absolute http(s) URL
        raise CommandError(f"bad --url {url!r}: {exc}") from None
    if found is None:
        return {"url": url, "rule": None, "items": [], "links": None, "errors": []}
    return found.as_json(url)


@contextlib.asynccontextmanager
async def _pool(page_seconds: float) -> AsyncIterator[RulePool]:
    pool = RulePool(workers=1, timeout=page_seconds)
    try:
        yield pool
    finally:
        await pool.close()


@_reporting
def _test(args: argparse.Namespace) -> int:
    rules = _load(args, args.paths)
    return eventloop.run(_test_samples(rules, update=args.update, page_seconds=args.rule_timeout))


async def _test_samples(rules: RuleSet, *, update: bool, page_seconds: float) -> int:
    async with _pool(page_seconds) as pool:
        return await _pooled_test(pool, rules, update=update)


async def _pooled_test(pool: RulePool, rules: RuleSet, *, update: bool) -> int:
    failed = passed = 0
    for rule in rules.rules:
        for number, sample in enumerate(rule.samples, 1):
            problem = await _run_sample(pool, rules, rule, sample, update=update)
            label = f"{rule.document}: rule {rule.name!r}: sample #{number} ({sample.html.name})"
            if problem is None:
                passed += 1
                print(f"ok    {label}")
            else:
                failed += 1
                print(f"FAIL  {label}: {problem}")
    verb = "written" if update else "passed"
    print(f"{passed} samples {verb}, {failed} failed")
    return EXIT_FAILED if failed else 0


async def _run_sample(
    pool: RulePool, rules: RuleSet, rule: Rule, sample: Sample, *, update: bool
) -> str | None:
    """None when the sample gives its expected JSON (or it was written), else what differs."""
    try:
        output = await pooled_output(pool, rules, sample.url, _read_page(sample.html))
    except CommandError as exc:
        return str(exc)
    if output["rule"] != rule.name:
        other = output["rule"]
        return f"{sample.url} is read by {'no rule' if other is None else f'rule {other!r}'}"
    if update:
        try:
            sample.expect.parent.mkdir(parents=True, exist_ok=True)
            sample.expect.write_text(_pretty(output), "utf-8")
        except OSError as exc:
            return f"cannot write {sample.expect}: {exc.strerror}"
        return None
    try:
        expected = json.loads(sample.expect.read_text("utf-8"))
    except FileNotFoundError:
        return f"no {sample.expect} yet (run with --update to write it)"
    except (OSError, ValueError) as exc:
        return f"cannot read {sample.expect}: {exc}"
    return _difference(expected, output)


def _difference(expected: Any, output: dict[str, Any]) -> str | None:
    """A unified diff of what differs (a list expected: the items, each its fields or an
    items.jsonl line; an object: its keys)."""
    actual: dict[str, Any]
    if isinstance(expected, list):
        expected, actual = {"items": expected}, {"items": _as_expected(expected, output)}
    elif isinstance(expected, dict):
        actual = {key: output.get(key) for key in expected}
    else:
        return "the expected JSON is neither a list of items nor an object"
    if expected == actual:
        return None
    lines = difflib.unified_diff(
        _pretty(expected).splitlines(),
        _pretty(actual).splitlines(),
        "expected",
        "got",
        lineterm="",
    )
    return "\n" + "\n".join(lines)


_LINE_KEYS = frozenset({"url", "rule", "fetched_at", "fields"})


def _as_expected(expected: list[Any], output: dict[str, Any]) -> list[Any]:
    """The sample's items as ``expected`` writes them: their fields or, when every expected
    item is an items.jsonl line (``fields`` and some of ``url``, ``rule``, ``fetched_at``),
    lines with the keys each expected line has (``fetched_at`` is the expected one's: a saved
    page has no fetch time)."""
    lines = bool(expected) and all(
        isinstance(item, dict) and "fields" in item and set(item) <= _LINE_KEYS for item in expected
    )
    if not lines:
        return list(output["items"])
    actual = []
    for index, fields in enumerate(output["items"]):
        keys = expected[index] if index < len(expected) else dict.fromkeys(_LINE_KEYS)
        line = {"url": output["url"], "rule": output["rule"], "fields": fields}
        line["fetched_at"] = keys.get("fetched_at")
        actual.append({key: line[key] for key in keys})
    return actual


def _pretty(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2) + "\n"
