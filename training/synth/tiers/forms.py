"""Surface forms of the ``lookup`` and ``bridge`` questions: the same facts and answer, said in ways a template cannot.

A model trained on one wording learns its positions ("search the first sentence, then the second"), not the question.
Every question is written in each form that applies to its facts, and one form is drawn per question from the seed
(:func:`settle_forms`); the record keeps its ``form``. The families, the same names on both tiers:

* ``template``: the tier's original wording. lookup "Bucharest is the capital of which country?"; bridge "Kabul is the
  capital of a country. Which city is the largest city in that country?"
* ``clue_order``: the clue sentence on the other side of the question. lookup "Bucharest is the capital of a country.
  Which country is it?"; bridge "Which city is the largest city in the country described next? Kabul is the capital
  of that country." (the reference phrase itself drawn from a few: "described next", "the following country", ...)
* ``joined``: one sentence, the clue as a leading clause (bridge only). "Given that Kabul is the capital of a country,
  which city is the largest city in that country?" (the lead drawn from a few: "Given that", "If", ...). A trained
  one-sentence form that asks two facts: without it every trained one-sentence question is a lookup, and a model
  learns to plan from the sentence count.
* ``relative``: one sentence, the clue in a relative clause. lookup "What is the country that Bucharest is the capital
  of?"; bridge "Which city is the largest city in the country that Kabul is the capital of?"
* ``described``: a description instead of the bare type noun: the answer (lookup) or the bridge entity (bridge) is
  referred to by its page's short description ("which country in Southeast Europe", "this country in Central and South
  Asia"), kept only when the description names no entity of the question.
* ``reworded``: the relations said with other words ("serves as the capital of", "is indigenous to", "ranks as the
  fourth-most populous city in") and "what" for "which"; kept only when a relation of the question has a rewording.
* ``parenthetical`` (opt-in, bridge only; not in :data:`FORMS`): one sentence, the clue in parentheses right after the
  noun it is about. "Which city is the largest city in the country (Kabul is the capital of that country)?" The clue
  sits where a relative clause would, yet is a whole sentence: a seen form that asks for the noun phrase to be taken
  apart without training on the held-out ``relative`` family.
* ``what`` (opt-in; not in :data:`FORMS`): the template asked with "what" for "which" ("Kabul is the capital of a
  country. What city is the third-largest city in that country?"), kept only when the question has a "which". Every
  default seen form asks "which", so a model trained on them can key on that word, and ``reworded`` changes it as well as
  the relations; with this form trained, what ``reworded`` still holds out is the relations' wording.

A **form-disjoint** split holds some families out of training (``unseen_forms``): a train record is only ever drawn in
a seen form, a held-out record in any form, so the held-out split holds seen and unseen forms of answers never
trained on.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Callable
from typing import Any

from training.synth.compose.naming import leaks

FORMS = ("template", "clue_order", "joined", "relative", "described", "reworded")
#: forms a task set has only when its settings name them (``TierConfig.forms``, ``LearnConfig.forms``): the default
#: sets, and the draws of their questions, stay as they were
EXTRA_FORMS = ("parenthetical", "what")
ALL_FORMS = FORMS + EXTRA_FORMS
#: the families held out of training by default: one structure, one wording
UNSEEN_FORMS = ("relative", "reworded")
#: version of the question forms: a task set written by another version holds other questions
FORMS_VERSION = 2

_HOLE = "\x00"
#: ways of pointing at the entity the next sentence describes (``clue_order``)
_NEXT = ("the {h} described next", "the following {h}", "the {h} in the next sentence")
#: leads of the clue clause that opens a ``joined`` question
_JOIN = ("Given that", "If", "Knowing that")
#: relation rewordings, the first that matches a clause is used (``reworded``)
_REWORD: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p), r)
    for p, r in (
        (r"\bis the capital city of\b", "serves as the capital city of"),
        (r"\bis the capital of\b", "serves as the capital of"),
        (
            r"\bis the ((?:[\w]+-)?(?:most|least)? ?[\w-]*(?:est|st|nd|rd|th) [\w-]+ (?:city|country|nation|lake))"
            r" (in|of)\b",
            r"ranks as the \1 \2",
        ),
        (r"\bis the ([\w-]+(?:est|st|nd|rd|th)(?: [\w-]+)?) (in|of)\b", r"ranks as the \1 \2"),
        (r"\bis an? ((?:[\w-]+ )?)(?:country|nation) in\b", r"is a \1state located in"),
        (r"\bis an? (city|town|state|region|province|island|river|port) in\b", r"is a \1 located in"),
        (r"\bis located in\b", "lies in"),
        (r"\bis situated (on|in)\b", r"lies \1"),
        (r"\bis native to\b", "is indigenous to"),
        (r"\bis spoken in\b", "is a language used in"),
        (r"\boriginated in\b", "first arose in"),
        (r"\bwas led by\b", "had as its leader"),
        (r"\bwas founded by\b", "was established by"),
        (r"\bwas founded in\b", "was established in"),
        (r"\bwas born in\b", "came into the world in"),
        (r"\bis a member of\b", "belongs to"),
        (r"\bis (?:a )?part of\b", "forms part of"),
        (r"\bwas the ([\w-]+) of\b", r"served as the \1 of"),
        (r"\bis the ([\w-]+) of\b", r"serves as the \1 of"),
        (r"\bexisted in\b", "lived in"),
        (r"\bis derived from\b", "comes from"),
        (r"\bis known as\b", "goes by the name of"),
        (r"\bwas written by\b", "is the work of"),
        (r"\bwas directed by\b", "had as its director"),
        (r"\bis headquartered in\b", "has its headquarters in"),
        (r"\bdied in\b", "met death in"),
    )
)


def forms_problem(forms: tuple[str, ...], unseen_forms: tuple[str, ...]) -> str | None:
    """What is wrong with a ``forms`` / ``unseen_forms`` setting, or ``None`` when it is sound.

    Both configs that name forms (``TierConfig``, ``LearnConfig``) check them here, so they accept the same settings.
    ``template`` must be among the forms and seen: it is every tier's first form and the intersection tier's only one.

    >>> forms_problem(FORMS, UNSEEN_FORMS) is None
    True
    >>> forms_problem(("template", "joined"), ("template",))[:45]
    "unseen_forms must name forms other than 'temp"
    """
    names = ", ".join(ALL_FORMS)
    if "template" not in forms or any(f not in ALL_FORMS for f in forms):
        return f"forms must include 'template' and name forms of ({names}); found {forms!r}"
    if "template" in unseen_forms or any(f not in ALL_FORMS for f in unseen_forms):
        return (
            f"unseen_forms must name forms other than 'template', which is always seen, of ({names}); "
            f"found {unseen_forms!r}"
        )
    return None


def reword(clause: str) -> str | None:
    """The clause with its relation said in other words, or ``None`` when no rewording applies.

    >>> reword("Bucharest is the capital of which country")
    'Bucharest serves as the capital of which country'
    >>> reword("Which city is the fourth-most populous city in that country")
    'Which city ranks as the fourth-most populous city in that country'
    >>> reword("Mars orbits the Sun") is None
    True
    """
    for pattern, repl in _REWORD:
        new, n = pattern.subn(repl, clause, count=1)
        if n:
            return new
    return None


def _what(clause: str) -> str:
    """ "what" for the first "which" (``"which country"`` -> ``"what country"``)."""
    return re.sub(r"\b([Ww])hich\b", lambda m: "What" if m.group(1) == "W" else "what", clause, count=1)


def relative_ref(clause_with_hole: str, head: str) -> str | None:
    """``"the country that Bucharest is the capital of"`` from the clause with the asked role as a hole.

    The hole must open or close the clause ("<hole> is the capital of Laos" -> "the city that is the capital of Laos";
    "Manhattan Project was led by <hole>" -> "the country that Manhattan Project was led by"); else ``None``.
    """
    c = clause_with_hole.strip().rstrip(".")
    if "'s " in c:  # an infobox field ("Romania's capital is <hole>") has no relative clause of that shape
        return None
    if c.startswith(_HOLE + " "):
        return f"the {head} that {c[2:]}"
    if c.endswith(" " + _HOLE) and _HOLE not in c[:-2]:
        return f"the {head} that {c[:-2]}"
    return None


def short_description(entity: Any, forbidden: list[str]) -> str | None:
    """The entity's short description as a noun phrase ("country in Southeast Asia"), or ``None`` when it has none of
    2-8 words, or it names one of ``forbidden`` (the question's entities: it would give one away)."""
    desc = str(getattr(entity, "description", "") or "").strip().rstrip(".")
    if not desc or not 2 <= len(desc.split()) <= 8 or re.search(r"[()\d;:]", desc) or leaks(desc, forbidden):
        return None
    first = desc.split()[0]
    lead = str(getattr(entity, "first_sentence", "") or "")
    if not re.search(rf"(?<=\S )\b{re.escape(first)}\b", lead):  # "Country in" -> "country in"; "Abrahamic" stays
        desc = first.lower() + desc[len(first) :]
    return desc


def case(text: str) -> str:
    """Upper-case the first letter."""
    return text[:1].upper() + text[1:]


def q(clause: str) -> str:
    """A clause as a question: first letter up, one question mark."""
    return case(clause.strip().rstrip(".?")) + "?"


def lookup_forms(
    ask: Callable[[str, str], str], subject: str, head: str, wh: str, answer_desc: str | None
) -> dict[str, str]:
    """Each form of a lookup question.

    Args:
        ask: ``ask(subject_ref, asked)``: the fact as a clause (``"Bucharest is the capital of which country"``).
        subject: The named subject.
        head: The answer's type noun.
        wh: The wh-phrase (``"which country"``, ``"who"``).
        answer_desc: The answer's short description (None: no ``described`` form).
    """
    art = "an" if head[:1] in "aeiou" else "a"
    plain = ask(subject, wh)
    out = {"template": q(plain)}
    tail = "Who is that person?" if wh == "who" else f"{case(wh)} is it?"
    out["clue_order"] = f"{case(ask(subject, f'{art} {head}'))}. {tail}"
    rel = relative_ref(ask(subject, _HOLE), "person" if wh == "who" else head)
    if rel is not None:
        out["relative"] = q(f"{'who' if wh == 'who' else 'what'} is {rel}")
    if answer_desc and wh != "who":
        out["described"] = q(ask(subject, f"which {answer_desc}"))
    if (r := reword(plain)) is not None:
        out["reworded"] = q(_what(r))
    if (w := q(_what(plain))) != out["template"]:
        out["what"] = w
    return out


def bridge_forms(
    ask1: Callable[[str, str], str],
    ask2: Callable[[str, str], str],
    subject: str,
    head_b: str,
    wh_c: str,
    b_desc: str | None,
    rng: random.Random,
) -> dict[str, str]:
    """Each form of a bridge question A -> B -> C.

    Args:
        ask1: ``ask1(subject_ref, asked)``: the first fact (A named, B asked) as a clause.
        ask2: ``ask2(subject_ref, asked)``: the second fact (B's reference, C asked) as a clause.
        subject: A's name.
        head_b: B's type noun.
        wh_c: C's wh-phrase.
        b_desc: B's short description (None: no ``described`` form).
        rng: Draws the ``clue_order`` reference phrase.
    """
    art = "an" if head_b[:1] in "aeiou" else "a"
    clue = ask1(subject, f"{art} {head_b}")  # the first fact, B asked as "a country"
    asked = ask2(f"that {head_b}", wh_c)  # the second fact, B as "that country"
    intro = case(clue)
    out = {"template": f"{intro}. {q(asked)}"}
    ref = rng.choice(_NEXT).format(h=head_b)
    out["clue_order"] = f"{q(ask2(ref, wh_c))} {case(ask1(subject, f'that {head_b}'))}."
    lead = random.Random(f"joined|{subject}|{head_b}").choice(_JOIN)  # keyed by content: rng's draws stay as they were
    out["joined"] = f"{lead} {clue}, {asked.strip().rstrip('.?')}?"
    rel = relative_ref(ask1(subject, _HOLE), head_b)
    if rel is not None:
        out["relative"] = q(ask2(rel, wh_c))
    out["parenthetical"] = q(ask2(f"the {head_b} ({ask1(subject, f'that {head_b}')})", wh_c))
    if b_desc:
        out["described"] = f"{intro}. {q(ask2(f'this {b_desc}', wh_c))}"
    first, second = reword(clue), reword(asked)
    if first is not None or second is not None:
        out["reworded"] = f"{case(first or intro)}. {q(_what(second or asked))}"
    if (w := f"{intro}. {q(_what(asked))}") != out["template"]:
        out["what"] = w
    return out


def settle_forms(
    records: list[dict[str, Any]], unseen: tuple[str, ...] = UNSEEN_FORMS, seed: int = 0, report: Counter | None = None
) -> list[dict[str, Any]]:
    """Draw each record's form from its ``variants`` and drop the variants; returns the records kept.

    A train record is drawn among the seen forms only (a record with none is dropped, counted as
    ``no_seen_form``); a held-out record among all its forms. Each variant is ``{"question": ..., **difficulty}``:
    its keys other than the question update the record's ``difficulty``. Records without variants are kept as they
    are (``form`` ``template``).
    """
    out = []
    for r in records:
        variants = r.pop("variants", None)
        if not variants:
            r.setdefault("form", "template")
            r.setdefault("form_seen", r["form"] not in unseen)
            out.append(r)
            continue
        allowed = [f for f in ALL_FORMS if f in variants and (r.get("split") != "train" or f not in unseen)]
        if not allowed:
            if report is not None:
                report["no_seen_form"] += 1
            continue
        form = random.Random(f"{seed}|{r['id']}").choice(allowed)
        v = dict(variants[form])
        r["question"] = v.pop("question")
        r["form"], r["form_seen"] = form, form not in unseen
        r["difficulty"].update(v)
        if report is not None:
            report[f"form_{form}"] += 1
        out.append(r)
    return out


def form_card(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts per form and split (``{"template": {"train": 40, "test": 12}, ...}``)."""
    card: dict[str, dict[str, int]] = {}
    for r in records:
        card.setdefault(str(r.get("form", "template")), Counter())[str(r.get("split"))] += 1
    return {
        f: dict(card[f]) for f in sorted(card, key=lambda f: ALL_FORMS.index(f) if f in ALL_FORMS else len(ALL_FORMS))
    }
