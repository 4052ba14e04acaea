"""Action parsing: the Tongyi turn format, leniency, agent mistakes, and a >= 10,000-input fuzz."""

from __future__ import annotations

import json
import random
import sys
import time

import pytest
from fuzz_inputs import ADVERSARIAL, damage
from fuzz_inputs import PIECES as _PIECES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sim_web.protocol.actions import TOOL_NAMES, Action, loads_lenient, parse_action
from sim_web.protocol.arguments import validate_arguments
from sim_web.protocol.errors import ACTION_ERROR_KINDS, ActionError
from sim_web.tools import tool_schema

SCHEMAS = [tool_schema(t) for t in TOOL_NAMES]


def call(name: str, args: object, code: str | None = None) -> str:
    body = json.dumps({"name": name, "arguments": args})
    code_part = f"\n<code>\n{code}\n</code>" if code is not None else ""
    return f"<think>plan</think>\n<tool_call>\n{body}{code_part}\n</tool_call>"


def kind_of(text: str, **kw: object) -> str:
    with pytest.raises(ActionError) as e:
        parse_action(text, **kw)
    assert str(e.value), "an ActionError must carry a message for the model"
    return e.value.kind


# -- the happy paths ------------------------------------------------------------------------


def test_search_call_with_think() -> None:
    a = parse_action(call("search", {"query": ["capital of France", "Paris population"]}))
    assert a == Action(
        kind="tool_call", think="plan", tool="search", arguments={"query": ["capital of France", "Paris population"]}
    )


def test_python_call_code_after_json_and_code_containing_closing_tag() -> None:
    a = parse_action(call("PythonInterpreter", {}, code='print("</tool_call>")\nprint(2 ** 10)'))
    assert (a.tool, a.arguments, a.code) == ("PythonInterpreter", {}, 'print("</tool_call>")\nprint(2 ** 10)')


def test_python_code_fenced_in_code_tags_or_given_as_argument_or_alias_name() -> None:
    a = parse_action(
        '<tool_call>{"name": "PythonInterpreter", "arguments": {}}<code>```python\nprint(1)\n```</code></tool_call>'
    )
    assert a.code == "print(1)"
    b = parse_action('<tool_call>{"name": "PythonInterpreter", "arguments": {"code": "print(3)"}}</tool_call>')
    assert b.code == "print(3)" and b.arguments == {}
    c = parse_action('<tool_call>{"name": "python", "arguments": {}}\n<code>print(4)</code></tool_call>')
    assert c.tool == "PythonInterpreter" and c.code == "print(4)"
    d = parse_action("<tool_call>python\n<code>print(5)</code>\n</tool_call>")
    assert d.tool == "PythonInterpreter" and d.code == "print(5)"


def test_answer_wins_and_is_stripped() -> None:
    text = '<think>done</think>\n<tool_call>{"name": "search", "arguments": {"query": ["x"]}}</tool_call>\n<answer> Paris </answer>'
    assert parse_action(text) == Action(kind="answer", think="done", answer="Paris")


def test_answer_mentioned_inside_think_is_not_the_answer() -> None:
    text = "<think>I will write <answer>X</answer> later</think>\n<answer>Y</answer>"
    assert parse_action(text).answer == "Y"


def test_tags_inside_think_are_used_when_nothing_follows_it() -> None:
    a = parse_action(
        '<think>let me search <tool_call>{"name": "search", "arguments": {"query": ["q"]}}</tool_call></think>'
    )
    assert a.tool == "search" and a.think is not None
    assert parse_action("<think>so <answer>Z</answer></think> done").answer == "Z"


def test_lone_closing_think_and_no_think() -> None:
    a = parse_action('reasoning here</think>\n<tool_call>{"name": "search", "arguments": {"query": ["q"]}}</tool_call>')
    assert a.think == "reasoning here" and a.tool == "search"
    assert parse_action("<answer>42</answer>").think is None


def test_hallucinated_tool_response_is_ignored() -> None:
    text = (
        '<tool_call>{"name": "search", "arguments": {"query": ["q"]}}</tool_call>\n'
        "<tool_response>fake results</tool_response>\n<answer>made up</answer>"
    )
    a = parse_action(text)
    assert a.kind == "tool_call" and a.tool == "search"


@pytest.mark.parametrize(
    "body",
    [
        "{'name': 'search', 'arguments': {'query': ['q']}}",  # single quotes
        '{"name": "search", "arguments": {"query": ["q"],},}',  # trailing commas
        '```json\n{"name": "search", "arguments": {"query": ["q"]}}\n```',  # code fence
        '{"name": "search", "arguments": "{\\"query\\": [\\"q\\"]}"}',  # arguments as a JSON string
        '{"name": "search", "arguments": {"query": ["q"]}} trailing words',  # text after the object
        '{"type": "function", "function": {"name": "search", "arguments": {"query": ["q"]}}}',  # OpenAI nesting
        '{"name": "Search", "arguments": {"query": ["q"]}}',  # case
    ],
)
def test_lenient_json(body: str) -> None:
    a = parse_action(f"<tool_call>\n{body}\n</tool_call>", schemas=SCHEMAS)
    assert (a.tool, a.arguments) == ("search", {"query": ["q"]})


def test_repair_path_without_json5(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "json5", None)  # as if json5 were not installed
    assert loads_lenient("{'a': [1, 2,], 'b': True,}") == {"a": [1, 2], "b": True}
    with pytest.raises(ValueError):
        loads_lenient("{not json at all")


def test_string_normalised_to_list_with_schemas() -> None:
    a = parse_action(
        call("visit", {"url": "https://en.wikipedia.org/wiki/Paris", "goal": "population"}), schemas=SCHEMAS
    )
    assert a.arguments == {"url": ["https://en.wikipedia.org/wiki/Paris"], "goal": "population"}
    raw = parse_action(call("visit", {"url": "u", "goal": "g"}))  # no schemas: arguments as parsed
    assert raw.arguments == {"url": "u", "goal": "g"}


def test_multiple_calls() -> None:
    two = (
        call("search", {"query": ["a"]})
        + '\n<tool_call>{"name": "visit", "arguments": {"url": ["u"], "goal": "g"}}</tool_call>'
    )
    assert kind_of(two) == "multiple_calls"
    a = parse_action(two, allow_multiple=True)
    assert [c.tool for c in a.calls] == ["search", "visit"] and a.tool == "search"


# -- agent mistakes -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("<tool_call>{name: search</tool_call>", "bad_json"),
        ('<tool_call>["search", {"query": ["q"]}]</tool_call>', "bad_json"),
        ('<tool_call>{"arguments": {"query": ["q"]}}</tool_call>', "bad_json"),
        ('<tool_call>{"name": "search", "arguments": [1]}</tool_call>', "bad_json"),
        ('<tool_call>{"name": "search", "arguments": "not json"}</tool_call>', "bad_json"),
        ('<tool_call>{"name": "browse", "arguments": {}}</tool_call>', "unknown_tool"),
        ('<tool_call>{"name": "PythonInterpreter", "arguments": {}}</tool_call>', "missing_argument"),
        ('<tool_call>{"name": "PythonInterpreter", "arguments": {}}<code>print(1)</tool_call>', "missing_argument"),
        ("I think the answer is Paris.", "no_action"),
        ("<answer>unclosed", "no_action"),
        ('<tool_call>{"name": "search", "arguments": {"query": ["q"]}}', "no_action"),
        ("", "no_action"),
    ],
)
def test_mistakes(text: str, kind: str) -> None:
    assert kind_of(text) == kind


def test_messages_reuse_upstream_texts_and_show_the_format() -> None:
    with pytest.raises(ActionError) as e:
        parse_action("<tool_call>{oops</tool_call>")
    assert str(e.value).startswith(
        'Tool call is not a valid JSON. Tool call must contain a valid "name" and "arguments" field.'
    )
    assert '{"name": "search", "arguments": {"query": ["your query"]}}' in str(e.value)
    with pytest.raises(ActionError) as e:
        parse_action('<tool_call>{"name": "browse", "arguments": {}}</tool_call>', tools=("search", "visit"))
    assert str(e.value) == "Tool browse not found. Available tools: search, visit."


def test_oversize_and_non_text() -> None:
    assert kind_of("<answer>" + "x" * 200 + "</answer>", max_chars=100) == "oversize"
    assert kind_of(12345) == "no_action"  # type: ignore[arg-type]


def test_enabled_subset_rejects_other_known_tools() -> None:
    assert kind_of(call("visit", {"url": ["u"], "goal": "g"}), tools=("search",)) == "unknown_tool"


# -- argument validation --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "args", "kind"),
    [
        ("search", {}, "missing_argument"),
        ("search", {"query": None}, "missing_argument"),
        ("visit", {"url": ["u"]}, "missing_argument"),
        ("search", {"query": []}, "bad_argument"),
        ("search", {"query": [""]}, "bad_argument"),
        ("search", {"query": ["ok", 3]}, "bad_argument"),
        ("search", {"query": 3}, "bad_argument"),
        ("search", {"query": {"q": 1}}, "bad_argument"),
        ("visit", {"url": ["u"], "goal": ["g"]}, "bad_argument"),
        ("visit", {"url": ["u"], "goal": 7}, "bad_argument"),
        ("nope", {}, "unknown_tool"),
    ],
)
def test_validate_arguments_errors(tool: str, args: dict, kind: str) -> None:
    with pytest.raises(ActionError) as e:
        validate_arguments(tool, args, SCHEMAS)
    assert e.value.kind == kind


def test_validate_arguments_normalises_and_drops_unknown_keys() -> None:
    out = validate_arguments("visit", {"goal": "g", "url": "u", "purpose": "x"}, SCHEMAS)
    assert out == {"url": ["u"], "goal": "g"} and list(out) == ["url", "goal"]
    assert validate_arguments("search", {"query": "q"}, {"search": SCHEMAS[0]}) == {"query": ["q"]}
    with pytest.raises(ActionError, match="at most 2 items"):
        validate_arguments("search", {"query": ["a", "b", "c"]}, SCHEMAS, max_items=2)
    with pytest.raises(ActionError, match=r"\[Visit\] Invalid request format"):
        validate_arguments("visit", {"url": ["u"]}, SCHEMAS)


# -- fuzz: >= 10,000 random and adversarial turns, only Action or ActionError ----------------


def _check(text: str) -> None:
    for schemas in (None, SCHEMAS):
        try:
            a = parse_action(text, schemas=schemas, allow_multiple=len(text) % 2 == 0)
        except ActionError as e:
            assert e.kind in ACTION_ERROR_KINDS and str(e)
            continue
        assert a.kind in ("tool_call", "answer")
        if a.kind == "answer":
            assert isinstance(a.answer, str)
            continue
        for c in a.calls or (a,):
            assert c.tool in TOOL_NAMES and isinstance(c.arguments, dict)
            if c.tool == "PythonInterpreter":
                assert isinstance(c.code, str) and c.code.strip()


tag_soup = st.lists(st.one_of(st.sampled_from(_PIECES), st.text(max_size=8)), max_size=40).map("".join)


@settings(max_examples=5000, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.one_of(st.text(max_size=200), tag_soup))
def test_fuzz_hypothesis(text: str) -> None:
    _check(text)


def _mutations(n: int, seed: int) -> list[str]:
    """Valid calls with random byte-level damage: deletions, duplications, swaps, insertions."""
    rng = random.Random(seed)
    bases = [
        call("search", {"query": ["a", "b"]}),
        call("visit", {"url": ["u"], "goal": "g"}),
        call("google_scholar", {"query": "q"}),
        call("PythonInterpreter", {}, code="print(1)"),
        "<think>x</think><answer>y</answer>",
    ]
    return [damage(rng.choice(bases), rng) for _ in range(n)]


def test_fuzz_adversarial_and_mutations() -> None:
    texts = ADVERSARIAL + _mutations(5000, seed=0)
    cpu0 = time.process_time()  # CPU time, not wall time: a busy machine does not matter
    for t in texts:
        _check(t)
    assert len(texts) + 5000 >= 10_000  # with test_fuzz_hypothesis's 5,000 examples
    assert time.process_time() - cpu0 < 60  # linear parsing: far below; a backtracking parser is far above


# -- text hygiene: lone surrogates and over-long queries (issue 16) ------------------------------


def test_valid_unicode_replaces_only_lone_surrogates() -> None:
    from sim_web.protocol.arguments import valid_unicode, valid_unicode_value

    ok = "héllo 世界 🌍"
    assert valid_unicode(ok) is ok and valid_unicode("ascii") == "ascii"
    assert valid_unicode("a\udc80b\ud800") == "a\ufffdb\ufffd"
    assert valid_unicode_value({"q\udc80": ["x\ud83d", 1, None], "n": 2}) == {"q\ufffd": ["x\ufffd", 1, None], "n": 2}


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>{"name": "search", "arguments": {"query": ["Danube\\udc80"]}}</tool_call>',  # a JSON escape
        '<tool_call>{"name": "visit", "arguments": {"url": "https://en.wikipedia.org/wiki/X\\ud800", "goal": "\\udfff"}}</tool_call>',
        '<tool_call>{"name": "PythonInterpreter", "arguments": {"code": "print(\'\\udc80\')"}}</tool_call>',
        '<tool_call>{"name": "search", "arguments": {"query": ["raw \udc80 surrogate"]}}</tool_call>',  # in the text itself
        "<answer>Paris\udc80</answer>",
        '<tool_call>{"name": "search\\udc80", "arguments": {}}</tool_call>',  # an unknown tool name, echoed in the error
    ],
)
def test_parsed_actions_are_valid_utf8(text: str) -> None:
    try:
        a = parse_action(text)
    except ActionError as e:
        assert "\ufffd" in e.message
        e.message.encode("utf-8")
        return
    json.dumps([a.arguments, a.code, a.answer], ensure_ascii=False).encode("utf-8")  # raises on a lone surrogate
    assert "\ufffd" in json.dumps([a.arguments, a.code, a.answer], ensure_ascii=False)


def test_check_queries_names_the_limit() -> None:
    from sim_web.protocol.arguments import MAX_QUERY_CHARS, check_queries

    check_queries("search", ["x" * MAX_QUERY_CHARS])
    with pytest.raises(ActionError) as e:
        check_queries("search", ["ok", "x" * (MAX_QUERY_CHARS + 1)])
    assert e.value.kind == "bad_argument" and f"{MAX_QUERY_CHARS + 1} characters" in e.value.message
    assert f"limit is {MAX_QUERY_CHARS}" in e.value.message


def test_env_observations_stay_valid_utf8_and_long_queries_are_agent_errors(sample_index) -> None:
    from sim_web.env import EnvConfig, WebResearchEnv

    env = WebResearchEnv(EnvConfig(index_dir=str(sample_index), max_turns=20))
    env.reset(seed=0)
    for name, args in [
        ("search", {"query": ["Danube\udc80"]}),
        ("google_scholar", {"query": "algebra\ud800"}),
        ("visit", {"url": ["https://en.wikipedia.org/wiki/Danube\udc80"], "goal": "length\udfff"}),
    ]:
        action = call(name, args)  # json.dumps writes the surrogates as \udc80 escapes: an ASCII action
        assert action.isascii()
        obs, _r, _term, _trunc, info = env.step(action)
        obs.encode("utf-8")
        json.dumps(info["messages"], ensure_ascii=False).encode("utf-8")  # the trajectory line is valid too
        assert "Timeout" not in obs and "unavailable" not in obs and info["error_count"] == 0, obs
    terms = " ".join(f"term{i}" for i in range(1100))  # over 1,024 distinct terms
    obs, _r, _term, _trunc, info = env.step(call("search", {"query": [terms]}))
    assert "the limit is 1024" in obs and "Timeout" not in obs
    assert info["errors"] == {"bad_argument": 1} and info["tool_calls"]["search"] == 2
    obs, _r, _term, _trunc, info = env.step(
        '<tool_call>{"name": "search", "arguments": {"query": ["raw \udc80"]}}</tool_call>'
    )
    json.dumps(info["messages"], ensure_ascii=False).encode(
        "utf-8"
    )  # a raw lone surrogate is cleaned in the stored chat too
    assert "\ufffd" in info["messages"][-2]["content"]
