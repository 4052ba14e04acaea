"""SailorFog-QA-V2 on the sample index: store-backed KG, verifier semantics, gates, and the pipeline end to end."""

from __future__ import annotations

import json
import random

import pytest

from training.synth.compose.clues import Clue
from training.synth.compose.constraints import NodeSpec
from training.synth.compose.naming import leaks
from training.synth.compose.quantities import fuzz_number
from training.synth.compose.uncertainty import UncertaintyType as U
from training.synth.compose.uncertainty import fuzz_date, partial_name_clue
from training.synth.graph.kg_build import build_dense_kg
from training.synth.graph.store_source import StoreSource
from training.synth.verify.gates import Deduper, SearchGates, sim_search, sim_visit
from training.synth.verify.uniqueness import Verifier, name_fits


@pytest.fixture(scope="module")
def index(sample_index):
    from wiki_index.search.index import WikiIndex

    return WikiIndex.from_dir(sample_index)


@pytest.fixture(scope="module")
def src(index) -> StoreSource:
    return StoreSource(index.store)


@pytest.fixture(scope="module")
def verifier(src) -> Verifier:
    return Verifier(src)


@pytest.fixture(scope="module")
def backend(index):
    from sim_web.backends.sim import SimBackend

    return SimBackend(index)


def named(title: str, depth: int = 1) -> NodeSpec:
    return NodeSpec(title, Clue(title, U.OBFUSCATED_ENTITY, title, (("source", "title"),)), depth=depth)


# --- the store as a knowledge source ---------------------------------------------------------------------


def test_store_source_edges_carry_provenance(src):
    assert src.preloaded and src.n_pages > 10_000
    assert src.resolve("AdolfHitler") == src.resolve("Adolf Hitler")  # redirects resolve
    einstein = dict(src.neighbours("Albert Einstein"))  # a full article: wikilinks
    rel = einstein["General relativity"]
    assert rel["kind"] == "link" and rel["page"] == "Albert Einstein" and isinstance(rel["ordinal"], int)
    text = dict(src.passages(src.resolve("Albert Einstein")))[rel["passage"]]
    assert "General relativity" in text and rel["evidence"] in text
    paris = dict(src.neighbours("Paris"))  # a lead: title mentions
    assert paris["France"]["kind"] == "mention" and paris["France"]["passage"].startswith(str(src.resolve("Paris")))
    capital = dict(src.neighbours("Algeria"))["Algiers"]  # an infobox field naming a page
    assert (capital["kind"], capital["relation"], capital["evidence"]) == ("infobox", "capital", "capital = Algiers")
    ent = src.entity("Albert Einstein")
    assert {(d.attr, d.year) for d in ent.dates} >= {("birth_date", 1879), ("death_date", 1955)}
    assert not any(n.attr in ("image", "caption") for n in ent.numbers)  # layout fields give no facts
    assert src.entity("No such page at all") is None and src.neighbours("No such page at all") == []
    stats = src.node_stats("Paris")
    assert stats["corpus_degree"] == src.degree(stats["page_id"]) >= len(paris) and stats["url"].endswith("/Paris")


def test_store_kg_is_dense_and_deterministic(src):
    seeds = ["Albert Einstein", "Paris", "Algeria", "Not a page"]
    a = build_dense_kg(seeds, src.neighbours, src.entity, max_nodes=300, rng=random.Random(4))
    b = build_dense_kg(seeds, src.neighbours, src.entity, max_nodes=300, rng=random.Random(4))
    assert sorted(a.graph.edges) == sorted(b.graph.edges) and len(a) == 300
    assert a.report.seeds_missing == 1 and a.report.dense_edges > a.report.tree_edges
    assert a.report.after.cycle_rank > 0 == a.report.before.cycle_rank
    kinds = {d["kind"] for _, _, d in a.graph.edges(data=True)}
    assert kinds == {"link", "mention", "infobox"}


# --- every transform is true of the real fact it came from (verifier semantics) --------------------------


def test_fuzzed_real_facts_hold_for_their_entity(src, verifier):
    dates = numbers = 0
    rng = random.Random(0)
    for title in ("Albert Einstein", "Paris", "Algeria", "Abraham Lincoln", "Aristotle", "Amsterdam", "Autism"):
        ent = src.entity(title)
        for d in ent.dates:
            for _ in range(3):
                clue = fuzz_date(d, rng=rng)
                rec = dict(clue.record)
                assert int(rec["lo"]) <= d.year <= int(rec["hi"]), (d, clue)
                assert verifier.fact_holds(ent, Clue(clue.text, U.FUZZY_DATE, d.text, clue.record))
                dates += 1
        for n in ent.numbers:
            for mode in ("about", "range", "magnitude"):
                clue = fuzz_number(n, mode=mode, rng=rng)
                assert verifier.fact_holds(ent, clue), (n, clue)
                numbers += 1
        for mode in ("initial", "prefix", "length", "words"):
            assert name_fits(partial_name_clue(title, mode=mode), title)
    assert dates > 20 and numbers > 20
    paris = src.entity("Paris")
    pop = next(n for n in paris.numbers if n.attr == "population" and n.value == 2.04e6)
    assert fuzz_number(pop, mode="about").text == "about 2 million"
    far = fuzz_number(pop.__class__("population", "9 million", 9e6), mode="about")
    assert not verifier.fact_holds(paris, far) or any(7e6 <= n.value <= 12.6e6 for n in paris.numbers)


# --- uniqueness --------------------------------------------------------------------------------------------


def test_uniqueness_catches_ambiguous_and_accepts_a_pinned_answer(src, verifier):
    # "Which city, whose article mentions Turkey, has a name beginning with A?" fits three cities of the sample
    initial = partial_name_clue("Adana", mode="initial")
    root = NodeSpec("Adana", relations=[("mention", "to_anchor", named("Turkey"))], facts=[initial])
    u = verifier.check(root, "city")
    assert (u.unique, u.reason, u.candidates) == (False, "ambiguous", 3) and "Antalya" in u.others
    # the type noun is a constraint too: without it more pages fit
    assert verifier.check(root, "").candidates > 3
    # a blurred population range separates Adana (1.8 million) from Antalya (1.5 / 2.7 million)
    pop = next(n for n in src.entity("Adana").numbers if n.attr == "population")
    rng = Clue(
        "with a population of between 1.6 and 2 million",
        U.FUZZY_NUMBER,
        pop.text,
        (("attr", "population"), ("mode", "range"), ("lo", "1600000.0"), ("hi", "2000000.0")),
    )
    pinned = NodeSpec("Adana", relations=root.relations, facts=[initial, rng])
    assert verifier.check(pinned, "city").reason == "unique"
    # a clue that is false of the answer is caught as inconsistent, not passed
    wrong = Clue('whose name begins with the letter "Z"', U.PARTIAL_NAME, "Adana", (("mode", "initial"),))
    assert verifier.check(NodeSpec("Adana", relations=root.relations, facts=[wrong]), "city").reason == "inconsistent"
    # nothing bounding the candidates: unbounded, never unique
    vague = NodeSpec("Adana", facts=[initial])
    assert verifier.check(vague, "city").reason == "unbounded"


def test_descriptions_match_every_page_with_the_same_description(verifier, src):
    # Adana and Antalya are both "City in Turkey": the phrase cannot tell them apart
    clue = Clue("a city in Turkey", U.OBFUSCATED_ENTITY, "Adana", (("source", "description"),))
    cands = {src.title(p) for p in verifier.identity_candidates(clue, ("Paris",))}
    assert {"Adana", "Antalya"} <= cands
    # a relation through that phrase: "mentioned in the article on a city in Turkey"
    root = NodeSpec("Mediterranean Sea", relations=[("mention", "from_anchor", NodeSpec("Adana", clue, depth=1))])
    u = verifier.check(root)
    assert u.reason == "ambiguous" and "Anatolia" in u.others  # Antalya's article mentions Anatolia


# --- search gates --------------------------------------------------------------------------------------------


def test_sim_search_matches_the_backend_and_gates_work(src, backend):
    search = sim_search(backend)
    for q in ("German-born theoretical physicist", "capital of France", "Religion", "a b c"):
        assert search(q) == [r.title for r in backend.search(q, 10)]
    assert search("religion")[0] == "Religion" and search("Paris")[0] == "Paris"  # navigational queries
    gates = SearchGates(search, sim_visit(backend))
    lead = src.row(src.resolve("Paris")).lead
    assert gates.shortcut(lead[:200], "Paris") and not gates.shortcut("capital", "Paris")
    # leaves first: "a German-born theoretical physicist" is found by its description, then the answer
    # (a page his article mentions) through his name
    phys = NodeSpec(
        "Albert Einstein",
        Clue(
            "a German-born theoretical physicist", U.OBFUSCATED_ENTITY, "Albert Einstein", (("source", "description"),)
        ),
        depth=1,
    )
    root = NodeSpec("General relativity", relations=[("link", "from_anchor", phys)])
    import networkx as nx

    ret = gates.retrieval(root, nx.Graph([("General relativity", "Albert Einstein")]), "theory")
    assert ret.answerable and ret.order == ["Albert Einstein", "General relativity"]
    for title, q in ret.queries.items():
        assert title in [r.title for r in backend.search(q, 10)]
    d = Deduper()
    assert (
        not d.seen("Which city?", "A", ["A", "B"])
        and d.seen("which  CITY", "X", ["X"])
        and d.seen("Other?", "A", ["B", "A"])
    )


# --- end to end --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def run(synth_run):
    return synth_run


def test_pipeline_records_pass_every_gate(run, src, backend, index):
    from sim_web.env.tasks import split_of

    records, rep = run
    assert len(records) == 12 == rep.funnel["accepted"]
    assert rep.funnel["unique"] <= rep.funnel["checked_unique"] and rep.funnel["checked_answerable"] >= 12
    assert len({r["id"] for r in records}) == 12 and len({r["question"].lower() for r in records}) == 12
    for r in records:
        assert not leaks(r["question"], [r["answer"], *r["aliases"]]), r["question"]
        assert r["answer"].lower() not in r["question"].lower() or len(r["answer"]) < 6
        assert r["split"] == split_of(r["id"], 0.5) and r["generator"] == "template" and r["seed"] == 0
        assert not r["shortcut"] and r["verification"]["unique"] and r["weight"] == 1.0
        assert r["answer_url"] == f"https://en.wikipedia.org/wiki/{r['answer'].replace(' ', '_')}"
        nodes = r["subgraph"]["nodes"]
        assert r["target"] == r["answer"] in nodes and r["answer"] in r["subgraph"]["orbits"][r["target_orbit"]]
        assert [e["title"] for e in r["evidence"]] == nodes
        for e in r["evidence"]:
            pid = src.resolve(e["title"])
            assert e["docids"] and set(e["docids"]) <= {d for d, _ in src.passages(pid)}
        for e in r["subgraph"]["edges"]:
            assert {e["source"], e["target"]} <= set(nodes) and e["provenance"]["page"] == e["source"]
            assert e["kind"] in ("link", "mention", "infobox")
        diff = r["difficulty"]
        assert diff["nodes"] == len(nodes) and diff["edges"] == len(r["subgraph"]["edges"])
        assert diff["level"] in ("easy", "medium", "hard") and 1 <= diff["hops"] < diff["nodes"]
        assert {c["entity"] for c in r["clues"]} == set(nodes)
        for c in r["clues"]:  # each clue's query returns its entity's page in the simulator's top 10
            assert c["entity"] in [x.title for x in backend.search(c["query"], 10)], c
        assert set(r["uncertainty_types"]) <= {t.value for t in U}


def test_pipeline_is_deterministic_and_seed_dependent(run, sample_index, small_config):
    from training.synth.pipeline import generate

    records, _ = run
    assert generate(sample_index, n=12, seed=0, config=small_config) == records
    other = generate(sample_index, n=4, seed=1, config=small_config)
    assert {r["question"] for r in other}.isdisjoint({r["question"] for r in records})


def test_outputs_load_in_the_env_hf_and_duckdb(run, sample_index, tmp_path):
    import duckdb
    import gymnasium as gym

    from sim_web.env import EnvConfig
    from sim_web.env.tasks import load_tasks
    from training.synth.outputs.write import write_outputs

    records, rep = run
    paths = write_outputs(records, rep, tmp_path / "qa.jsonl")
    assert load_tasks(paths["jsonl"])[0].metadata["clues"] == records[0]["clues"]
    n_test = sum(r["split"] == "test" for r in records)
    assert 0 < n_test < 12
    hf_test = load_tasks(paths["hf"], split="test")
    assert len(hf_test) == n_test and len(load_tasks(paths["hf"], split="train")) == 12 - n_test
    env = gym.make("WebResearch-v0", config=EnvConfig(index_dir=str(sample_index), tasks=str(paths["jsonl"])))
    obs, info = env.reset(seed=0)
    assert {t.id for t in env.unwrapped.tasks} == {r["id"] for r in records}
    assert any(r["question"] in obs for r in records) and info["task_id"] in {r["id"] for r in records}
    con = duckdb.connect(str(paths["duckdb"]), read_only=True)
    assert con.execute("SELECT count(*) FROM tasks").fetchone()[0] == 12
    assert con.execute("SELECT count(DISTINCT task_id) FROM clues").fetchone()[0] == 12
    back = json.loads(con.execute("SELECT record FROM tasks WHERE id = ?", [records[0]["id"]]).fetchone()[0])
    assert back == records[0]
    card = json.loads(paths["card_json"].read_text())
    assert card["records"] == 12 and sum(card["difficulty"].values()) == 12
    assert 0 < card["gates"]["uniqueness_pass_rate"] <= 1 and 0 <= card["gates"]["shortcut_rate"] < 1
    assert "uniqueness pass rate" in paths["card_md"].read_text()


def test_flattened_clues_cover_the_draft(run):
    records, _ = run
    for r in records:
        types = {c["type"] for c in r["clues"]}
        assert "type" in types and (types & {"named", "obfuscated_entity"})
        assert "relational" in types or "counting" in types


def test_records_carry_typed_relations_with_their_sentence_and_measured_difficulty(run, src):
    from training.synth.extract.relations import is_text_relation
    from training.synth.verify.quality import nesting

    records, rep = run
    assert rep.kg["typed_relations"] > 0
    text = [e for r in records for e in r["subgraph"]["edges"] if is_text_relation(e["relation"])]
    assert text
    for e in text:  # provenance: the sentence stating the relation is on the source page and names the target
        passage = dict(src.passages(src.resolve(e["source"])))[e["provenance"]["passage"]]
        assert e["provenance"]["evidence"][:200] in passage
    typed = [c for r in records for c in r["clues"] if c["type"] == "relational" and is_text_relation(c["relation"])]
    assert typed and all("{" not in c["text"] for c in typed)
    for r in records:
        d = r["difficulty"]
        assert d["oracle_searches"] >= 1 and d["search_tries"] >= 1
        assert (d["level"] == "easy") == d["top10_clue"]
        assert d["level"] != "hard" or not (d["top10_question"] or d["top10_clue"])
        assert nesting(r["question"]) <= 2 and r["question"].endswith(("?", "."))


def test_more_facts_are_added_only_when_the_answer_is_not_yet_unique(src, verifier):
    # "This city is mentioned in the article on Turkey" fits several cities; the initial, then a population range
    # single Adana out, and the check says how many of the extra facts it took
    initial = partial_name_clue("Adana", mode="initial")
    pop = next(n for n in src.entity("Adana").numbers if n.attr == "population")
    rng = Clue(
        "with a population of between 1.6 and 2 million",
        U.FUZZY_NUMBER,
        pop.text,
        (("attr", "population"), ("mode", "range"), ("lo", "1600000.0"), ("hi", "2000000.0")),
    )
    root = NodeSpec("Adana", relations=[("mention", "to_anchor", named("Turkey"))])
    u, k = verifier.check_extending(root, "city", (initial, rng, partial_name_clue("Adana", mode="length")))
    assert (u.reason, k) == ("unique", 2)
    u, k = verifier.check_extending(root, "city", (initial,))
    assert (u.reason, k) == ("ambiguous", 1) and not u.unique
