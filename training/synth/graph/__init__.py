"""Stage 1, graph: the knowledge graph and the subgraphs a question is made from (SailorFog-QA-V2, steps 1-3).

The graph (:mod:`.kg`) grown from seeds (:mod:`.kg_build`) over an index's store (:mod:`.store_source`) or the raw
leads (:mod:`.leads`); random-walk subgraphs with structural dedup (:mod:`.sampling`, :mod:`.structures`) and
orbit-balanced targets (:mod:`.orbits`). No clue yet: ``compose`` writes one from a subgraph and its target.
Imports only ``extract``.
"""
