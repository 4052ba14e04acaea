"""Adversarial assistant turns shared by the parser fuzz and the env fuzz."""

import random

ADVERSARIAL = [
    "<tool_call>" * 5000,
    "</tool_call>" * 5000,
    "<think>" * 3000 + "</think>",
    "<code></code>" * 2000,
    "<tool_call>" + "[" * 5000 + "</tool_call>",
    "<tool_call>" + '{"a":' * 5000 + "</tool_call>",
    "<tool_call>" + "{" * 20000 + "</tool_call>",
    '<tool_call>{"name": "search", "arguments": {"query": [' + "1," * 20000 + "]}}</tool_call>",
    '<tool_call>{"name": "search", "arguments": {"query": ["\\ud800"]}}</tool_call>',
    '<tool_call>{"name": "search", "arguments": {"query": [1e999999]}}</tool_call>',
    '<tool_call>{"name": "search", "arguments": {"query": [' + "9" * 5000 + "]}}</tool_call>",
    "<tool_call>{'name': 'search', 'arguments': {'query': [0x" + "f" * 6000 + "]}}</tool_call>",
    '<tool_call>{"name": NaN, "arguments": Infinity}</tool_call>',
    '<tool_call>{"name": "visit", "arguments": {"url": [null], "goal": {}}}</tool_call>',
    '<tool_call>{"name": "' + "a" * 10000 + '", "arguments": {}}</tool_call>',
    '<tool_call>{"name": "search", "arguments": "' + '\\"' * 3000 + '"}</tool_call>',
    '<tool_call>{"name": "PythonInterpreter"}<code>' + "</code>" * 10 + "</tool_call>",
    "<tool_call><code><tool_call></code></tool_call></tool_call>",
    "<answer><answer></answer></answer>",
    "</think></think><answer></answer>",
    "<tool_response><answer>x</answer>",
    "\x00\x01\x02<tool_call>\x00</tool_call>",
    '<tool_call>{"name": "search", "arguments": {"query": ["\'; DROP TABLE pages; --"]}}</tool_call>',
    '<tool_call>{"name": "__import__(\'os\').system(\'rm -rf /\')", "arguments": {}}</tool_call>',
    '<tool_call>{"name": "search", "arguments": {"query": ["{{7*7}}", "${jndi:ldap://x}"]}}</tool_call>',
    '<tool_call>{"__proto__": {"name": "search"}, "constructor": 1}</tool_call>',
    '<tool_call>\ufeff{"name": "search", "arguments": {"query": ["\u202e\u0000"]}}</tool_call>',
    "<tool_call>" + "\U0001f600" * 10000 + "</tool_call>",
    "<think>" + "ü" * 40000,
    '<tool_call>{"name": "search", "arguments": {"query": ["q"]}}</tool_call>' * 100,
    "<tool_call>// comment\n{name: 'search', arguments: {query: ['q'],},}</tool_call>",
    '<tool_call>{"name": "search", "arguments": {"query": ["q"]}}\n<code>print(1)</code></tool_call>',
    '<tool_call>{"name": ["search"], "arguments": {}}</tool_call>',
    "<tool_call>null</tool_call>",
    "<tool_call>true</tool_call>",
    '<tool_call>"search"</tool_call>',
    "<tool_call>1e5</tool_call>",
]

PIECES = [
    "<think>",
    "</think>",
    "<tool_call>",
    "</tool_call>",
    "<code>",
    "</code>",
    "<answer>",
    "</answer>",
    "<tool_response>",
    "{",
    "}",
    "[",
    "]",
    '"',
    "'",
    ",",
    ":",
    "\\",
    "\n",
    " ",
    "name",
    "arguments",
    '"name"',
    '"arguments"',
    '"search"',
    '"visit"',
    '"google_scholar"',
    '"PythonInterpreter"',
    '"query"',
    '"url"',
    '"goal"',
    "null",
    "true",
    "1",
    "-0.5e3",
    "NaN",
    "```json",
    "```",
    "\u00e9",
    "\U0001f600",
    "\ud800",
    "\x00",
]


def damage(text: str, rng: random.Random) -> str:
    """``text`` with 1-6 random character-level edits: deletions, tag insertions, swaps, duplications."""
    s = list(text)
    for _ in range(rng.randint(1, 6)):
        i = rng.randrange(len(s) + 1)
        op = rng.random()
        if op < 0.3 and s:
            del s[i - 1]
        elif op < 0.6:
            s.insert(i, rng.choice(PIECES))
        elif op < 0.8 and s:
            j = rng.randrange(len(s))
            s[i - 1], s[j] = s[j], s[i - 1]
        else:
            s[i:i] = s[max(0, i - 10) : i]
    return "".join(s)
