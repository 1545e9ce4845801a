"""What a crawl reads through its settings: the secrets of its logins
(:func:`read_secret`), its seeds (given and from ``seeds_file``, line by line:
:func:`read_seeds`, :func:`canonical_seeds`) and its scope (:func:`crawl_scope`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import NoReturn

from gossamer.settings.auth import AuthSettings
from gossamer.settings.base import SettingsError
from gossamer.settings.models import CrawlSettings
from gossamer.urls import InvalidURL, Scope, canonicalize

_MAX_SEED_LINE = 64 * 1024
_SEEDS_CHUNK = 1 << 20
_TOO_LONG = "is longer than 64 KiB"
_NOT_TEXT = "is not text (a NUL byte)"


def read_secret(auth: AuthSettings, index: int, name: str, env: Mapping[str, str]) -> str:
    """The secret ``name`` (``password``...) of ``auth``, the ``index``-th [[auth]] table,
    from its variable or file. A missing one raises SettingsError naming the variable or
    file, never a value."""
    variable, path = getattr(auth, f"{name}_env"), getattr(auth, f"{name}_file")
    where = f"invalid setting 'auth.{index}.{name}"
    if variable is not None:
        value = env.get(variable)
        if not value:
            raise SettingsError(f"{where}_env': environment variable {variable} is not set")
        return value
    if path is None:
        raise SettingsError(f"{where}': give {name}_env or {name}_file")
    try:
        with Path(path).open("rb") as file:
            raw = file.read(64 * 1024 + 1)
    except OSError as exc:
        raise SettingsError(f"{where}_file': {exc.strerror}: {path}") from None
    try:
        value = raw.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError:
        raise SettingsError(f"{where}_file': {path} is not UTF-8 text") from None
    if not value or len(raw) > 64 * 1024:
        raise SettingsError(f"{where}_file': {path} is empty or larger than 64 KiB")
    return value


def read_seeds(settings: CrawlSettings) -> list[str]:
    """The seeds given directly plus those of ``seeds_file`` (blank and # lines skipped)."""
    seeds = list(settings.seeds)
    if settings.seeds_file is not None:
        seeds.extend(_seed_lines(settings.seeds_file))
    return seeds


def _seed_lines(path: Path) -> Iterator[str]:
    """The seed lines of a file, read a block of whole lines at a time: a line longer than
    64 KiB (``/dev/zero`` has no end of line) or a file that is not UTF-8 text is a settings
    error naming the line."""
    try:
        with path.open("rb") as file:
            before = 0  # lines before the block
            rest = b""
            while chunk := file.read(_SEEDS_CHUNK):
                block = rest + chunk
                end = block.rfind(b"\n") + 1
                rest = block[end:]
                if len(rest) > _MAX_SEED_LINE:
                    line = before + block.count(b"\n", 0, end) + 1
                    _seeds_error(line, _NOT_TEXT if b"\0" in rest else _TOO_LONG)
                if end:
                    yield from _block_lines(block[:end], before)
                    before += block.count(b"\n", 0, end)
            yield from _block_lines(rest, before)
    except OSError as exc:
        raise SettingsError(f"invalid setting 'seeds_file': {exc.strerror}: {path}") from None


def _block_lines(block: bytes, before: int) -> Iterator[str]:
    """The seeds of whole lines; ``before`` lines of the file came before them."""
    if b"\0" in block:
        _seeds_error(before + block.count(b"\n", 0, block.index(b"\0")) + 1, _NOT_TEXT)
    try:
        text = block.decode("utf-8")
    except UnicodeDecodeError as exc:
        _seeds_error(before + block.count(b"\n", 0, exc.start) + 1, "is not UTF-8 text")
    if before == 0:
        text = text.removeprefix("\ufeff")
    lines = text.splitlines()
    if lines and max(map(len, lines)) > _MAX_SEED_LINE:
        first = next(i for i, line in enumerate(lines) if len(line) > _MAX_SEED_LINE)
        _seeds_error(before + first + 1, _TOO_LONG)
    for line in lines:
        seed = line.strip()
        if seed and seed[0] != "#":
            yield seed


def _seeds_error(line: int, problem: str) -> NoReturn:
    raise SettingsError(f"invalid setting 'seeds_file': line {line} {problem}")


def canonical_seeds(settings: CrawlSettings) -> list[str]:
    """The seeds, canonical; a malformed seed is a settings error."""
    seeds = []
    for seed in read_seeds(settings):
        try:
            seeds.append(canonicalize(seed))
        except InvalidURL as exc:
            raise SettingsError(f"invalid setting 'seeds': {exc}") from None
    if not seeds and not settings.resume:
        raise SettingsError("invalid setting 'seeds': give at least one seed URL")
    return seeds


def crawl_scope(settings: CrawlSettings, seeds: list[str]) -> Scope:
    """The scope of a crawl: the seeds' hosts and ports, allowed domains and ports, and trap
    guards."""
    return Scope.for_seeds(
        seeds,
        settings.allow_domains,
        settings.allow_ports,
        max_depth=settings.max_depth,
        max_url_length=settings.max_url_length,
        max_repeated_segments=settings.max_repeated_segments,
    )
