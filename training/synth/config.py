"""The settings of one synthesis run: :class:`SynthConfig` (validated on construction).

Kept apart from :mod:`training.synth.pipeline`, which runs them: the CLI and the training loop import the settings
from here. The run's report, :class:`~training.synth.outputs.report.SynthReport`, lives with the outputs that write
it (a stage never imports the top level).
"""

from __future__ import annotations

from dataclasses import dataclass

from training.synth.compose.llm import LLMConfig

GENERATORS = ("template", "llm")
SHORTCUT_POLICIES = ("drop", "downweight", "keep")


@dataclass
class SynthConfig:
    """Settings of one synthesis run (the CLI exposes the common ones).

    Attributes:
        n: Questions wanted.
        seed: Seed of every random choice.
        generator: ``"template"`` (deterministic, no model) or ``"llm"`` (needs ``llm``).
        n_seeds: Seed entities the knowledge graph grows from.
        min_seed_links: A seed page links to at least this many pages.
        seed_queries: Optional search queries whose top results are added as seeds (their
            nodes record the query as provenance).
        max_nodes: Entities discovered before densification.
        sizes: Subgraph sizes (nodes) to sample.
        oversample: Subgraphs sampled per wanted question (the gates reject some).
        typed_prob: Probability that a sampling walk step follows a typed relation (a sentence's
            relation phrase or an infobox field) when there is one; bare links are used where
            nothing better exists.
        targets_per_subgraph: Questions tried per subgraph, on distinct orbits first.
        min_hops: A question chains at least this many typed facts: only targets whose eccentricity in the subgraph
            is at least this are asked for (1: every target).
        other_pages_first: Ask first about the targets of a subgraph whose relations the pages around them state,
            not their own page (a question quoting the answer's own page is what one search finds).
        skip_shortcut_targets: A target that one search answered in an earlier subgraph is not asked about again
            (counted as ``shortcut_target_skipped``).
        steer_types: Steer the optional clues towards the uncertainty types below their floor
            (:data:`~training.synth.compose.coverage.FLOORS`, plus ``steer_margin``) in the questions accepted so far.
        steer_margin: How far above its floor a type is steered to (a share, e.g. 0.02 for 8% -> 10%).
        test_fraction: Share of ids in the held-out ``test`` split.
        k: Search results an agent sees (answerability counts a page found within the top ``k``).
        shortcut_policy: ``drop`` questions whose BM25 top-1 is the answer, ``downweight`` them
            (``weight = shortcut_weight``) or ``keep`` them.
        shortcut_weight: Weight of a down-weighted shortcut question.
        max_candidates: Candidate sets above this size count as unbounded in the uniqueness check.
        llm: Endpoint settings for the ``llm`` generator.
        progress: Show tqdm progress bars.
    """

    n: int = 300
    seed: int = 0
    generator: str = "template"
    n_seeds: int = 40
    min_seed_links: int = 3
    seed_queries: tuple[str, ...] = ()
    max_nodes: int = 3000
    sizes: tuple[int, ...] = (3, 4, 5)
    oversample: float = 4.0
    typed_prob: float = 1.0
    targets_per_subgraph: int = 2
    min_hops: int = 1
    other_pages_first: bool = True
    skip_shortcut_targets: bool = True
    steer_types: bool = True
    steer_margin: float = 0.02
    test_fraction: float = 0.2
    k: int = 10
    shortcut_policy: str = "drop"
    shortcut_weight: float = 0.25
    max_candidates: int = 20_000
    llm: LLMConfig | None = None
    progress: bool = False

    def __post_init__(self) -> None:
        def bad(what: str, found: object, fix: str) -> ValueError:
            return ValueError(f"SynthConfig.{what}, found {found!r}; {fix}")

        if self.n < 1:
            raise bad("n must be >= 1", self.n, "ask for at least one question")
        if self.generator not in GENERATORS:
            raise bad(f"generator must be one of {GENERATORS}", self.generator, "use --generator template or llm")
        if self.generator == "llm" and self.llm is None:
            raise bad("llm must be set for generator='llm'", None, "pass llm=LLMConfig(base_url=..., model=...)")
        if self.shortcut_policy not in SHORTCUT_POLICIES:
            raise bad(f"shortcut_policy must be one of {SHORTCUT_POLICIES}", self.shortcut_policy, "pick one")
        if self.n_seeds < 1 or self.max_nodes < 10 or self.targets_per_subgraph < 1 or self.k < 1:
            raise bad(
                "n_seeds, targets_per_subgraph and k must be >= 1 and max_nodes >= 10",
                (self.n_seeds, self.targets_per_subgraph, self.k, self.max_nodes),
                "raise them",
            )
        if not self.sizes or min(self.sizes) < 2 or self.oversample < 1 or not 0 <= self.test_fraction < 1:
            raise bad(
                "sizes must be >= 2, oversample >= 1 and 0 <= test_fraction < 1",
                (self.sizes, self.oversample, self.test_fraction),
                "fix the values",
            )
        if not 1 <= self.min_hops < max(self.sizes):
            raise bad(
                f"min_hops must be in [1, {max(self.sizes) - 1}] (a subgraph of {max(self.sizes)} nodes chains at "
                f"most {max(self.sizes) - 1} facts)",
                self.min_hops,
                "lower it or add larger sizes",
            )
        if not 0 <= self.typed_prob <= 1:
            raise bad("typed_prob must be in [0, 1]", self.typed_prob, "e.g. 0.9")
        if not 0 <= self.steer_margin < 1:
            raise bad("steer_margin must be in [0, 1)", self.steer_margin, "e.g. 0.02")
        if not 0 < self.shortcut_weight <= 1:
            raise bad("shortcut_weight must be in (0, 1]", self.shortcut_weight, "e.g. 0.25")
