"""A tool-calling ChatML template for the offline models, so TRL's ``GRPOTrainer`` accepts them with tools.

The bundled SmolLM2-135M-Instruct and the tiny smoke-test Llama speak ChatML
(``<|im_start|>role\\n...<|im_end|>``) but their templates only read ``message['content']``:
TRL refuses them with "The provided chat template does not support tool calling". This
template is the same ChatML plus the Tongyi / Hermes tool format the env already speaks:

* the tool schemas go into the system turn, inside ``<tools>...</tools>``;
* an assistant tool call is ``<tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>``;
* tool results come back in one user turn, each as ``<tool_response>\\n...\\n</tool_response>``
  (several joined exactly as the env joins them, :data:`sim_web.tools.MULTI_RESPONSE_JOINER`).

It is prefix-preserving (appending messages never re-renders earlier ones), which TRL's
multi-turn loop requires, and :data:`RESPONSE_TEMPLATE` tells ``tokenizer.parse_response``
how to read the tool calls back out of a completion.

Example::

    tokenizer = with_tool_template(AutoTokenizer.from_pretrained(path))
"""

from __future__ import annotations

import copy
from typing import Any

from simweb_core.errors import ConfigError

#: The system line used when tools are given and the conversation has no system message.
DEFAULT_SYSTEM = "You are a helpful assistant."

TOOL_CHAT_TEMPLATE = (
    "{%- if messages and messages[0]['role'] == 'system' %}"
    "{%- set system = messages[0]['content'] %}{%- set rest = messages[1:] %}"
    "{%- else %}{%- set system = none %}{%- set rest = messages %}{%- endif %}"
    "{%- if tools %}"
    "{{- '<|im_start|>system\\n' + (system if system is not none else '" + DEFAULT_SYSTEM + "') }}"
    "{{- '\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\n"
    "You are provided with function signatures within <tools></tools> XML tags:\\n<tools>' }}"
    "{%- for tool in tools %}{{- '\\n' + (tool | tojson) }}{%- endfor %}"
    "{{- '\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments within "
    '<tool_call></tool_call> XML tags:\\n<tool_call>\\n{"name": <function-name>, "arguments": <args-json-object>}'
    "\\n</tool_call><|im_end|>\\n' }}"
    "{%- elif system is not none %}{{- '<|im_start|>system\\n' + system + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for message in rest %}"
    "{%- if message['role'] == 'tool' %}"
    "{%- if loop.first or rest[loop.index0 - 1]['role'] != 'tool' %}{{- '<|im_start|>user' }}{%- endif %}"
    "{{- '\\n<tool_response>\\n' + message['content'] + '\\n</tool_response>' }}"
    "{%- if loop.last or rest[loop.index0 + 1]['role'] != 'tool' %}{{- '<|im_end|>\\n' }}{%- endif %}"
    "{%- else %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + (message['content'] or '') }}"
    "{%- for call in (message['tool_calls'] or []) if message['role'] == 'assistant' %}"
    "{%- set call = call['function'] if call['function'] is defined else call %}"
    "{%- if not loop.first or message['content'] %}{{- '\\n' }}{%- endif %}"
    "{{- '<tool_call>\\n{\"name\": \"' + call['name'] + '\", \"arguments\": ' }}"
    "{{- call['arguments'] if call['arguments'] is string else (call['arguments'] | tojson) }}"
    "{{- '}\\n</tool_call>' }}"
    "{%- endfor %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)

#: How ``tokenizer.parse_response`` (transformers >= 5.13) reads a completion rendered by the template above.
RESPONSE_TEMPLATE: dict[str, Any] = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "tool_calls": {
            "open": "<tool_call>",
            "close_pattern": r"</tool_call>\s*",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": "{content}"},
        },
        "content": {"close_pattern": r"<\|im_end\|>\s*", "content": "text"},
    },
}

_CHATML_TOKENS = ("<|im_start|>", "<|im_end|>")


def with_tool_template(tokenizer: Any) -> Any:
    """Give a ChatML tokenizer the tool-calling template and response parser that TRL's tool loop needs.

    Use it on the bundled SmolLM2-135M-Instruct or the tiny smoke-test model before handing the
    tokenizer to ``GRPOTrainer(..., processing_class=tokenizer, environment_factory=WebResearchToolEnv)``.

    Args:
        tokenizer: A Hugging Face tokenizer whose vocabulary has ``<|im_start|>`` and ``<|im_end|>``
            (any ChatML model), with ``<|im_end|>`` as its end-of-turn (eos) token.

    Returns:
        The same tokenizer, with ``chat_template`` set to :data:`TOOL_CHAT_TEMPLATE` and
        ``response_template`` to a copy of :data:`RESPONSE_TEMPLATE`.

    Raises:
        ConfigError: When the tokenizer is not ChatML, or transformers is too old to parse responses.
    """
    vocab = tokenizer.get_vocab()
    missing = [t for t in _CHATML_TOKENS if t not in vocab]
    if missing:
        raise ConfigError(
            f"with_tool_template needs a ChatML tokenizer, but {missing} are not in its vocabulary; "
            "for other models use their own tool-capable chat template (see TRL's chat_template_utils)"
        )
    if tokenizer.eos_token != "<|im_end|>":
        raise ConfigError(
            f"the tokenizer's eos token is {tokenizer.eos_token!r}, not '<|im_end|>': set "
            "tokenizer.eos_token = '<|im_end|>' so that generation stops at the end of a turn"
        )
    if not _parses_response_templates():
        raise ConfigError(
            "this transformers cannot parse tool calls with a response template: pip install 'transformers>=5.13'"
        )
    tokenizer.chat_template = TOOL_CHAT_TEMPLATE
    tokenizer.response_template = copy.deepcopy(RESPONSE_TEMPLATE)
    return tokenizer


def _parses_response_templates() -> bool:
    """Whether the installed transformers reads ``tokenizer.response_template`` (5.13 and later)."""
    import transformers
    from packaging.version import Version

    return Version(transformers.__version__) >= Version("5.13.0.dev0")
