"""The quotes of ``oracle:quote``'s thoughts: the result words that state the fact a search was for."""

from __future__ import annotations

import pytest

from agents.policies.quotes import answer_thought, fact_quote, step_thought

_BLOCK = """<tool_response>
A Google search for 'Which city is the capital of Cuba?' found 3 results:

## Web Results
1. [Cuba](https://en.wikipedia.org/wiki/Cuba)

Its capital and largest city is Havana.

2. [Havana](https://en.wikipedia.org/wiki/Havana)

Havana is the capital and largest city of Cuba. The heart of La Habana Province, Havana is the country's main ...

3. [Haiti](https://en.wikipedia.org/wiki/Haiti)

The capital and largest city is Port-au-Prince.
</tool_response>"""


def _page(title: str):
    return lambda url: url.endswith("/" + title)


def test_the_entity_page_gives_its_words_closest_to_the_query():
    quote = fact_quote(_BLOCK, ["Havana"], "the heart of La Habana Province", _page("Havana"))
    assert quote == 'Havana: "The heart of La Habana Province"'


def test_a_snippet_naming_the_entity_gives_the_words_that_end_at_its_name():
    # no result is the entity's page: the words ending at "Havana" in Cuba's snippet state the fact
    assert (
        fact_quote(_BLOCK, ["Havana"], "capital of Cuba", _page("Nowhere"))
        == 'Cuba: "capital and largest city is Havana"'
    )
    # names match whole words in any case, never inside another word
    assert (
        fact_quote(_BLOCK, ["havana"], "capital of Cuba", _page("Nowhere"))
        == 'Cuba: "capital and largest city is Havana"'
    )
    assert fact_quote(_BLOCK, ["Hav"], "capital of Cuba", _page("Nowhere")) is None


def test_the_quote_sharing_most_words_with_the_query_wins_and_a_tie_goes_to_the_higher_result():
    query = "Which city is the capital of Cuba?"
    # Havana's page and Cuba's snippet both share three words with the query (the title counts): Cuba ranks higher
    assert fact_quote(_BLOCK, ["Havana"], query, _page("Havana")) == 'Cuba: "capital and largest city is Havana"'
    shorter = _BLOCK.replace("Its capital and largest city is Havana.", "Its capital is Havana.")
    assert (
        fact_quote(shorter, ["Havana"], query, _page("Havana")) == 'Havana: "capital and largest city of Cuba"'
    )  # "Cuba."


def test_no_quote_when_nothing_states_the_fact():
    assert fact_quote(_BLOCK, ["Havana"], "the founder of judo", _page("Nowhere")) is None  # no content word shared
    assert fact_quote("No results found for 'x'. Try with a more general query.", ["x"], "x", _page("x")) is None
    assert fact_quote(_BLOCK, [""], "capital", _page("Nowhere")) is None  # an empty name matches nothing


def test_a_quote_is_short_has_no_double_quote_and_no_trailing_punctuation():
    block = _BLOCK.replace("Its capital and largest city is Havana.", 'Its "capital" and largest city is Havana.')
    query = "capital city of Cuba"
    assert fact_quote(block, ["Havana"], query, _page("Nowhere"), words=4) == 'Cuba: "largest city is Havana"'
    assert fact_quote(block, ["Havana"], query, _page("Nowhere")) == "Cuba: \"'capital' and largest city is Havana\""


@pytest.mark.parametrize(
    ("thought", "expected"),
    [
        (step_thought(1, 2, 'Milan: "city in Italy"', "Italy"), 'Fact 1 of 2: Milan: "city in Italy", so Italy.'),
        (step_thought(1, 3, None, "Italy"), "Fact 1 of 3: the results show it, so Italy."),
        (
            answer_thought(2, 'Italy: "in Europe"', "Europe"),
            'Fact 2 of 2: Italy: "in Europe", so the answer is Europe.',
        ),
    ],
)
def test_the_thoughts_count_the_facts(thought, expected):
    assert thought == expected


def test_the_oracle_quotes_only_on_top_of_the_plan(tmp_path):
    from agents.policies.oracle import OraclePolicy

    with pytest.raises(ValueError, match="plan_thought=True"):
        OraclePolicy([], read_pages=False, quote_thought=True)
    assert OraclePolicy([], read_pages=False, plan_thought=True, quote_thought=True).name == "oracle:quote"
