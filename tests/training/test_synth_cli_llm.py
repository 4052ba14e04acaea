"""The LLM generator against a local OpenAI-compatible stand-in, and the ``synth`` CLI."""

from __future__ import annotations

import json
import subprocess
import sys

import networkx as nx
import pytest

from training.synth.compose.constraints import parse_clues
from training.synth.compose.llm import LLMConfig, LLMGenerator, parse_reply
from training.synth.compose.templates import generate_question
from training.synth.config import SynthConfig
from training.synth.graph.store_source import StoreSource
from training.synth.pipeline import generate_with_report

SMALL = dict(max_nodes=400, n_seeds=10, oversample=3.0)


def _payload(body: dict) -> dict:
    return json.loads(body["messages"][1]["content"].split("\n", 1)[1])


def test_llm_generator_end_to_end_with_the_stub(sample_index, openai_stub, synth_run):
    openai_stub.reply = lambda body: json.dumps({"question": "Research task: " + _payload(body)["reference_question"]})
    cfg = SynthConfig(
        **SMALL, generator="llm", llm=LLMConfig(base_url=openai_stub.base_url, model="stub-model", api_key="test-key")
    )
    records, rep = generate_with_report(sample_index, n=3, seed=0, config=cfg)
    assert len(records) == 3 and all(r["generator"] == "llm" for r in records)
    assert all(r["question"].startswith("Research task: ") for r in records)
    assert rep.llm["requests"] == len(openai_stub.requests) >= 3
    body = openai_stub.requests[0]
    assert body["model"] == "stub-model" and body["temperature"] == 0 and body["seed"] == 0
    assert body["messages"][0]["role"] == "system" and "never mentions the answer" in body["messages"][0]["content"]
    p = _payload(body)
    assert {"answer_to_hide", "uncertainty_types", "graph", "clues", "keep_verbatim"} <= set(p)
    assert p["graph"]["edges"] and all("relation" in e for e in p["graph"]["edges"])
    assert p["uncertainty_types"] and p["clues"]
    # same record schema as the template generator
    assert set(records[0]) == set(synth_run[0][0])


@pytest.fixture()
def paris_draft(sample_index):
    from wiki_index.search.index import WikiIndex

    src = StoreSource(WikiIndex.from_dir(sample_index).store)
    g = nx.Graph()
    for t in ("Paris", "France", "European Union"):
        g.add_node(t, entity=src.entity(t), description=src.entity(t).description)
    g.add_edge("Paris", "France", source_page="Paris", target_page="France", relation="mention", kind="mention")
    g.add_edge(
        "Paris", "European Union", source_page="Paris", target_page="European Union", relation="mention", kind="mention"
    )
    draft = generate_question(g, "Paris", {}, 2, named_prob=1.0)
    return draft, parse_clues(draft.answer, draft.clues), g


def test_llm_rewrites_are_checked(openai_stub, paris_draft):
    draft, root, g = paris_draft
    gen = LLMGenerator(LLMConfig(base_url=openai_stub.base_url, model="m", max_retries=0))
    good = f'```json\n{{"question": "Think hard: {draft.question}"}}\n```'
    openai_stub.reply = [good, "Is it Paris, the capital of France?", "Which city is famous?", "  "]
    assert gen.rewrite(draft, root, g, []) == f"Think hard: {draft.question}"
    assert gen.rewrite(draft, root, g, []) is None and gen.rejected["leak"] == 1
    assert gen.rewrite(draft, root, g, []) is None and gen.rejected["unfaithful"] == 1  # dropped the names it must keep
    assert gen.rewrite(draft, root, g, []) is None and gen.rejected["empty"] == 1
    openai_stub.fail_next = 1
    assert gen.rewrite(draft, root, g, []) is None and gen.rejected["error"] == 1
    assert parse_reply('{"question": "A  b?"}') == "A b?" and parse_reply("plain text?") == "plain text?"
    with pytest.raises(ValueError, match="http"):
        LLMConfig(base_url="localhost:8000")


def test_config_errors_name_the_fix():
    with pytest.raises(ValueError, match="generator must be one of"):
        SynthConfig(generator="gpt")
    with pytest.raises(ValueError, match="LLMConfig"):
        SynthConfig(generator="llm")
    with pytest.raises(ValueError, match="n must be >= 1"):
        SynthConfig(n=0)


def test_cli_writes_every_output(sample_index, tmp_path, capsys):
    from sim_web.cli import make_parser
    from training.synth.cli import main

    args = make_parser().parse_args(["synth", "--n", "4", "--generator", "template"])
    assert args.func.__module__ == "training.synth.cli" and args.n == 4
    out = tmp_path / "qa.jsonl"
    rc = main(
        [
            "--index",
            str(sample_index),
            "--n",
            "3",
            "--out",
            str(out),
            "--max-nodes",
            "400",
            "--n-seeds",
            "10",
            "--seed",
            "2",
        ]
    )
    assert rc == 0
    text = capsys.readouterr().out
    assert "uniqueness pass rate" in text and f"jsonl: {out}" in text
    assert len(out.read_text().splitlines()) == 3
    for suffix in (".hf", ".duckdb", ".card.md", ".card.json"):
        assert (tmp_path / f"qa{suffix}").exists()
    assert main(["--index", str(sample_index), "--n", "0"]) == 2
    help_text = subprocess.run([sys.executable, "-m", "training.synth", "--help"], capture_output=True, text=True)
    assert help_text.returncode == 0 and "--generator" in help_text.stdout and "--base-url" in help_text.stdout
