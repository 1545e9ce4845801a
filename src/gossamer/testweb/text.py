"""Deterministic English-like filler text for generated pages."""

from __future__ import annotations

import random

_WORD_TEXT = (
    "the of and to in is that it was for on are as with his they at be this from have or "
    "by one had not but what all were when we there can an your which their said if do "
    "will each about how up out them then she many some so these would other into has "
    "more her two like him see time could no make than first been its who now people my "
    "made over did down only way find use may water long little very after words called "
    "just where most know get through back much before go good new write our used me man "
    "too any day same right look think also around another came come work three word must "
    "because does part even place well such here take why things help put years different "
    "away again off went old number great tell men say small every found still between "
    "name should home big give air line set own under read last never us left end along "
    "while might next sound below saw something thought both few those always looked show "
    "large often together asked house world going want school important until form food "
    "keep children feet land side without boy once animals life enough took sometimes four "
    "head above kind began almost live page got earth need far hand high year mother light "
    "parts country father let night following picture being study second eyes soon times "
    "story boys since white days ever paper hard near sentence better best across during "
    "today others however sure means knew try told young miles sun ways thing whole hear "
    "example heard several change answer room sea against top turned learn point city play "
    "toward five using himself usually river garden crawler spider frontier harbour"
)
WORDS = tuple(_WORD_TEXT.split())


def sentence(rng: random.Random) -> str:
    """One capitalised sentence of 6 to 16 words."""
    words = [rng.choice(WORDS) for _ in range(rng.randint(6, 16))]
    return " ".join(words).capitalize() + "."


def paragraphs(seed: int, size: int) -> list[str]:
    """Paragraphs of 3 to 7 sentences, about ``size`` characters in all (at least one)."""
    rng = random.Random(seed)
    out: list[str] = []
    total = 0
    while total < size or not out:
        para = " ".join(sentence(rng) for _ in range(rng.randint(3, 7)))
        out.append(para)
        total += len(para) + 8
    return out


def title(rng: random.Random) -> str:
    """A short title-cased phrase."""
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 4))).title()
