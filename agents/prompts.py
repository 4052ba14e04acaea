"""The fixed texts of the agent: Tongyi's forcing prompts, the ReSum prompts and the judge prompt.

The first two strings are Tongyi DeepResearch's own (``inference/react_agent.py`` of
github.com/Alibaba-NLP/DeepResearch): models of that family were trained with them, so they are
kept byte for byte. The ReSum and judge prompts are ours; they are documented in docs/evaluation.md
(section "Evaluating agents") because a judge's prompt is part of what its score means.
"""

from __future__ import annotations

#: Tongyi's "give your best answer now" prompt, sent when the context limit is reached.
FORCE_ANSWER_PROMPT = (
    "You have now reached the maximum context length you can handle. You should stop making tool calls and, "
    "based on all the information above, think again and provide what you consider the most likely answer in "
    "the following format:<think>your final thinking</think>\n<answer>your answer</answer>"
)

#: Tongyi's text for the last message when the LLM-call budget ran out without an answer.
LLM_CALLS_EXCEEDED = "Sorry, the number of llm calls exceeds the limit."

#: System prompt of the summarisation request (ReSum).
RESUM_SYSTEM = (
    "You condense the working history of a research agent into a compact reasoning state. "
    "Use only what the history shows; never invent facts."
)

#: User prompt of the summarisation request; ``{question}`` and ``{history}`` are filled in.
RESUM_PROMPT = """A research agent is answering this question:

{question}

Here is its history so far (its own reasoning and tool calls, and the tool responses it received):

{history}

Write the agent's current reasoning state so that it can continue from it alone, without the history. \
Use exactly this structure, inside <summary></summary> tags:

<summary>
Known: facts gathered so far that bear on the question, each with the page it came from.
Verified: which candidate answers or facts have been confirmed by a page, and which were ruled out.
Open: what is still unknown or unconfirmed.
Next leads: concrete next steps (queries to search, URLs to visit).
</summary>"""

#: The user message the agent continues from after a summarisation (``{question}``, ``{summary}``).
RESUM_CONTINUE = """{question}

Your earlier research on this question has been condensed into the summary below. Treat it as your \
working state: rely on what it marks as verified, resolve what is open, follow the next leads, and \
answer inside <answer></answer> once you are confident.

{summary}"""

#: The LLM judge's prompt (``{question}``, ``{golds}``, ``{prediction}``); it must reply one word.
JUDGE_PROMPT = """You are grading the answer of a research assistant against the gold answer of a question.

Question: {question}
Gold answer (any of these is correct): {golds}
Assistant's answer: {prediction}

The assistant's answer is correct if it refers to the same entity, value or fact as one of the gold \
answers, even if worded differently (aliases, abbreviations, added context, a different but equivalent \
format of the same date or number). It is incorrect if it names something else, is vaguer than the gold \
answer, hedges between several candidates, or is empty.

Reply with exactly one word: Correct or Incorrect."""
