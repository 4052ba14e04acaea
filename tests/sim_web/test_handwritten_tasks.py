"""The bundled hand-written task set (``--tasks handwritten``): well-formed, true to the sample's pages, findable.

Every question was written by reading the sample's pages (docs/evaluation.md, "Hand-written questions"); these tests
re-read those pages: each supporting sentence is on its page verbatim, the answer is read from a supporting sentence,
no answer leaks into its question, and each recorded search shows its page among the first five results.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import gymnasium as gym
import pytest

from sim_web.backends.sim import SimBackend
from sim_web.env import EnvConfig
from sim_web.env.rewards import normalize_answer
from sim_web.env.tasks import BUNDLED_TASK_SETS, bundled_task_path, load_tasks, resolve_tasks
from simweb_core.errors import ConfigError
from wiki_index.search.index import WikiIndex

ROOT = Path(__file__).resolve().parents[2]
PATH = bundled_task_path("handwritten")
RECORDS = [json.loads(line) for line in PATH.read_text(encoding="utf-8").splitlines() if line.strip()]
FORMS = {"description", "clue-after", "number", "date"}


def _words(text: str) -> str:
    return f" {normalize_answer(text)} "


@pytest.fixture(scope="module")
def index(sample_index):
    return WikiIndex.from_dir(sample_index)


def test_the_set_has_at_least_sixty_well_formed_held_out_records():
    tasks = load_tasks(PATH)
    assert len(tasks) == len(RECORDS) >= 60
    assert len({t.id for t in tasks}) == len(tasks) and len({t.question for t in tasks}) == len(tasks)
    for rec, task in zip(RECORDS, tasks, strict=True):
        assert task.id == rec["id"] and task.id.startswith("hw-")
        assert task.metadata["split"] == "test" and task.metadata["source"] == "handwritten", task.id
        assert rec["form"] in FORMS, task.id
        chain = rec["chain"]
        assert rec["hops"] == len(chain) == len(set(chain)) and 1 <= len(chain) <= 3, task.id
        assert [s["title"] for s in rec["support"]] and {s["title"] for s in rec["support"]} == set(chain), task.id
        assert [s["title"] for s in rec["searches"]] == chain, task.id  # one search per page, in reading order
        assert all(isinstance(a, str) and a for a in task.aliases), task.id


def test_the_set_mixes_hops_and_forms():
    hops = [r["hops"] for r in RECORDS]
    assert sum(h >= 2 for h in hops) > len(hops) / 2 and 3 in hops
    assert {r["form"] for r in RECORDS} == FORMS


def test_no_answer_or_alias_occurs_in_its_question():
    for rec in RECORDS:
        q = _words(rec["question"])
        assert not [a for a in [rec["answer"], *rec["aliases"]] if _words(a) in q], rec["id"]


def test_each_answer_is_read_from_a_supporting_sentence_of_the_last_page():
    for rec in RECORDS:
        if rec["answer_page"] == rec["chain"][-1]:  # "which opera is it?": the answer is the page the clues lead to
            continue
        last = [_words(s["sentence"]) for s in rec["support"] if s["title"] == rec["chain"][-1]]
        golds = [rec["answer"], *rec["aliases"]]
        assert any(_words(g) in s for g in golds for s in last), rec["id"]


def test_every_supporting_sentence_is_verbatim_on_its_page(index):
    for rec in RECORDS:
        for sup in rec["support"]:
            page = index.store.page_by_title(sup["title"])
            assert page is not None and page.title == sup["title"], (rec["id"], sup["title"])
            assert sup["sentence"] in page.text, (rec["id"], sup["title"], sup["sentence"][:60])


def test_every_answer_page_exists(index):
    pages = [r["answer_page"] for r in RECORDS if r["answer_page"]]
    assert len(pages) >= 20
    assert [p for p in pages if index.store.page_by_title(p) is None] == []


def test_each_recorded_search_shows_its_page_in_the_first_five_results(index):
    backend = SimBackend(index)
    missed = []
    for rec in RECORDS:
        for s in rec["searches"]:
            titles = [r.title for r in backend.search(s["query"], 5)]
            if s["title"] not in titles:
                missed.append((rec["id"], s["query"], titles))
    assert missed == []


def test_the_set_resolves_by_name_for_the_env_and_the_harness(index, sample_index):
    tasks = resolve_tasks(index, "handwritten", "test")
    assert [t.id for t in tasks] == [r["id"] for r in RECORDS]
    assert resolve_tasks(index, "handwritten", "train") == []  # held out: nothing of it is a training task
    env = gym.make("WebResearch-v0", config=EnvConfig(index_dir=str(sample_index), tasks="handwritten", split="test"))
    obs, info = env.reset(seed=3)
    assert any(r["question"] in obs for r in RECORDS)
    env.close()


def test_an_unknown_name_lists_the_bundled_sets(index):
    with pytest.raises(ConfigError, match="handwritten"):
        resolve_tasks(index, "no-such-set", None)
    with pytest.raises(ConfigError, match="bundled sets"):
        bundled_task_path("no-such-set")


def test_the_bundled_sets_are_package_data():
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-data"]
    shipped = {p.name for g in data["sim_web"] for p in (ROOT / "sim_web").glob(g)}
    assert shipped >= set(BUNDLED_TASK_SETS.values())
