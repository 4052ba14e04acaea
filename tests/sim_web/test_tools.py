"""Tool schemas, the Tongyi system prompt, and the Toolbox end to end over small real backends."""

from __future__ import annotations

import json

import pytest
from transformers.utils import get_json_schema

from sim_web.executor import ExecutorConfig, ToolExecutor
from sim_web.protocol.actions import TOOL_NAMES, parse_action
from sim_web.protocol.errors import ActionError, BackendError
from sim_web.protocol.formatting import format_tool_response
from sim_web.protocol.results import ScholarResult, SearchResult, VisitResult
from sim_web.tools import Toolbox, ToolMethods, system_prompt, tool_schema
from simweb_core.errors import ConfigError

# Upstream's inference/prompt.py SYSTEM_PROMPT with the parse_file line removed (we do not offer
# that tool), followed by react_agent.py's date suffix.
UPSTREAM_PROMPT = """You are a deep research assistant. Your core function is to conduct thorough, multi-source investigations into any topic. You must handle both broad, open-domain inquiries and queries within specialized academic fields. For every request, synthesize information from credible, diverse sources to deliver a comprehensive, accurate, and objective response. When you have gathered sufficient information and are ready to provide the definitive response, you must enclose the entire final answer within <answer></answer> tags.

# Tools

You may call one or more functions to assist with the user query.

You are provided with function signatures within <tools></tools> XML tags:
<tools>
{"type": "function", "function": {"name": "search", "description": "Perform Google web searches then returns a string of the top search results. Accepts multiple queries.", "parameters": {"type": "object", "properties": {"query": {"type": "array", "items": {"type": "string", "description": "The search query."}, "minItems": 1, "description": "The list of search queries."}}, "required": ["query"]}}}
{"type": "function", "function": {"name": "visit", "description": "Visit webpage(s) and return the summary of the content.", "parameters": {"type": "object", "properties": {"url": {"type": "array", "items": {"type": "string"}, "description": "The URL(s) of the webpage(s) to visit. Can be a single URL or an array of URLs."}, "goal": {"type": "string", "description": "The specific information goal for visiting webpage(s)."}}, "required": ["url", "goal"]}}}
{"type": "function", "function": {"name": "PythonInterpreter", "description": "Executes Python code in a sandboxed environment. To use this tool, you must follow this format:
1. The 'arguments' JSON object must be empty: {}.
2. The Python code to be executed must be placed immediately after the JSON block, enclosed within <code> and </code> tags.

IMPORTANT: Any output you want to see MUST be printed to standard output using the print() function.

Example of a correct call:
<tool_call>
{"name": "PythonInterpreter", "arguments": {}}
<code>
import numpy as np
# Your code here
print(f"The result is: {np.mean([1,2,3])}")
</code>
</tool_call>", "parameters": {"type": "object", "properties": {}, "required": []}}}
{"type": "function", "function": {"name": "google_scholar", "description": "Leverage Google Scholar to retrieve relevant information from academic publications. Accepts multiple queries. This tool will also return results from google search", "parameters": {"type": "object", "properties": {"query": {"type": "array", "items": {"type": "string", "description": "The search query."}, "minItems": 1, "description": "The list of search queries for Google Scholar."}}, "required": ["query"]}}}
</tools>

For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:
<tool_call>
{"name": <function-name>, "arguments": <args-json-object>}
</tool_call>

Current date: 2025-01-01"""


class Wiki:
    """A tiny deterministic backend: two pages, search by title word."""

    name = "wiki"
    pages = {"Paris": "Paris is the capital of France.", "Lyon": "Lyon is a city in France."}

    def search(self, query: str, k: int = 10) -> list[SearchResult]:
        hits = [t for t in self.pages if t.lower() in query.lower()]
        return [SearchResult(title=t, link=f"https://en.wikipedia.org/wiki/{t}", snippet=self.pages[t]) for t in hits][
            :k
        ]

    def scholar(self, query: str, k: int = 10) -> list[ScholarResult]:
        return [
            ScholarResult(title=r.title, link=r.link, publication_info="Wikipedia", snippet=r.snippet)
            for r in self.search(query, k)
        ]

    def visit(self, url: str, goal: str) -> VisitResult:
        title = url.rsplit("/", 1)[-1]
        if title not in self.pages:
            return VisitResult(url=url, goal=goal, ok=False)
        return VisitResult(url=url, goal=goal, ok=True, evidence=self.pages[title], summary=f"{title}: {goal}")


class Down:
    """An outage: scholar and visit always fail, search fails for queries that mention Lyon."""

    name = "down"

    def search(self, query: str, k: int = 10) -> list[SearchResult]:
        if "Lyon" in query:
            raise BackendError("serper answered 503", retryable=False)
        return Wiki().search(query, k)

    def scholar(self, query: str, k: int = 10) -> list[ScholarResult]:
        raise BackendError("serper answered 503", retryable=False)

    def visit(self, url: str, goal: str) -> VisitResult:
        raise BackendError("jina answered 503", retryable=False)


def box(backend: object = None, **kw: object) -> Toolbox:
    ex = ToolExecutor([backend or Wiki()], ExecutorConfig(timeout_s=None, max_retries=0))
    return Toolbox(ex, python_runner=lambda code: f"stdout:\n{len(code)}\n", **kw)  # type: ignore[arg-type]


def run(tb: Toolbox, text: str) -> str:
    return tb.call(parse_action(text))


def test_system_prompt_matches_upstream_byte_for_byte() -> None:
    assert system_prompt(box().schemas(), "2025-01-01") == UPSTREAM_PROMPT


def test_prompt_subset_keeps_upstream_order_and_is_deterministic() -> None:
    tb = box(enabled=("google_scholar", "search"))
    prompt = system_prompt(tb.schemas(), "2024-02-29")
    assert tb.enabled == ("search", "google_scholar")
    assert prompt.index('"name": "search"') < prompt.index('"name": "google_scholar"')
    assert "PythonInterpreter" not in prompt and '"name": "visit"' not in prompt
    assert prompt.endswith("Current date: 2024-02-29") and prompt == system_prompt(tb.schemas(), "2024-02-29")
    for bad in ("2025-1-1", "01/01/2025", "2025-02-30", ""):
        with pytest.raises(ConfigError, match="YYYY-MM-DD"):
            system_prompt(tb.schemas(), bad)


CALL_FORMAT = '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'


@pytest.mark.parametrize("enabled", [("search", "visit"), TOOL_NAMES, ("google_scholar",)])
def test_compact_prompt_keeps_the_format_and_lists_exactly_the_enabled_tools(enabled: tuple[str, ...]) -> None:
    tb = box(enabled=enabled)
    prompt = system_prompt(tb.schemas(), "2024-02-29", style="compact")
    assert CALL_FORMAT in prompt and CALL_FORMAT in UPSTREAM_PROMPT  # the same tool-call line as upstream's
    assert "<think></think>" in prompt and "<answer>" in prompt and prompt.endswith("\n\nCurrent date: 2024-02-29")
    lines = prompt.split("Tools:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert [line.split(" ", 1)[0] for line in lines] == list(tb.enabled)
    if "search" in enabled:
        assert 'search {"query": ["..."]}: web search' in lines
    if "visit" in enabled:
        assert any(line.startswith('visit {"url": ["..."], "goal": "..."}: ') for line in lines)
    assert system_prompt(tb.schemas(), "2024-02-29") != prompt  # the default stays upstream's


def test_compact_prompt_is_short() -> None:
    # 144 SmolLM2 tokens (475 characters) for search + visit, vs 450 for the Tongyi prompt (test_compact_prompt_tokens)
    assert len(system_prompt(box(enabled=("search", "visit")).schemas(), "2025-01-01", style="compact")) <= 600
    assert len(system_prompt(box().schemas(), "2025-01-01", style="compact")) <= 800


def test_unknown_prompt_style() -> None:
    with pytest.raises(ConfigError, match=r"style must be one of \('tongyi', 'compact'\), got 'tiny'"):
        system_prompt(box().schemas(), "2025-01-01", style="tiny")


@pytest.mark.slow
def test_compact_prompt_tokens() -> None:
    """The compact prompt for search + visit fits in 200 SmolLM2 tokens (the tokenizer from the bundled GGUF)."""
    from transformers import AutoTokenizer

    from agents.models import smollm2_gguf

    gguf = smollm2_gguf()
    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    schemas = box(enabled=("search", "visit")).schemas()
    n = {s: len(tok(system_prompt(schemas, "2025-01-01", style=s))["input_ids"]) for s in ("tongyi", "compact")}
    assert n["compact"] <= 200 < n["tongyi"], n


def test_schemas_come_from_the_typed_methods() -> None:
    for tool in ("search", "visit", "google_scholar"):
        generated = get_json_schema(getattr(ToolMethods, tool))["function"]
        ours = tool_schema(tool)["function"]
        assert ours["description"] == generated["description"]
        assert ours["parameters"]["required"] == generated["parameters"]["required"]
        for name, prop in generated["parameters"]["properties"].items():
            assert ours["parameters"]["properties"][name]["type"] == prop["type"]
            assert ours["parameters"]["properties"][name]["description"] == prop["description"]
    py = get_json_schema(ToolMethods.PythonInterpreter)["function"]  # what TRL sees: code as an argument
    assert py["parameters"]["required"] == ["code"]
    assert tool_schema("PythonInterpreter")["function"]["parameters"] == {
        "type": "object",
        "properties": {},
        "required": [],
    }
    assert all("return" not in tool_schema(t)["function"] for t in TOOL_NAMES)
    with pytest.raises(ConfigError, match="unknown tool"):
        tool_schema("browse")


def test_search_end_to_end_exact_text() -> None:
    tb = box()
    out = run(tb, '<tool_call>{"name": "search", "arguments": {"query": ["Paris facts", "nothing here"]}}</tool_call>')
    assert out == (
        "A Google search for 'Paris facts' found 1 results:\n\n## Web Results\n"
        "1. [Paris](https://en.wikipedia.org/wiki/Paris)\n\nParis is the capital of France."
        "\n=======\n"
        "No results found for 'nothing here'. Try with a more general query."
    )
    assert tb.search(query="Paris facts").startswith(
        "A Google search for 'Paris facts' found 1 results"
    )  # a plain string too


def test_scholar_and_visit_end_to_end() -> None:
    tb = box()
    assert run(tb, '<tool_call>{"name": "google_scholar", "arguments": {"query": "Lyon"}}</tool_call>') == (
        "A Google scholar for 'Lyon' found 1 results:\n\n## Scholar Results\n"
        "1. [Lyon](no available link)\npublicationInfo: Wikipedia\n\nLyon is a city in France."
    )
    out = run(
        tb,
        '<tool_call>{"name": "visit", "arguments": {"url": ["https://en.wikipedia.org/wiki/Paris", '
        '"https://en.wikipedia.org/wiki/Atlantis"], "goal": "capital"}}</tool_call>',
    )
    assert out == (
        "The useful information in https://en.wikipedia.org/wiki/Paris for user goal capital as follows: \n\n"
        "Evidence in page: \nParis is the capital of France.\n\nSummary: \nParis: capital\n\n"
        "\n=======\n"
        "The useful information in https://en.wikipedia.org/wiki/Atlantis for user goal capital as follows: \n\n"
        "Evidence in page: \nThe provided webpage content could not be accessed. Please check the URL or file format.\n\n"
        "Summary: \nThe webpage content could not be processed, and therefore, no information is available."
    )


def test_degradation_when_every_backend_fails() -> None:
    tb = box(Down())
    out = run(tb, '<tool_call>{"name": "search", "arguments": {"query": ["Paris", "Lyon"]}}</tool_call>')
    first, second = out.split("\n=======\n")
    assert first.startswith("A Google search for 'Paris' found 1 results")  # the query that worked is kept
    assert second == "Google search Timeout, return None, Please try again later."
    assert run(tb, '<tool_call>{"name": "google_scholar", "arguments": {"query": ["x"]}}</tool_call>') == (
        "Google Scholar Timeout, return None, Please try again later."
    )
    assert "could not be accessed" in run(
        tb, '<tool_call>{"name": "visit", "arguments": {"url": "https://a/Paris", "goal": "g"}}</tool_call>'
    )
    assert tb.executor.stats.snapshot()["failures"] == 3


def test_python_runner_and_its_failures() -> None:
    tb = box()
    assert (
        run(tb, '<tool_call>{"name": "PythonInterpreter", "arguments": {}}\n<code>\nprint(1)\n</code>\n</tool_call>')
        == "stdout:\n8\n"
    )
    assert tb.PythonInterpreter(code="x=1") == "stdout:\n3\n"

    def broken(code: str) -> str:
        raise RuntimeError("sandbox crashed")

    tb2 = Toolbox(tb.executor, python_runner=broken)
    assert tb2.PythonInterpreter(code="print(1)") == "[Python Interpreter Error]: RuntimeError: sandbox crashed"
    with pytest.raises(ActionError) as e:
        tb.PythonInterpreter(code="  ")
    assert e.value.kind == "missing_argument"


def test_agent_mistakes_reach_the_caller_as_action_errors() -> None:
    tb = box(enabled=("search",))
    with pytest.raises(ActionError) as e:
        run(tb, '<tool_call>{"name": "visit", "arguments": {"url": ["u"], "goal": "g"}}</tool_call>')
    assert e.value.kind == "unknown_tool" and "Available tools: search" in str(e.value)
    with pytest.raises(ActionError) as e:
        run(tb, '<tool_call>{"name": "search", "arguments": {"q": "Paris"}}</tool_call>')
    assert e.value.kind == "missing_argument"
    with pytest.raises(ActionError) as e:
        run(box(max_items=2), '<tool_call>{"name": "search", "arguments": {"query": ["a", "b", "c"]}}</tool_call>')
    assert e.value.kind == "bad_argument"


def test_long_responses_are_truncated_with_a_marker() -> None:
    tb = box(max_chars=150)
    out = run(tb, '<tool_call>{"name": "search", "arguments": {"query": ["Paris", "Lyon", "Paris Lyon"]}}</tool_call>')
    assert len(out) <= 150 and "characters truncated ...]" in out


def test_multiple_calls_become_separate_response_blocks() -> None:
    tb = box()
    act = parse_action(
        '<tool_call>{"name": "search", "arguments": {"query": ["Paris"]}}</tool_call>'
        '<tool_call>{"name": "PythonInterpreter", "arguments": {}}<code>1</code></tool_call>',
        allow_multiple=True,
    )
    wrapped = format_tool_response(tb.call(act))
    blocks = wrapped.split("\n</tool_response>\n<tool_response>\n")
    assert len(blocks) == 2 and blocks[0].startswith("<tool_response>\nA Google search for 'Paris'")
    assert blocks[1] == "stdout:\n1\n\n</tool_response>"


def test_toolbox_config_errors() -> None:
    ex = ToolExecutor([Wiki()], ExecutorConfig())
    with pytest.raises(ConfigError, match="non-empty subset"):
        Toolbox(ex, enabled=("browse",))
    with pytest.raises(ConfigError, match="max_chars >= 100"):
        Toolbox(ex, max_chars=10)
    assert json.loads(json.dumps(Toolbox(ex).schemas()))  # JSON-ready for the HTTP server's /tools


@pytest.mark.needs_sandbox
def test_default_python_runner_is_the_sandbox() -> None:
    tb = Toolbox(ToolExecutor([Wiki()], ExecutorConfig()))  # no runner given: sim_web.tools.python.sandbox.run_python
    act = parse_action(
        '<tool_call>\n{"name": "PythonInterpreter", "arguments": {}}\n<code>\nprint(sum(range(101)))\n</code>\n</tool_call>'
    )
    assert tb.call(act) == "stdout:\n5050\n"


def test_cached_snippets_match_the_uncached_ranking_bit_for_bit(sample_index) -> None:
    from sim_web.backends import extract
    from wiki_index.parse.text import split_sentences
    from wiki_index.search.index import WikiIndex

    def reference(text: str, query: str) -> int:  # the best sentence, as snippet chose it before the cache
        sents = split_sentences(text) or [text]
        scores = extract.bm25_rank(query, sents)
        return max(range(len(sents)), key=lambda i: (scores[i], -i))

    store = WikiIndex.from_dir(sample_index).store
    passages = next(store.iter_passages(batch=60))
    for p in passages:
        for query in (p.title, " ".join(p.text.split()[5:9]), "unrelated words entirely"):
            first = extract.snippet(p.text, query)
            assert extract.snippet(p.text, query) == first  # a cache hit gives the same text
            sents = extract._sentence_terms(p.text).sents
            assert first.startswith(sents[reference(p.text, query)][:200].rsplit(" ", 1)[0])
    assert extract._sentence_terms.cache_info().hits > 0
