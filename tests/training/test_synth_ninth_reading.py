"""The ninth reading's false clue (tests/data/audit/sailorfog-20707d3.jsonl): Albania "founded in the early 1190s",
read from the first row of its infobox's establishment history (the Principality of Arbanon), on the real page."""

from __future__ import annotations

from training.synth.extract.facts import facts_from_fields


def test_a_predecessor_states_date_is_no_founding(src):
    albania = src.entity("Albania")
    assert albania.infobox["established_event1"] == "Principality of Arbanon"  # the history is there
    # every row names a polity or an occupation but the fifth, "Proclamation of independence from the Ottoman Empire"
    assert [(d.attr, d.year) for d in albania.dates if d.attr.startswith("established")] == [
        ("established_date5", 1912)
    ]
    assert ("independence", 1912) in [(d.attr, d.year) for d in albania.dates]  # the lead's own dates stay
    afghanistan = src.entity("Afghanistan")  # "First Afghan state", April 1709: the page's own first state
    assert afghanistan.infobox["established_event1"] == "First Afghan state"
    assert ("established_date1", 1709) in [(d.attr, d.year) for d in afghanistan.dates]


def test_only_rows_naming_a_polity_leave():
    rows = {
        "established_event1": "Kingdom of Example",
        "established_date1": "1190",
        "established_event2": "Independence from the Kingdom of Example",
        "established_date2": "4 July 1776",
    }
    dates, _ = facts_from_fields("", "", rows)
    assert [(d.attr, d.year) for d in dates] == [("established_date2", 1776)]
