"""Blurred quantities: a number fact as a rounded value, a range or an order of magnitude (SailorFog-QA-V2, step 4).

The number transform of :mod:`training.synth.compose.uncertainty`, with the formatting it needs
(:func:`format_quantity`) and the phrase that attaches the blurred value to its attribute
(:func:`number_phrase`); kept apart from the date and relation transforms, which share none of it.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable

from training.synth.compose.clues import Clue, UncertaintyType
from training.synth.compose.naming import with_article
from training.synth.compose.uncertainty import relation_label
from training.synth.extract.facts import MEASURE_UNITS, NumberFact

__all__ = ["ABOUT_MAX_ERROR", "ABOUT_TOLERANCE", "format_quantity", "fuzz_number", "number_phrase"]

#: The values "about R" admits: ``[0.7 R, 1.4 R]`` (wider than rounding, so a verifier errs towards ambiguity).
ABOUT_TOLERANCE = (0.7, 1.4)
#: The largest error of the rounding "about R" says (a reader rounds 241.5 million to 240 million, not 200 million).
ABOUT_MAX_ERROR = 0.1
_SCALE = [(1e12, "trillion"), (1e9, "billion"), (1e6, "million")]
_MAGNITUDE = {
    0: "in the single digits",
    1: "in the tens",
    2: "in the hundreds",
    3: "in the thousands",
    4: "in the tens of thousands",
    5: "in the hundreds of thousands",
    6: "in the millions",
    7: "in the tens of millions",
    8: "in the hundreds of millions",
    9: "in the billions",
    10: "in the tens of billions",
    11: "in the hundreds of billions",
    12: "in the trillions",
}


def _half_up(x: float) -> int:
    return math.floor(x + 0.5)


#: "nearest" rounds half up, as a reader does: round() goes to the even digit (85,000 would be "about 80,000")
_ROUNDING: dict[str, Callable[[float], int]] = {"nearest": _half_up, "down": math.floor, "up": math.ceil}


def _round_sig(v: float, sig: int, how: str = "nearest") -> float:
    if v <= 0:
        return 0.0
    e = math.floor(math.log10(v)) - sig + 1
    return _ROUNDING[how](v / 10**e) * 10**e


def format_quantity(v: float) -> str:
    """``3000000`` -> ``"3 million"``, ``8800`` -> ``"8,800"``, ``2.5`` -> ``"2.5"``."""
    for scale, word in _SCALE:
        if v >= scale:
            x = v / scale
            return f"{x:.1f}".rstrip("0").rstrip(".") + f" {word}"
    return f"{v:,.0f}" if v >= 100 or v == int(v) else f"{v:.2g}"


def _with_unit(q: str, unit: str) -> str:
    if not unit:
        return q
    if unit in ("$", "US$", "£", "€"):
        return f"{unit}{q}"
    return f"{q}{'' if unit == '%' else ' '}{unit}"


def fuzz_number(number: NumberFact, *, mode: str | None = None, rng: random.Random | None = None) -> Clue:
    """Blur a quantity to a rounded value, a range around it, or its order of magnitude.

    Args:
        number: The quantity (``3,287,263 km2``).
        mode: ``"about"`` (``"about 3 million km2"``), ``"range"`` (``"between 2 million and 5
            million km2"``), ``"magnitude"`` (``"in the millions"``); ``None`` picks one at random.
        rng: Random generator.

    Returns:
        A ``FUZZY_NUMBER`` clue true of the value.
    """
    rng = rng or random.Random(0)
    mode = mode or ("about", "range", "magnitude")[rng.randrange(3)]
    v = number.value
    sig = 2 if f"{v:e}".startswith("1") else 1
    if mode == "about":
        r = _round_sig(v, sig)
        if v > 0 and abs(r - v) / v > ABOUT_MAX_ERROR:
            r = _round_sig(v, sig + 1)  # 241.5 million is "about 240 million", not "about 200 million"
        text = "about " + _with_unit(format_quantity(r), number.unit)
        rec = ("rounded", str(r))
        lo, hi = r * ABOUT_TOLERANCE[0], r * ABOUT_TOLERANCE[1]  # what "about" admits, for verification
    elif mode == "range":
        lo = _round_sig(v * rng.uniform(0.45, 0.9), 1, "down")
        hi = _round_sig(v * rng.uniform(1.1, 2.0), 1, "up")
        lo_s, hi_s = format_quantity(lo), format_quantity(hi)
        if lo_s.split()[-1:] == hi_s.split()[-1:] and " " in lo_s:
            lo_s = lo_s.rsplit(" ", 1)[0]  # "between 2 and 5 million"
        text = f"between {lo_s} and " + _with_unit(hi_s, number.unit)
        rec = ("bounds", f"{lo}-{hi}")
    elif mode == "magnitude":
        exp = max(0, min(12, math.floor(math.log10(v)) if v >= 1 else 0))
        unit = number.unit
        suffix = (
            ""
            if not unit or re.fullmatch(r"[a-z]+s", unit)
            else f" (in {unit})"
            if unit in ("$", "US$", "£", "€")
            else f" of {unit}"
        )
        text = _MAGNITUDE[exp] + suffix
        rec = ("exponent", str(exp))
        lo, hi = (0.0 if exp == 0 else 10.0**exp), 10.0 ** (exp + 1)
    else:
        raise ValueError(f"mode must be 'about', 'range' or 'magnitude', got {mode!r}")
    return Clue(
        text,
        UncertaintyType.FUZZY_NUMBER,
        number.text,
        (("attr", number.attr), ("mode", mode), rec, ("lo", repr(float(lo))), ("hi", repr(float(hi)))),
    )


_MEASURES = ("length", "height", "area", "elevation", "depth", "width", "distance", "diameter", "mass", "weight")
_COUNT_ATTRS = ("speakers", "species", "members", "employees", "residents", "inhabitants")


def number_phrase(number: NumberFact, clue: Clue) -> str | None:
    """Attach a blurred number to its attribute: ``"with a population of about 3 million"``,
    ``"with about 50 states"``, ``"whose height is in the thousands of m"``; ``None`` for a bare
    number with neither attribute nor countable unit."""
    attr = relation_label(number.attr)
    if attr in _MEASURES and not number.unit:
        return None  # "a length of about 12": a measure without its unit says nothing
    magnitude = dict(clue.record).get("mode") == "magnitude"
    plural = re.fullmatch(r"[a-z]+s", number.unit or "") is not None and number.unit not in MEASURE_UNITS
    if attr in ("quantity", "") or attr in _COUNT_ATTRS:
        if not plural and attr not in _COUNT_ATTRS:
            return None
        noun = number.unit if plural else attr
        if magnitude:
            return f"whose number of {noun} is {clue.text}"
        text = clue.text
        if number.unit and text.endswith(" " + number.unit):  # "about 130,000 people" employed: "130,000 employees"
            text = text[: -len(number.unit)] + noun
        return f"with {text}" + ("" if text.endswith(noun) else f" {noun}")
    return f"whose {attr} is {clue.text}" if magnitude else f"with {with_article(attr)} of {clue.text}"
