"""Task sets: questions with known answers, loaded from JSONL / Hugging Face datasets or derived from an index.

A task record has ``question``, ``answer``, optional ``aliases`` and any metadata. The default
set is the index's synthesized SailorFog-QA set (``<index>/tasks/sailorfog_qa.jsonl``, written by
``sim-web synth``). An index without one falls back to tasks derived from the index itself: for each
page with a usable first sentence, the sentence with the subject's name masked becomes the
question and the page title the answer; its redirect titles are the aliases. Sets shipped with the
package (:data:`BUNDLED_TASK_SETS`: ``handwritten``, questions written by reading the bundled sample's
pages) live in ``sim_web/env/data/`` and resolve by name.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sim_web.env.rewards import normalize_answer
from simweb_core.errors import ConfigError
from wiki_index.parse.text import first_sentence
from wiki_index.types import bare_title


@dataclass(frozen=True)
class Task:
    """One question with its gold answer.

    Attributes:
        id: Stable id.
        question: The question shown to the agent.
        answer: The gold answer.
        aliases: Other accepted answers.
        metadata: Anything else (provenance, uncertainty types, difficulty, split...).
    """

    id: str
    question: str
    answer: str
    aliases: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict, hash=False)

    @property
    def oracle_searches(self) -> Any:
        """The searches a provenance-following oracle needs (``difficulty.oracle_searches``), or ``None``."""
        difficulty = self.metadata.get("difficulty")
        return difficulty.get("oracle_searches") if isinstance(difficulty, dict) else None

    @property
    def subgoals(self) -> tuple[str, ...]:
        """The entities a solver finds on the way to the answer: its clues' entities (``clues[].entity``, bare
        titles) other than the answer and its aliases, and not named in the question (the bridge of a two-hop
        question; none for a lookup or an intersection question, whose clues are all about the answer).

        >>> Task("b", "Which planet is the fourth-largest planet in the system that Titan is the second-largest moon in?",
        ...      "Neptune", metadata={"clues": [{"entity": "Solar System"}, {"entity": "Titan (moon)"},
        ...                                     {"entity": "Neptune"}]}).subgoals
        ('Solar System',)
        """
        clues = self.metadata.get("clues")
        skip = {normalize_answer(a) for a in (self.answer, *self.aliases)}
        question = f" {normalize_answer(self.question)} "
        out: list[str] = []
        for clue in clues if isinstance(clues, list) else []:
            entity = clue.get("entity") if isinstance(clue, dict) else None
            name = bare_title(entity) if isinstance(entity, str) else ""
            key = normalize_answer(name)
            if key and key not in skip and f" {key} " not in question and name not in out:
                out.append(name)
        return tuple(out)

    @classmethod
    def from_record(cls, rec: dict[str, Any], where: str = "") -> Task:
        """Build a task from a dict with ``question`` and ``answer`` (other keys become metadata)."""
        missing = [k for k in ("question", "answer") if not isinstance(rec.get(k), str) or not rec.get(k)]
        if missing:
            raise ConfigError(f"{where}: a task needs non-empty string fields {missing}; found keys {sorted(rec)}")
        aliases = rec.get("aliases") or ()
        if isinstance(aliases, str):
            aliases = (aliases,)
        meta = {k: v for k, v in rec.items() if k not in ("id", "question", "answer", "aliases")}
        tid = str(rec.get("id") or hashlib.sha1(rec["question"].encode()).hexdigest()[:12])
        return cls(tid, rec["question"], rec["answer"], tuple(str(a) for a in aliases), meta)


#: Where the default task set of an index lives (written by ``sim-web synth``, read by the env).
DEFAULT_TASKS_FILE = "tasks/sailorfog_qa.jsonl"

#: Task sets shipped with the package, by name (``--tasks handwritten``); each is written for the bundled sample.
BUNDLED_TASK_SETS = {
    "handwritten": "handwritten.jsonl",  # multi-hop questions written by reading the sample's pages (docs/evaluation.md)
}
_BUNDLED_DIR = Path(__file__).resolve().parent / "data"


def bundled_task_path(name: str) -> Path:
    """The file of a bundled task set (:data:`BUNDLED_TASK_SETS`).

    Raises:
        ConfigError: ``name`` is not a bundled set.
    """
    if name not in BUNDLED_TASK_SETS:
        raise ConfigError(f"no bundled task set {name!r}; the bundled sets are {sorted(BUNDLED_TASK_SETS)}")
    return _BUNDLED_DIR / BUNDLED_TASK_SETS[name]


def default_task_path(index_dir: str | Path) -> Path:
    """The default synthesized task file of an index (it may not exist yet)."""
    return Path(index_dir) / DEFAULT_TASKS_FILE


def split_of(task_id: str, test_fraction: float = 0.2) -> str:
    """Deterministic held-out split from the id: ``"test"`` for about ``test_fraction`` of ids."""
    h = int(hashlib.sha1(task_id.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    return "test" if h < test_fraction else "train"


def load_tasks(spec: str | Path, split: str | None = None) -> list[Task]:
    """Load tasks from a ``.jsonl``/``.jsonl.gz``/``.json`` file or a saved Hugging Face dataset directory.

    Args:
        spec: The path.
        split: Keep only tasks whose ``split`` metadata (or :func:`split_of`) equals this.

    Returns:
        The tasks in file order.
    """
    path = Path(spec)
    if not path.exists():
        raise ConfigError(
            f"task set {spec!r} not found: expected a .jsonl/.json file or a `datasets.save_to_disk` directory"
        )
    if path.is_dir():
        import datasets

        ds = datasets.load_from_disk(str(path))
        if isinstance(ds, datasets.DatasetDict):
            ds = ds[split or "train"]
        records = list(ds)
    elif path.suffix == ".json":
        records = json.loads(path.read_text(encoding="utf-8"))
    else:
        opener = gzip.open if path.suffix == ".gz" else open
        records = []
        with opener(path, "rt", encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if line.strip():
                    try:
                        records.append(json.loads(line))
                    except json.JSONDecodeError as e:
                        raise ConfigError(f"{path}:{n}: not JSON ({e.msg}); each line must be one task object") from e
    tasks = [Task.from_record(r, f"{path} record {i}") for i, r in enumerate(records, 1)]
    if split:
        tasks = [t for t in tasks if t.metadata.get("split", split_of(t.id)) == split]
    return tasks


def resolve_tasks(index: Any, spec: str | None, split: str | None) -> list[Task]:
    """The task set named by ``spec`` for an index: the one place that resolves task sets (env, eval, TRL).

    Args:
        index: The opened :class:`wiki_index.search.index.WikiIndex`.
        spec: ``None``/``"default"`` (the env's default: the synthesized set when present, else
            derived), ``"derived"``, ``"sailorfog"``, a file path, ``NAME`` for ``<index>/tasks/NAME.jsonl``, or the
            name of a bundled set (:data:`BUNDLED_TASK_SETS`, e.g. ``"handwritten"``; an index's own file of that name
            wins).
        split: Keep this split only (``None`` = all).

    Returns:
        The tasks, in file (or page-id) order.

    Raises:
        ConfigError: When ``spec`` names nothing that exists.
    """
    synth = default_task_path(index.path)
    if spec in (None, "default"):
        spec = "sailorfog" if synth.is_file() else "derived"
    if spec == "derived":
        tasks = derive_tasks(index.store)
        return [t for t in tasks if t.metadata.get("split") == split] if split else tasks
    if spec in ("sailorfog", "synth"):
        if not synth.is_file():
            raise ConfigError(f"no synthesized task set at {synth}; run `sim-web synth` first or use --tasks derived")
        return load_tasks(synth, split)
    if Path(spec).exists():
        return load_tasks(spec, split)
    named = index.path / "tasks" / f"{spec}.jsonl"
    if named.is_file():
        return load_tasks(named, split)
    if spec in BUNDLED_TASK_SETS:
        return load_tasks(bundled_task_path(spec), split)
    raise ConfigError(
        f"the task set {spec!r} is neither a file nor a task set of {index.path} (expected default, derived, sailorfog, "
        f"a path, a name of {index.path / 'tasks'}/*.jsonl, or a bundled set: {', '.join(sorted(BUNDLED_TASK_SETS))})"
    )


def derive_tasks(store: Any, n: int = 300, min_words: int = 8, max_words: int = 40) -> list[Task]:
    """Derive "identify the subject" questions from an index's pages (the default task set).

    Args:
        store: A :class:`wiki_index.store.store.Store`.
        n: How many tasks (spread evenly over the eligible pages in page-id order).
        min_words: Shortest usable first sentence.
        max_words: Longest usable first sentence.

    Returns:
        Tasks with ``metadata = {"source": "derived-first-sentence", "page_id", "split"}``.
    """
    eligible = []
    for pid, title, lead in store.page_leads():
        sent = first_sentence(lead)
        masked = _mask(sent, title)
        if masked and min_words <= len(masked.split()) <= max_words:
            eligible.append((pid, title, masked))
    if not eligible:
        raise ConfigError("derive_tasks: no page of the index has a usable first sentence; pass a task file instead")
    step = max(1, len(eligible) // n)
    tasks = []
    for pid, title, masked in eligible[::step][:n]:
        tid = f"derived-{pid}"
        q = f'Which Wikipedia article is about the subject described here: "{masked}"? Answer with the article title.'
        tasks.append(
            Task(
                tid,
                q,
                title,
                tuple(store.aliases(pid)),
                {"source": "derived-first-sentence", "page_id": pid, "split": split_of(tid)},
            )
        )
    return tasks


def _mask(sentence: str, title: str) -> str | None:
    """Replace the subject's name in ``sentence`` by "This subject"; ``None`` if the name still leaks.

    A leak is judged as the reward judges an answer (:func:`normalize_answer`, whole words): "The arts" leaks from
    "... the creative arts", since the reward would accept "arts".
    """
    base = re.sub(r"\s*\(.*\)$", "", title).strip()
    if not base or not sentence.startswith(base):
        return None
    rest = sentence[len(base) :]
    rest = re.sub(r"^\s*\([^)]*\)", "", rest)  # drop "(born 1879)" style asides right after the name
    masked = "This subject" + rest
    if f" {normalize_answer(base)} " in f" {normalize_answer(masked)} ":
        return None
    return masked
