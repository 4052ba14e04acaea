"""SailorFog-QA-V2 synthesis core: a dense knowledge graph, subgraph sampling with WL dedup,
automorphism orbits, uncertainty transforms and template questions (arXiv 2509.13305).

Plain Python / networkx. :class:`~training.synth.graph.store_source.StoreSource` gives
:func:`build_dense_kg` its ``neighbours_fn`` / ``entity_fn`` over an index's DuckDB store
(:class:`~training.synth.graph.leads.LeadsSource` does the same over the raw leads JSON, for tests and
benchmarks). :func:`~training.synth.pipeline.generate` runs the whole recipe: KG -> subgraphs ->
orbit-balanced targets -> questions -> quality gates (:mod:`~training.synth.verify.uniqueness` for unique
answers over the whole corpus, :mod:`~training.synth.verify.gates` for answerability and shortcuts
through the simulator's own search) -> records (:mod:`~training.synth.outputs.records`) -> outputs
(:mod:`~training.synth.outputs.write`). CLI: ``sim-web synth`` / ``python -m training.synth``.
"""

from training.synth.compose.templates import QuestionDraft, generate_question
from training.synth.compose.uncertainty import Clue, DateGranularity, UncertaintyType
from training.synth.config import SynthConfig
from training.synth.extract.facts import DateFact, NumberFact, extract_dates, extract_numbers, facts_from_fields
from training.synth.graph.kg import BuildReport, Entity, GraphStats, KnowledgeGraph, graph_stats, make_entity
from training.synth.graph.kg_build import build_dense_kg
from training.synth.graph.orbits import node_orbits, pick_targets, wl_colour_classes
from training.synth.graph.sampling import (
    SamplingReport,
    Structure,
    StructureRegistry,
    Subgraph,
    classify_structure,
    sample_subgraphs,
    sample_subgraphs_with_report,
)
from training.synth.graph.store_source import StoreSource
from training.synth.outputs.report import SynthReport
from training.synth.pipeline import generate, generate_with_report

__all__ = [
    "BuildReport",
    "Clue",
    "StoreSource",
    "SynthConfig",
    "SynthReport",
    "generate",
    "generate_with_report",
    "DateFact",
    "DateGranularity",
    "Entity",
    "GraphStats",
    "KnowledgeGraph",
    "NumberFact",
    "QuestionDraft",
    "SamplingReport",
    "Structure",
    "StructureRegistry",
    "Subgraph",
    "UncertaintyType",
    "build_dense_kg",
    "classify_structure",
    "extract_dates",
    "extract_numbers",
    "facts_from_fields",
    "generate_question",
    "graph_stats",
    "make_entity",
    "node_orbits",
    "pick_targets",
    "sample_subgraphs",
    "sample_subgraphs_with_report",
    "wl_colour_classes",
]
