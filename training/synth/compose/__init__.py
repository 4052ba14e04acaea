"""Stage 2, compose: where a clue and a question are made (SailorFog-QA-V2, steps 4-5).

Exact facts blurred into clues (:mod:`.uncertainty`, :mod:`.quantities`; the record in :mod:`.clues`), entities named
without their names (:mod:`.naming`), the clues of one question (:mod:`.clue_builder`, :mod:`.structural`,
:mod:`.transfer`), the question written from its constraint tree (:mod:`.templates`, :mod:`.prose`,
:mod:`.constraints`; or by an LLM, :mod:`.llm`), and what the set covers and where it spends drafts
(:mod:`.coverage`, :mod:`.steering`). Nothing is checked against the page here: ``verify`` does that.
Imports only ``extract`` and ``graph``.
"""
