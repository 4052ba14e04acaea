"""The one wire format: a chat rendered to ids with spans, the assistant mask, the GRPO tool suffix."""

import pytest

pytest.importorskip("transformers")

from simweb_core.errors import ConfigError  # noqa: E402
from training.wire import encode_chat, render, tokenize, tool_suffix_ids  # noqa: E402


@pytest.fixture(scope="module")
def tok():
    """A byte-level BPE with ChatML special tokens and template (no downloads)."""
    from training.grpo.tiny import tiny_model

    return tiny_model(["system user assistant"], vocab_size=300)[1]


CHAT = [
    {"role": "system", "content": "You are a deep research assistant."},
    {"role": "user", "content": "Who wrote Hamlet?"},
    {
        "role": "assistant",
        "content": '<think>search</think>\n<tool_call>\n{"name": "search", "arguments": {"query": ["Hamlet"]}}\n</tool_call>',
    },
    {"role": "user", "content": "<tool_response>\nA Google search for 'Hamlet' found 1 results\n</tool_response>"},
    {"role": "assistant", "content": "<answer>William Shakespeare</answer>"},
]


def test_spans_cover_the_chat_and_mask_only_assistant_tokens(tok):
    enc = encode_chat(tok, CHAT)
    assert enc.ids == tokenize(tok, render(tok, CHAT))
    assert [s.start for s in enc.spans[1:]] == [s.end for s in enc.spans[:-1]] and enc.spans[-1].end == len(enc.ids)
    assert [s.role for s in enc.spans] == [
        "system",
        "user",
        "header",
        "assistant",
        "sep",
        "tool",
        "header",
        "assistant",
        "sep",
    ]
    trained = [tok.decode(ids) for ids in enc.span_ids("assistant")]
    assert trained == [CHAT[2]["content"] + "<|im_end|>", CHAT[4]["content"] + "<|im_end|>"]
    mask = enc.assistant_mask
    assert sum(mask) == sum(len(x) for x in enc.span_ids("assistant"))
    untrained = tok.decode([i for i, m in zip(enc.ids, mask) if not m])
    assert "Who wrote Hamlet?" in untrained and "<tool_response>" in untrained and "<answer>" not in untrained


def test_rollout_pieces_rebuild_the_encoded_chat(tok):
    """prompt + (assistant ids + tool suffix)* + last assistant = the SFT encoding, token for token."""
    enc = encode_chat(tok, CHAT)
    prompt = tokenize(tok, render(tok, CHAT[:2], add_generation_prompt=True))
    a1 = tokenize(tok, CHAT[2]["content"] + "<|im_end|>")
    a2 = tokenize(tok, CHAT[4]["content"] + "<|im_end|>")
    rebuilt = prompt + a1 + tool_suffix_ids(tok, CHAT[:4]) + a2
    assert rebuilt == enc.ids[: len(rebuilt)] and enc.ids[len(rebuilt) :] == tokenize(tok, "\n")


def test_bad_templates_are_clear_errors(tok):
    import copy

    bad = copy.deepcopy(tok)
    bad.chat_template = "{% for m in messages|reverse %}{{ m['content'] }}<|im_end|>{% endfor %}"
    with pytest.raises(ConfigError, match="prefix-preserving"):
        encode_chat(bad, CHAT)
    with pytest.raises(ConfigError, match="assistant turn"):
        tool_suffix_ids(tok, CHAT[:2])
