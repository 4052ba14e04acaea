"""``rule:script``: it reads every tier form's shape, takes the searches the tier needs and answers from the results."""

from __future__ import annotations

import json

import pytest

from agents.policies.scripts import (
    ScriptPolicy,
    bridge_parts,
    intersection_queries,
    intersection_searches,
    read_bridge,
    results,
    second_query,
)
from agents.prompts import FORCE_ANSWER_PROMPT


def _reply(*blocks: list[tuple[str, str]]) -> str:
    out = []
    for hits in blocks:
        items = "\n\n".join(
            f"{i}. [{t}](https://en.wikipedia.org/wiki/{t.replace(' ', '_')})\n\n{s}"
            for i, (t, s) in enumerate(hits, 1)
        )
        out.append(f"A Google search for 'q' found {len(hits)} results:\n\n## Web Results\n{items}")
    return "<tool_response>\n" + "\n=======\n".join(out) + "\n</tool_response>"


def _calls(text: str) -> list[str]:
    return json.loads(text.split("<tool_call>")[1].split("</tool_call>")[0])["arguments"]["query"]


@pytest.mark.parametrize(
    ("question", "clue"),
    [
        (
            "Kabul is the capital of a country. Which city is the largest city in that country?",
            "Kabul is the capital of a country.",
        ),
        (
            "Which city is the largest city in the following country? Kabul is the capital of that country.",
            "Kabul is the capital of that country.",
        ),
        ("Which city is the largest city in the country that Kabul is the capital of?", "Kabul is the capital of"),
        (
            "Given that Kabul is the capital of a country, which city is the largest city in that country?",
            "Kabul is the capital of a country",
        ),
        ("The country that Kabul is the capital of is a country in which subregion?", "Kabul is the capital of"),
        (
            "Which city is the largest city in the country (Kabul is the capital of that country)?",
            "Kabul is the capital of that country",
        ),
    ],
)
def test_bridge_parts_find_the_clue_in_every_form(question, clue):
    assert bridge_parts(question)[0] == clue


def test_one_fact_questions_are_not_bridges():
    for q in (
        "Bucharest is the capital of which country?",
        "What is the country that Bucharest is the capital of?",
        "Bucharest is the capital of a country. Which country is it?",
    ):
        assert bridge_parts(q) is None


def test_the_bridge_is_read_after_the_relations_words_and_named_in_the_second_search():
    hits = [
        ("Kabul", "Kabul is the capital and largest city of Afghanistan, located in the east."),
        ("Kabul River", "A river."),
    ]
    assert read_bridge("Kabul is the capital of a country.", hits, "Kabul is the capital of a country. Q?") == (
        "Afghanistan"
    )
    assert second_query("Which city is the largest city in that country?", "Afghanistan") == (
        "Which city is the largest city in Afghanistan?"
    )
    assert second_query("Which city is the largest city in the country described next?", "Afghanistan") == (
        "Which city is the largest city in Afghanistan?"
    )
    assert second_query("which city is the largest city in that country?", "Afghanistan") == (
        "which city is the largest city in Afghanistan?"
    )
    assert second_query(
        "Which city is the largest city in the country that Kabul is the capital of?", "Afghanistan"
    ) == ("Which city is the largest city in Afghanistan?")


def test_the_script_plays_a_bridge_episode_and_an_intersection_episode():
    policy = ScriptPolicy()
    q = "Which city is the largest city in the following country? Kabul is the capital of that country."
    chat = [{"role": "system", "content": "s"}, {"role": "user", "content": q}]
    first = policy.generate([chat])[0].text
    assert _calls(first) == ["Kabul is the capital of a country."]
    chat += [
        {"role": "assistant", "content": first},
        {"role": "user", "content": _reply([("Kabul", "Kabul is the capital of Afghanistan.")])},
    ]
    second = policy.generate([chat])[0].text
    assert _calls(second) == ["Which city is the largest city in Afghanistan?"]
    chat += [
        {"role": "assistant", "content": second},
        {"role": "user", "content": _reply([("Afghanistan", "A country."), ("Kabul", "x"), ("Herat", "y")])},
    ]
    assert policy.generate([chat])[0].text.endswith("<answer>Herat</answer>")  # neither the bridge nor named

    q = "Which country borders Laos and Myanmar, and lies in Southeast Asia?"
    assert intersection_queries(q) == [
        "country bordering Laos",
        "country bordering Myanmar",
        "country in Southeast Asia",
    ]
    assert intersection_searches(q) == [
        "country borders Laos and Myanmar, and lies in Southeast Asia",
        *intersection_queries(q),
    ]
    chat = [{"role": "system", "content": "s"}, {"role": "user", "content": q}]
    blocks = [
        [("Cambodia", "Cambodia lies in Southeast Asia"), ("Myanmar", "")],
        [("Vietnam", ""), ("Cambodia", "")],
        [("Thailand", ""), ("China", "Cambodia and China")],
        [("Laos", "Laos and Thailand")],
    ]
    for query, block in zip(intersection_searches(q), blocks):  # all clues together, then one call per clue
        call = policy.generate([chat])[0].text
        assert _calls(call) == [query]
        chat += [{"role": "assistant", "content": call}, {"role": "user", "content": _reply(block)}]
    assert len(results(_reply(*blocks))) == 4
    # Cambodia: shown by three searches (Thailand by two); Laos and Myanmar are named in the question
    assert policy.generate([chat])[0].text.endswith("<answer>Cambodia</answer>")
    # a turn cap's forced answer replaces the last search's results: it answers from the searches it saw
    forced = chat[:-1] + [{"role": "user", "content": FORCE_ANSWER_PROMPT}]
    assert policy.generate([forced])[0].text.endswith("<answer>Cambodia</answer>")
    blocks[2] = [("Thailand", ""), ("China", "")]
    chat = chat[:6] + [{"role": "user", "content": _reply(blocks[2])}] + chat[7:]
    assert policy.generate([chat])[0].text.endswith("<answer>Thailand</answer>")  # 2 each: the better summed rank
