"""SailorFog-QA-V2 synthesis core: a dense knowledge graph, subgraph sampling with WL dedup,
automorphism orbits, uncertainty transforms and template questions (arXiv 2509.13305).

Plain Python / networkx; the store-backed ``neighbours_fn`` / ``entity_fn`` plug into
:func:`build_dense_kg`. :class:`~training.synth.leads.LeadsSource` is a small real source
(10k Wikipedia lead sections with title-mention edges) for tests and benchmarks.
"""

from training.synth.facts import DateFact, NumberFact, extract_dates, extract_numbers, facts_from_fields
from training.synth.kg import BuildReport, Entity, GraphStats, KnowledgeGraph, build_dense_kg, graph_stats, make_entity
from training.synth.orbits import node_orbits, pick_targets, wl_colour_classes
from training.synth.sampling import (
    SamplingReport,
    Structure,
    StructureRegistry,
    Subgraph,
    classify_structure,
    sample_subgraphs,
    sample_subgraphs_with_report,
)
from training.synth.templates import QuestionDraft, generate_question
from training.synth.uncertainty import Clue, DateGranularity, UncertaintyType

__all__ = [
    "BuildReport", "Clue", "DateFact", "DateGranularity", "Entity", "GraphStats", "KnowledgeGraph", "NumberFact",
    "QuestionDraft", "SamplingReport", "Structure", "StructureRegistry", "Subgraph", "UncertaintyType",
    "build_dense_kg", "classify_structure", "extract_dates", "extract_numbers", "facts_from_fields",
    "generate_question", "graph_stats", "make_entity", "node_orbits", "pick_targets", "sample_subgraphs",
    "sample_subgraphs_with_report", "wl_colour_classes",
]
