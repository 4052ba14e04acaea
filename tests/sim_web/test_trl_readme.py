"""TRL with the offline models: the tool-calling chat template, and the README's "With TRL" snippet run as written.

The snippet is read from README.md (the python block after the ``<!-- tested: ... -->`` marker in
the "### With TRL" section) and executed unchanged in a subprocess, with the bundled SmolLM2 and
the session's sample index as the default index, so the README cannot drift from what runs.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from sim_web.env import EnvConfig
from sim_web.serve.chat_template import TOOL_CHAT_TEMPLATE, with_tool_template
from sim_web.serve.trl import WebResearchToolEnv
from simweb_core.errors import ConfigError

README = Path(__file__).resolve().parents[2] / "README.md"
MARKER = "<!-- tested: tests/sim_web/test_trl_readme.py"


def readme_trl_snippet() -> str:
    """The python block that follows the test marker in the README's "### With TRL" section."""
    section = README.read_text(encoding="utf-8").split("### With TRL\n", 1)[1].split("\n### ", 1)[0]
    assert section.count(MARKER) == 1, "the 'With TRL' section lost its test marker"
    found = re.search(r"```python\n(.*?)```", section.split(MARKER, 1)[1], re.S)
    assert found, "no ```python block after the marker in the 'With TRL' section"
    return found.group(1)


@pytest.fixture(scope="module")
def tiny():
    from training.grpo.tiny import tiny_model

    return tiny_model(["What is the capital of France? Paris.", '{"name": "search", "arguments": {"query": ["x"]}}'])


def _call(name: str, **arguments):
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


def test_the_helper_makes_the_tiny_chatml_model_tool_capable(tiny):
    from trl.chat_template_utils import is_chat_template_prefix_preserving, supports_tool_calling

    _, tok = tiny
    assert not supports_tool_calling(tok)  # plain ChatML: what TRL refused before the helper
    assert with_tool_template(tok) is tok and tok.chat_template == TOOL_CHAT_TEMPLATE
    assert supports_tool_calling(tok) and is_chat_template_prefix_preserving(tok)


def test_the_template_speaks_the_env_format(tiny, sample_index):
    from sim_web.protocol.actions import parse_action
    from sim_web.tools import MULTI_RESPONSE_JOINER

    tok = with_tool_template(tiny[1])
    env = WebResearchToolEnv(EnvConfig(index_dir=str(sample_index)))
    msgs = [
        {"role": "user", "content": "Q?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [_call("search", query=["Paris"]), _call("visit", url=["u"], goal="g")],
        },
        {"role": "tool", "name": "search", "content": "R1"},
        {"role": "tool", "name": "visit", "content": "R2"},
    ]
    text = tok.apply_chat_template(msgs, tools=[env.search, env.visit], tokenize=False, add_generation_prompt=True)
    assert text.count('{"type": "function", "function": {"name": "search"') == 1 and "<tools>" in text
    turn = text.split("<|im_start|>assistant\n")[1].split("<|im_end|>")[0]
    action = parse_action(turn, allow_multiple=True)  # the env reads the rendered calls as the same calls
    assert [(c.tool, c.arguments) for c in action.calls] == [
        ("search", {"query": ["Paris"]}),
        ("visit", {"url": ["u"], "goal": "g"}),
    ]
    assert "<|im_start|>user\n<tool_response>\nR1" + MULTI_RESPONSE_JOINER + "R2\n</tool_response><|im_end|>\n" in text
    assert text.endswith("<|im_start|>assistant\n")
    system = tok.apply_chat_template([{"role": "system", "content": "S"}, msgs[0]], tokenize=False)
    assert system == "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nQ?<|im_end|>\n"  # no tools: plain ChatML


def test_the_response_parser_reads_the_calls_back(tiny):
    from trl.chat_template_utils import parse_response

    tok = with_tool_template(tiny[1])
    prefix = tok.apply_chat_template(
        [{"role": "user", "content": "Q?"}], add_generation_prompt=True, tokenize=True, return_dict=False
    )
    done = 'Looking.\n<tool_call>\n{"name": "answer", "arguments": {"answer": "Paris"}}\n</tool_call><|im_end|>'
    assert parse_response(tok, tok.encode(done), prefix=prefix) == {
        "role": "assistant",
        "content": "Looking.",
        "tool_calls": [_call("answer", answer="Paris")],
    }
    broken = '<tool_call>\n{"name": oops</tool_call><|im_end|>'  # TRL falls back to plain text, no tool run
    assert "tool_calls" not in parse_response(tok, tok.encode(broken), prefix=prefix)


def test_non_chatml_tokenizers_are_refused_with_the_fix():
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    tok = PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer(models.WordLevel({"<s>": 0, "<unk>": 1}, unk_token="<unk>")), eos_token="<s>"
    )
    with pytest.raises(ConfigError, match="ChatML"):
        with_tool_template(tok)


def test_grpo_trainer_accepts_the_in_memory_tiny_model(tiny, sample_index, tmp_path, monkeypatch):
    import datasets
    from trl import GRPOConfig, GRPOTrainer

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    model, tok = tiny
    ds = datasets.Dataset.from_list([{"prompt": [{"role": "user", "content": "Q?"}], "answer": "Paris"}] * 2)
    args = GRPOConfig(
        output_dir=str(tmp_path),
        max_steps=1,
        per_device_train_batch_size=2,
        num_generations=2,
        bf16=False,
        report_to="none",
        save_strategy="no",
    )
    trainer = GRPOTrainer(
        model=model,
        processing_class=with_tool_template(tok),
        args=args,
        train_dataset=ds,
        environment_factory=lambda: WebResearchToolEnv(EnvConfig(index_dir=str(sample_index))),
    )
    assert sorted(t.__name__ for t in trainer.tools) == [
        "PythonInterpreter",
        "answer",
        "google_scholar",
        "search",
        "visit",
    ]
    assert trainer.chat_template is None  # prefix-preserving: TRL keeps the template as is


RUNNER = """import json, sys
ns = {}
exec(compile(open(sys.argv[1], encoding="utf-8").read(), "README.md (With TRL)", "exec"), ns)
trainer = ns["trainer"]
print("RESULT " + json.dumps({"step": trainer.state.global_step, "tools": sorted(t.__name__ for t in trainer.tools),
                              "logs": trainer.state.log_history[0]}))
"""


def test_the_readme_trl_snippet_runs_as_written(sample_index, tmp_path):
    from agents.models import SMOLLM2_NAME, smollm2_path

    home = sample_index.parents[1]  # the session's sample index is the snippet's default index
    link = home / "models" / SMOLLM2_NAME
    if not link.exists():  # the converted SmolLM2 of the user's cache (converted there once, ~30 s)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(smollm2_path(), target_is_directory=True)
    (tmp_path / "snippet.py").write_text(readme_trl_snippet(), encoding="utf-8")
    (tmp_path / "runner.py").write_text(RUNNER, encoding="utf-8")
    env = {
        **os.environ,
        "SIM_WEB_HOME": str(home),
        "HF_HUB_OFFLINE": "1",
        "TRL_EXPERIMENTAL_SILENCE": "1",
        "PYTHONPATH": str(README.parent),
    }
    proc = subprocess.run(
        [sys.executable, "runner.py", "snippet.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads(proc.stdout.split("RESULT ", 1)[1])
    assert result["step"] == 1 and result["tools"] == [
        "PythonInterpreter",
        "answer",
        "google_scholar",
        "search",
        "visit",
    ]
    assert result["logs"]["num_tokens"] > 0 and "rewards/WebResearchToolEnv/mean" in result["logs"]
