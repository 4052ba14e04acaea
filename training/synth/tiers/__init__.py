"""Stage 3, tiers: the curriculum below SailorFog-QA (``lookup``, ``bridge``, ``intersection``).

The tiers make and gate their own questions: typed facts off the graph (:mod:`.facts`), the questions and their
search gates (:mod:`.generate`, :mod:`.intersection`; what a search shows, :mod:`.view`), surface forms
(:mod:`.forms`, some held out of training), the answer-disjoint split (:mod:`.split`) and the card (:mod:`.card`).
A question is dropped in :mod:`.generate` / :mod:`.intersection` when a gate fails, each drop counted in the card's
funnel. Imports only ``extract``, ``graph`` and ``compose`` (not its sibling ``verify``).
"""
