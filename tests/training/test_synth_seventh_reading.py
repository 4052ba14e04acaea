"""The failures of the seventh reading (tests/data/audit/sailorfog-ad7e397.jsonl), on real sample pages."""

from __future__ import annotations


def test_people_a_programme_employed_are_no_population(src):
    # the Manhattan Project "employed nearly 130,000 people at its peak": it was asked as "whose population is in the
    # hundreds of thousands of people"
    numbers = {n.text: n.attr for n in src.entity("Manhattan Project").numbers}
    assert numbers["130,000 people"] == "employees"
    assert "population" in {n.attr for n in src.entity("Rwanda").numbers}  # a country's people stay its population
