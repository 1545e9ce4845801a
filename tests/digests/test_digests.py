"""Content digests: exact and near duplicates of a main text, the banded index, hostile
texts (empty, short, huge), the embedded index's persistence in crawl.db."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest
from tests.digests.digest_site import ARTICLE, EDITED, OTHER

from gossamer.crawldb import CrawlDB
from gossamer.digests.base import MIN_WORDS, Digest, Match, bands, digest, hamming
from gossamer.digests.local import LocalDigests, NearIndex
from gossamer.settings import SettingsError, load_settings

TEXT = "\n\n".join(ARTICLE)


def test_exact_digest_is_the_text_and_near_ignores_case_spacing_and_punctuation() -> None:
    one = digest(TEXT)
    assert one is not None and one == digest(TEXT)
    other = digest(TEXT.upper().replace(" ", "  ") + " !")
    assert other is not None and other.exact != one.exact and other.near == one.near
    assert digest(TEXT, near=False) == Digest(one.exact)


def test_near_duplicates_are_close_and_distinct_texts_far() -> None:
    one, edited, other = digest(TEXT), digest("\n\n".join(EDITED)), digest("\n\n".join(OTHER))
    assert one is not None and edited is not None and other is not None
    assert one.exact != edited.exact
    assert 0 < hamming(one.near, edited.near) <= 3
    assert hamming(one.near, other.near) > 10


@pytest.mark.parametrize("text", ["", " \n\t", "one two three", "word " * (MIN_WORDS - 1)])
def test_short_texts_get_no_digest(text: str) -> None:
    assert digest(text) is None


def test_hostile_texts_cost_bounded_time() -> None:
    started = time.process_time()
    assert digest("x " * 5_000_000) is not None  # 10 MB
    assert digest("\ud800 \x00 " * 100) is not None  # lone surrogates, NUL
    assert digest("é" * 100_000 + " a" * 20) is not None
    assert time.process_time() - started < 5


def test_bands_cover_all_bits_and_any_near_hash_shares_one() -> None:
    for threshold in range(8):
        assert len(bands(0, threshold)) == threshold + 1
        assert len(set(bands(0, threshold))) == threshold + 1  # tagged by band
    near = 0x0123456789ABCDEF
    flipped = near ^ (1 << 3) ^ (1 << 20) ^ (1 << 40)
    assert set(bands(near, 3)) & set(bands(flipped, 3))


def test_index_finds_first_url_exact_then_near() -> None:
    index = NearIndex(3)
    assert index.find(Digest(1, 0b1111)) is None
    assert index.insert("http://a/", Digest(1, 0b1111))
    assert index.find(Digest(1, 0)) == Match("exact", "http://a/")
    assert index.find(Digest(2, 0b1110)) == Match("near", "http://a/", 1)
    assert index.find(Digest(2, 0b1111 ^ (0b1111 << 30))) is None  # 8 bits off
    assert not index.insert("http://b/", Digest(1, 5))  # exact known: not a first
    assert index.find(Digest(3)) is None  # exact only: no SimHash to compare
    assert index.insert("http://c/", Digest(3)) and index.find(Digest(3, 7)) == Match(
        "exact", "http://c/"
    )
    with pytest.raises(ValueError):
        NearIndex(8)


async def test_local_digests_persist_in_crawl_db(tmp_path: Path) -> None:
    first, edited = digest(TEXT), digest("\n\n".join(EDITED))
    assert first is not None and edited is not None
    big = Digest((1 << 64) - 1, (1 << 63) + 5)  # unsigned values past SQLite's signed range
    db = CrawlDB(tmp_path / "crawl.db")
    digests = LocalDigests(db)
    assert await digests.check("http://n.test/a", first) is None
    assert await digests.check("http://n.test/a", first) is None  # itself: not a duplicate
    assert await digests.check("http://n.test/big", big) is None
    assert await digests.check("http://n.test/copy", first) == Match("exact", "http://n.test/a")
    await db.commit()
    db.close()
    db = CrawlDB(tmp_path / "crawl.db")
    again = LocalDigests(db)
    again.restore()
    assert (again.stats().exact, again.stats().near, again.stats().digested) == (1, 0, 0)
    match = await again.check("http://n.test/edit", edited)
    assert match is not None and match.kind == "near" and match.first == "http://n.test/a"
    assert await again.check("http://n.test/big2", big) == Match("exact", "http://n.test/big")
    assert await again.check("http://n.test/x", Digest(9)) is None  # exact only: near is NULL
    await db.commit()
    db.close()
    db = CrawlDB(tmp_path / "crawl.db")
    third = LocalDigests(db)
    third.restore()
    assert await third.check("http://n.test/y", Digest(9)) == Match("exact", "http://n.test/x")
    db.close()


def test_digest_settings_from_toml_env_and_flags(tmp_path: Path) -> None:
    assert load_settings({}, env={}).digests == "near"
    config = tmp_path / "crawl.toml"
    config.write_text('digests = "exact"\ndigest_threshold = 5\nfollow_duplicates = true\n')
    settings = load_settings({}, config=config, env={})
    assert (settings.digests, settings.digest_threshold, settings.follow_duplicates) == (
        "exact", 5, True
    )  # fmt: skip
    env = {"GOSSAMER_DIGESTS": "off", "GOSSAMER_FOLLOW_DUPLICATES": "false"}
    settings = load_settings({}, config=config, env=env)
    assert (settings.digests, settings.follow_duplicates) == ("off", False)
    assert load_settings({"digests": "near"}, config=config, env=env).digests == "near"
    for bad in ({"digests": "fuzzy"}, {"digest_threshold": 8}, {"digest_threshold": -1}):
        with pytest.raises(SettingsError):
            load_settings(bad, env={})


def test_simhash_values_are_stable() -> None:
    """The SimHash of a text never changes between versions: stored near digests stay
    comparable (values computed by the version before the strided-window rewrite)."""
    from gossamer.digests.simhash import text_simhash

    texts = [
        "",
        "Short text.",
        " ".join(f"Word{i} ünïcode" for i in range(40)),
        " ".join(f"paragraph {i} of the long text, sampled" for i in range(400)),
    ]
    found = [text_simhash(text.encode()) for text in texts]
    assert found == [0x0, 0xF3BE6EDDBCA7A1E4, 0xF58FDC0034543EBB, 0x9A5898D6AA5C215C]


def _fixed_texts() -> dict[str, str]:
    rng = random.Random(28)
    words = ["Debian", "paquet", "déjà", "vu", "naïve", "日本語", "Straße", "x86_64", "0xFF"]
    words += ["a.b-c", "README", "the", "of", "and"]
    return {
        "empty": "",
        "fifteen letters": "abcdefghijklmno",
        "sixteen letters": "Abcdefghijklmnop",
        "1024 letters": "ab3" * 341 + "z",
        "1025 letters": "ab3" * 341 + "zy",
        "one letter repeated": "a" * 5000,
        "punctuation only": ".,;: -- !? " * 300,
        "words": " ".join(rng.choice(words) for _ in range(3000)),
        "past the bound": " ".join(f"Line {i}: ÀÉÎ text" for i in range(20000)),
    }


@pytest.mark.parametrize(
    ("name", "size", "expected"),
    [
        ("empty", 0, 0x0000000000000000),
        ("fifteen letters", 15, 0x8F1F1F193FA64F73),
        ("sixteen letters", 16, 0x77F082B228018AD9),
        ("1024 letters", 1024, 0xD60362562AE20E4A),
        ("1025 letters", 1025, 0x526422172AC6007A),
        ("one letter repeated", 5000, 0x0000000000000000),
        ("punctuation only", 3300, 0x0000000000000000),
        ("words", 18106, 0x12718163FC0F3F23),
        ("past the bound", 468889, 0x8971BBBE1BFDE13F),
    ],
)
def test_simhash_of_fixed_texts_is_the_stored_one(name: str, size: int, expected: int) -> None:
    """Each edge of the computation (padding, the sampling threshold, a text no shingle of
    which is sampled, the byte bound) gives the value the numpy version of bincount keys in
    intp gave: stored near digests stay comparable across the rewrite of the vote count."""
    from gossamer.digests.simhash import text_simhash

    encoded = _fixed_texts()[name].encode()
    assert len(encoded) == size
    assert text_simhash(encoded) == expected


def _reference_simhash(letters: bytes) -> int:
    """The SimHash of :func:`gossamer.digests.simhash.simhash` by its definition, one shingle
    at a time in Python integers."""
    from gossamer.digests import simhash as module

    mask = (1 << 64) - 1
    letters = letters.ljust(module.SHINGLE, b"\0")
    sampled = len(letters) > module.SAMPLE * 256
    votes, count = [0] * 64, 0
    for start in range(len(letters) - module.SHINGLE + 1):
        head = int.from_bytes(letters[start : start + 8], "little") * 0x9E3779B97F4A7C15 & mask
        if sampled and head >= (1 << 64) // module.SAMPLE:
            continue
        value = head ^ int.from_bytes(letters[start + 8 : start + 16], "little")
        value ^= value >> 31
        value = value * 0xBF58476D1CE4E5B9 & mask
        value ^= value >> 29
        value = value * 0x94D049BB133111EB & mask
        value ^= value >> 32
        count += 1
        for bit in range(64):
            votes[bit] += value >> bit & 1
    return sum(1 << bit for bit in range(64) if votes[bit] * 2 > count)


@pytest.mark.parametrize("size", [0, 5, 16, 17, 300, 1024, 1025, 6000])
def test_simhash_counts_the_votes_of_its_definition(size: int) -> None:
    import numpy as np

    from gossamer.digests.simhash import simhash

    letters = random.Random(size).randbytes(size)
    assert simhash(np.frombuffer(letters, dtype=np.uint8)) == _reference_simhash(letters)


def native_simhash() -> bool:
    from gossamer.digests.simhash import _SIMHASH

    return _SIMHASH is not None


@pytest.mark.skipif(not native_simhash(), reason="_simhash was not built (setup.py)")
@pytest.mark.parametrize("size", [0, 1, 7, 8, 15, 16, 17, 23, 24, 300, 1024, 1025, 1040, 6000])
def test_the_c_simhash_counts_the_votes_of_its_definition(size: int) -> None:
    from gossamer.digests.simhash import _SIMHASH as native

    assert native is not None
    from gossamer.digests import simhash as module

    for seed in range(3):
        letters = random.Random(size * 3 + seed).randbytes(size)
        expected = _reference_simhash(letters)
        assert native.simhash(letters) == expected == module._simhash(letters)


@pytest.mark.skipif(not native_simhash(), reason="_simhash was not built (setup.py)")
def test_the_c_simhash_of_real_pages_is_numpys() -> None:
    from gossamer.digests.simhash import _SIMHASH as native

    assert native is not None
    from gossamer.digests import simhash as module

    files = sorted(Path("/usr/share/doc/python3-doc/html").rglob("*.html"))[::5]
    if not files:
        pytest.skip("python3-doc is not installed")
    for file in files:
        body = file.read_bytes()[: module.MAX_NEAR_BYTES * 2]
        letters = body[: module.MAX_NEAR_BYTES].translate(module._LOWER_TABLE, module._DROPPED)
        assert native.simhash(letters) == module._simhash(letters), file
        assert native.simhash(body) == module._simhash(body), file  # markup too


@pytest.mark.skipif(not native_simhash(), reason="_simhash was not built (setup.py)")
def test_the_c_simhash_refuses_anything_but_bytes() -> None:
    from gossamer.digests.simhash import _SIMHASH as native

    assert native is not None
    for wrong in ("text", bytearray(b"letters"), None, memoryview(b"x")):
        with pytest.raises(TypeError):
            native.simhash(wrong)


def _unicode_sample(rng: random.Random, size: int) -> str:
    """``size`` characters drawn from every kind the letters' pick meets: ASCII (letters,
    digits, each punctuation and control byte), Unicode spaces and punctuation, letters of
    other scripts, characters past the BMP and lone surrogates."""
    import sys
    import unicodedata

    spaces = [chr(c) for c in range(0x80, 0x3100) if unicodedata.category(chr(c))[0] in "ZPSC"]
    kinds = [
        [chr(c) for c in range(128)],
        spaces,
        ["é", "ß", "Ж", "日", "ﬁ", "Ａ", "İ", "\u0301"],
        [chr(rng.randrange(0x10000, sys.maxunicode + 1)) for _ in range(64)],
        [chr(rng.randrange(0xD800, 0xE000)) for _ in range(16)],
        list("The Quick brown FOX 0123 "),
    ]
    weights = [6, 2, 2, 1, 1, 8]
    return "".join(rng.choice(rng.choices(kinds, weights)[0]) for _ in range(size))


@pytest.mark.skipif(not native_simhash(), reason="_simhash was not built (setup.py)")
@pytest.mark.parametrize(
    "size", [0, 1, 5, 15, 16, 17, 40, 300, 1100, 2000, 4095, 4096, 4097, 9000, 70_000]
)
def test_the_c_text_simhash_picks_the_letters_of_the_translate(size: int) -> None:
    """The C pass that picks a text's letters and hashes them gives, bit for bit, the
    SimHash of ``bytes.translate``'s letters (numpy's and the C hash of them) for texts of
    every kind of character, encoded as the digests encode them (lone surrogates passed)."""
    from gossamer.digests.simhash import _SIMHASH as native

    assert native is not None
    from gossamer.digests import simhash as module

    rng = random.Random(size)
    for _ in range(6):
        encoded = _unicode_sample(rng, size).encode("utf-8", "surrogatepass")
        letters = encoded.translate(module._LOWER_TABLE, module._DROPPED)
        expected = module._text_simhash(encoded)
        assert native.text_simhash(encoded) == expected == module._simhash(letters)
    every_byte = bytes(range(256)) * (size // 256 + 1)
    assert native.text_simhash(every_byte) == module._text_simhash(every_byte)


@pytest.mark.skipif(not native_simhash(), reason="_simhash was not built (setup.py)")
def test_the_c_text_simhash_reads_the_bound_of_the_translate() -> None:
    """Only the first MAX_NEAR_BYTES bytes count, as for the translate, also where the
    bound cuts a character in two and where no letter but past it."""
    from gossamer.digests.simhash import _SIMHASH as native

    assert native is not None
    from gossamer.digests import simhash as module

    bound = module.MAX_NEAR_BYTES
    assert bound == native.MAX_NEAR_BYTES
    rng = random.Random(7)
    head = _unicode_sample(rng, bound // 3).encode("utf-8", "surrogatepass")
    for cut in (bound - 1, bound, bound + 1):
        text = (head * 3)[:cut] + "𝔸b€".encode() * 9
        assert native.text_simhash(text) == module._text_simhash(text)
    blank = b" " * bound + b"letters past the bound"
    assert native.text_simhash(blank) == module._text_simhash(blank) == 0


@pytest.mark.skipif(not native_simhash(), reason="_simhash was not built (setup.py)")
def test_the_c_text_simhash_of_real_pages_is_the_translates() -> None:
    from gossamer.digests.simhash import _SIMHASH as native

    assert native is not None
    from gossamer.digests import simhash as module

    files = sorted(Path("/usr/share/doc/python3-doc/html").rglob("*.html"))[::3]
    if not files:
        pytest.skip("python3-doc is not installed")
    for file in files:
        text = file.read_bytes().decode("utf-8", "replace")
        for encoded in (text.encode(), text.upper().encode(), text[::7].encode()):
            assert native.text_simhash(encoded) == module._text_simhash(encoded), file


@pytest.mark.skipif(not native_simhash(), reason="_simhash was not built (setup.py)")
def test_the_c_text_simhash_refuses_anything_but_bytes() -> None:
    from gossamer.digests.simhash import _SIMHASH as native

    assert native is not None
    for wrong in ("text", bytearray(b"letters"), None, memoryview(b"x")):
        with pytest.raises(TypeError):
            native.text_simhash(wrong)


def _old_digest(text: str, near: bool, title: str | None) -> Digest | None:
    """`digest` as it was: the text and title joined, then encoded as one."""
    import xxhash

    from gossamer.digests.base import MAX_TEXT_CHARS
    from gossamer.digests.simhash import _text_simhash

    if len(text.split(maxsplit=MIN_WORDS)) < MIN_WORDS:
        return None
    document = f"{title}\n{text}" if title else text
    encoded = document[:MAX_TEXT_CHARS].encode("utf-8", "surrogatepass")
    exact = xxhash.xxh3_64_intdigest(encoded)
    return Digest(exact, _text_simhash(encoded) if near else None)


def test_digest_of_text_and_title_encoded_apart_is_the_joined_ones() -> None:
    """The text's UTF-8 (kept with it) after the title's gives the digests of the joined
    document, surrogates in either, at the bound of the characters digested too."""
    from gossamer.digests import base

    rng = random.Random(3)
    for size in (40, 300, 5000):
        for title in (None, "", "Title", "Tïtle \ud800 😀", "\udfff"):
            words = _unicode_sample(rng, size) + " word" * MIN_WORDS
            for near in (True, False):
                assert digest(words, near, title) == _old_digest(words, near, title)
    words = " ".join(["wörd"] * (base.MAX_TEXT_CHARS // 5 + 10))
    for text in (words[: base.MAX_TEXT_CHARS - 6], words[: base.MAX_TEXT_CHARS - 5], words):
        for title in (None, "Title", "Tïtle"):
            assert digest(text, True, title) == _old_digest(text, True, title)


@pytest.mark.skipif(not native_simhash(), reason="_simhash was not built (setup.py)")
def test_digest_leaves_the_texts_utf8_for_the_records_writers() -> None:
    """After its digest a text holds its UTF-8 (CPython's copy, which SQLite's binding and
    msgspec read): the text is encoded once, not again by each."""
    import sys

    from gossamer.digests.simhash import text_utf8

    text = " ".join(f"wörd{i}" for i in range(200))
    bare = sys.getsizeof(text)
    assert digest(text, True, "Tïtle") is not None
    assert sys.getsizeof(text) >= bare + len(text.encode())
    assert text_utf8(text) == text.encode()
    lone = "a\ud800b"
    assert text_utf8(lone) == lone.encode("utf-8", "surrogatepass")
    assert text_utf8(lone, "replace") == b"a?b"
    with pytest.raises(TypeError):
        text_utf8(b"bytes")  # type: ignore[arg-type]
