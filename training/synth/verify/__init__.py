"""Stage 3, verify: where a clue is checked and dropped, and a question gated.

A clue is kept only if its evidence, re-read, states the claim (:mod:`.clue_check`, with :mod:`.fact_check` for dates
and numbers and :mod:`.subjects` for whose sentence it is); a dropped clue is counted per reason
(:mod:`.clue_evidence` renders the card's table). A question is dropped unless its clues single out the answer over
the whole corpus (:mod:`.uniqueness`) and over the look-alikes its own pages name (:mod:`.lookalikes`), and unless
the simulator's search answers it, not in one search, and it is no duplicate (:mod:`.gates`). :mod:`.quality`
measures a finished set. Imports only ``extract``, ``graph`` and ``compose`` (not its sibling ``tiers``).
"""
