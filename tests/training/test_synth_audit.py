"""The reader's audit of SailorFog-QA (training.synth.outputs.audit) and its committed data.

The committed audit (tests/data/audit/sailorfog-<commit>.jsonl) must follow the protocol's schema, quote every
supporting sentence as its page in the sample store has it, and give the figures docs/evaluation.md reports; the
worksheet is a deterministic, stratified draw.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from training.synth.outputs.audit import (
    VERDICTS,
    agreement,
    draft,
    main,
    render_summary,
    sheet_markdown,
    stratified_sample,
    summarise,
    summarise_records,
    support_problems,
    validate,
    worksheet,
)

ROOT = Path(__file__).resolve().parents[2]
AUDIT_DIR = ROOT / "tests" / "data" / "audit"
AUDIT = AUDIT_DIR / "sailorfog-9bbf685.jsonl"  # before clue verification
AFTER = AUDIT_DIR / "sailorfog-1265443.jsonl"  # after clue verification (training/synth/verify/clue_check.py)
THIRD = AUDIT_DIR / "sailorfog-67b89ee.jsonl"  # after the fixes of the second reading's failures
FOURTH = AUDIT_DIR / "sailorfog-527d63d.jsonl"  # after the fixes of the third reading's
FIFTH = AUDIT_DIR / "sailorfog-c77c071.jsonl"  # after the fixes of the fourth reading's
SIXTH = AUDIT_DIR / "sailorfog-4241428.jsonl"  # after the fifth reading's fixes and the answers no reader can pin
SEVENTH = AUDIT_DIR / "sailorfog-ad7e397.jsonl"  # after the sixth reading's fixes
EIGHTH = AUDIT_DIR / "sailorfog-410085d.jsonl"  # after the look-alikes on the question's pages
NINTH = AUDIT_DIR / "sailorfog-20707d3.jsonl"  # after the eighth reading's fixes
TENTH = AUDIT_DIR / "sailorfog-5369446.jsonl"  # after the ninth reading's fixes
ELEVENTH = AUDIT_DIR / "sailorfog-ca08a3e.jsonl"  # after the tenth reading's fixes
TWELFTH = AUDIT_DIR / "sailorfog-f6fef4b.jsonl"  # after the eleventh reading's fixes
THIRTEENTH = AUDIT_DIR / "sailorfog-b5b4507.jsonl"  # after the twelfth reading's fixes
FOURTEENTH = AUDIT_DIR / "sailorfog-0faba1e.jsonl"  # after the thirteenth reading's fixes
FIFTEENTH = AUDIT_DIR / "sailorfog-f0f6de3.jsonl"  # after the relation_active check (a new draw of the default set)
AUDITS = pytest.mark.parametrize(
    "audit",
    [
        AUDIT,
        AFTER,
        THIRD,
        FOURTH,
        FIFTH,
        SIXTH,
        SEVENTH,
        EIGHTH,
        NINTH,
        TENTH,
        ELEVENTH,
        TWELFTH,
        THIRTEENTH,
        FOURTEENTH,
        FIFTEENTH,
    ],
    ids=[
        "before-9bbf685",
        "after-1265443",
        "third-67b89ee",
        "fourth-527d63d",
        "fifth-c77c071",
        "sixth-4241428",
        "seventh-ad7e397",
        "eighth-410085d",
        "ninth-20707d3",
        "tenth-5369446",
        "eleventh-ca08a3e",
        "twelfth-f6fef4b",
        "thirteenth-b5b4507",
        "fourteenth-0faba1e",
        "fifteenth-f0f6de3",
    ],
)
#: (first reader's audit, a second reader's records of 17 or 18 of its questions)
SECOND_READERS = pytest.mark.parametrize(
    ("audit", "second"),
    [
        (SIXTH, AUDIT_DIR / "agreement" / "sailorfog-4241428-second-reader.jsonl"),
        (SEVENTH, AUDIT_DIR / "agreement" / "sailorfog-ad7e397-second-reader.jsonl"),
        (EIGHTH, AUDIT_DIR / "agreement" / "sailorfog-410085d-second-reader.jsonl"),
        (NINTH, AUDIT_DIR / "agreement" / "sailorfog-20707d3-second-reader.jsonl"),
        (TENTH, AUDIT_DIR / "agreement" / "sailorfog-5369446-second-reader.jsonl"),
        (ELEVENTH, AUDIT_DIR / "agreement" / "sailorfog-ca08a3e-second-reader.jsonl"),
        (TWELFTH, AUDIT_DIR / "agreement" / "sailorfog-f6fef4b-second-reader.jsonl"),
        (THIRTEENTH, AUDIT_DIR / "agreement" / "sailorfog-b5b4507-second-reader.jsonl"),
        (FOURTEENTH, AUDIT_DIR / "agreement" / "sailorfog-0faba1e-second-reader.jsonl"),
        (FIFTEENTH, AUDIT_DIR / "agreement" / "sailorfog-f0f6de3-second-reader.jsonl"),
    ],
    ids=[
        "sixth",
        "seventh",
        "eighth",
        "ninth",
        "tenth",
        "eleventh",
        "twelfth",
        "thirteenth",
        "fourteenth",
        "fifteenth",
    ],
)
DOCS = ROOT / "docs" / "evaluation.md"


def _records(audit: Path = AUDIT) -> list[dict]:
    return [json.loads(line) for line in audit.read_text(encoding="utf-8").splitlines() if line.strip()]


@AUDITS
def test_audit_file_follows_the_schema(audit):
    recs = _records(audit)
    assert len(recs) >= 100
    assert len({r["id"] for r in recs}) == len(recs), "a question is audited once"
    assert [p for r in recs for p in validate(r)] == []
    for r in recs:
        assert r["level"] in ("easy", "medium", "hard")
        assert r["question"] and r["answer"]
        for c in r["clues"]:
            assert c["verdict"] in VERDICTS
            assert set(c) >= {"text", "type", "entity", "verdict", "page", "support", "why"}
        if not r["unique"]:
            assert r["unique_why"], r["id"]


@AUDITS
def test_every_quoted_support_is_on_its_page(sample_index, audit):
    assert support_problems(audit, sample_index) == []


def test_support_check_catches_a_misquote(sample_index, tmp_path):
    rec = _records()[0]
    claim = next(c for c in rec["clues"] if c["verdict"] == "true")
    claim["support"] = claim["support"] + " and this sentence is not on the page"
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(rec) + "\n", encoding="utf-8")
    problems = support_problems(path, sample_index)
    assert len(problems) == 1 and rec["id"] in problems[0]


@AUDITS
def test_summary_figures_recomputed_by_hand(audit):
    recs = _records(audit)
    figs = summarise(audit)
    claims = [c["verdict"] for r in recs for c in r["clues"] if c["type"] != "named"]
    counts = Counter(claims)
    assert figs["all"].clue_precision.k == counts["true"] and figs["all"].clue_precision.n == len(claims)
    assert figs["all"].false.k == counts["false"] and figs["all"].garbled.k == counts["garbled"]
    every_true = sum(all(c["verdict"] in ("true", "no_claim") for c in r["clues"]) for r in recs)
    assert figs["all"].every_clue_true.k == every_true
    assert figs["all"].unique.k == sum(r["unique"] for r in recs)
    assert figs["all"].fair.k == sum(r["fair"] for r in recs)
    assert figs["all"].questions == len(recs) == sum(figs[lv].questions for lv in figs if lv != "all")
    for lv in ("easy", "medium", "hard"):
        sub = [r for r in recs if r["level"] == lv]
        assert figs[lv].fair.k == sum(r["fair"] for r in sub) and figs[lv].fair.n == len(sub)
        assert figs[lv].unique.k == sum(r["unique"] for r in sub)
    lo, hi = figs["all"].clue_precision.interval
    value = figs["all"].clue_precision.value
    assert lo < value and (value < hi or value == pytest.approx(hi) == 1.0)  # Wilson's upper end is 1 at k = n


@AUDITS
def test_docs_report_the_committed_audit(audit):
    assert render_summary(summarise(audit)) in DOCS.read_text(encoding="utf-8")


@SECOND_READERS
def test_a_second_reader_follows_the_schema_quotes_the_pages_and_the_docs_print_the_agreement(
    sample_index, capsys, audit, second
):
    recs = _records(second)
    assert len(recs) in (17, 18) and [p for r in recs for p in validate(r)] == []
    assert support_problems(second, sample_index) == []
    rates = agreement(_records(audit), recs)
    assert rates["clue true"].n == sum(c["verdict"] != "no_claim" for r in recs for c in r["clues"])
    assert main(["agreement", str(audit), str(second)]) == 0
    printed = capsys.readouterr().out.strip()
    assert printed == "; ".join(f"{k}: {v}" for k, v in rates.items()) and printed in DOCS.read_text(encoding="utf-8")


def test_agreement_counts_what_the_readers_share_and_refuses_other_worksheets():
    first = _records(FIFTH)[:3]
    second = [json.loads(json.dumps(r)) for r in first]
    second[0]["unique"] = not second[0]["unique"]
    claim = next(c for c in second[1]["clues"] if c["verdict"] == "true")
    claim["verdict"] = "garbled"
    rates = agreement(first, second)
    assert (rates["unique"].k, rates["unique"].n) == (2, 3)
    claims = sum(c["verdict"] != "no_claim" for r in first for c in r["clues"])
    assert (rates["clue true"].k, rates["clue true"].n) == (claims - 1, claims)
    second[2]["clues"] = second[2]["clues"][1:]
    with pytest.raises(ValueError, match="same worksheet"):
        agreement(first, second)


def test_after_audit_draws_the_same_sample_as_the_before_audit():
    """Same n and seed: 100 questions, levels in proportion to the new set's 148 / 141 / 11."""
    recs = _records(AFTER)
    drawn = Counter(t["difficulty"]["level"] for t in stratified_sample(_tasks(148, 141, 11), 100, seed=0))
    assert Counter(r["level"] for r in recs) == drawn == {"easy": 49, "medium": 47, "hard": 4}


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        (lambda r: r["clues"][1].update(support=""), "quotes its supporting sentence"),
        (lambda r: r["clues"][0].update(verdict="true"), "only a `named` clue has no claim"),
        (lambda r: r["clues"][1].update(verdict="false", why=""), "says why"),
        (lambda r: r["clues"][1].update(verdict="maybe"), "is not one of"),
        (lambda r: r.update(fair=True, unique=False, unique_why="x"), "a fair question is unique"),
        (lambda r: r.update(unique=False, unique_why="", fair=False, fair_why="x"), "names what else fits"),
        (lambda r: r.update(fair="yes"), "must be true or false"),
    ],
)
def test_validate_names_what_is_wrong(change, fragment):
    rec = {
        "id": "q",
        "level": "easy",
        "unique": True,
        "fair": True,
        "clues": [
            {"type": "named", "verdict": "no_claim"},
            {"type": "type", "verdict": "true", "page": "Peru", "support": "Peru is a country", "why": ""},
        ],
    }
    assert validate(rec) == []
    change(rec)
    assert any(fragment in p for p in validate(rec)), validate(rec)
    with pytest.raises(ValueError, match="schema"):
        summarise_records([rec])


def _tasks(n_easy: int, n_medium: int, n_hard: int) -> list[dict]:
    levels = ["easy"] * n_easy + ["medium"] * n_medium + ["hard"] * n_hard
    return [{"id": f"t{i:03d}", "difficulty": {"level": lv}} for i, lv in enumerate(levels)]


def test_stratified_sample_is_proportional_deterministic_and_grows_by_prefix():
    tasks = _tasks(152, 145, 3)
    draw = stratified_sample(tasks, 100, seed=0)
    assert Counter(t["difficulty"]["level"] for t in draw) == {"easy": 51, "medium": 48, "hard": 1}
    assert draw == stratified_sample(list(reversed(tasks)), 100, seed=0), "input order does not matter"
    assert [t["id"] for t in draw] != [t["id"] for t in stratified_sample(tasks, 100, seed=1)]
    bigger = stratified_sample(tasks, 200, seed=0)
    for lv in ("easy", "medium"):
        small = [t["id"] for t in draw if t["difficulty"]["level"] == lv]
        big = [t["id"] for t in bigger if t["difficulty"]["level"] == lv]
        assert big[: len(small)] == small
    assert len(stratified_sample(tasks, 10_000, seed=0)) == len(tasks)
    assert Counter(t["difficulty"]["level"] for t in stratified_sample(tasks, 3, seed=0)) == {
        "easy": 1,
        "medium": 1,
        "hard": 1,
    }


def _task_file(tmp_path: Path) -> Path:
    """Task records rebuilt from the audit (ids, levels, clues, pages): real sample pages, no generator run."""
    out = []
    for r in _records()[:30]:
        nodes = list(dict.fromkeys([c["entity"] for c in r["clues"]] + [r["answer"]]))
        clues = [{k: c[k] for k in ("text", "type", "entity")} | {"relation": ""} for c in r["clues"]]
        out.append(
            {
                "id": r["id"],
                "difficulty": {"level": r["level"]},
                "question": r["question"],
                "answer": r["answer"],
                "clues": clues,
                "subgraph": {"nodes": nodes, "edges": []},
            }
        )
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in out), encoding="utf-8")
    return path


def test_worksheet_is_deterministic_and_reads_the_pages(sample_index, tmp_path):
    tasks = _task_file(tmp_path)
    a = worksheet(tasks, 8, seed=3, index_dir=sample_index)
    b = worksheet(tasks, 8, seed=3, index_dir=sample_index)
    assert [s.id for s in a] == [s.id for s in b] and [sheet_markdown(s) for s in a] == [sheet_markdown(s) for s in b]
    assert len(a) == 8
    sheet = a[0]
    page = sheet.pages[sheet.answer]
    assert not page.get("missing") and page["text"], "the answer's page text comes from the store"
    md = sheet_markdown(sheet, max_chars=50)
    assert sheet.question in md and f"### {sheet.answer}" in md
    skeleton = draft(sheet)
    assert [c["verdict"] for c in skeleton["clues"]] == [
        "no_claim" if c["type"] == "named" else None for c in sheet.clues
    ]


def test_cli_writes_a_worksheet_and_prints_the_summary(sample_index, tmp_path, capsys):
    out = tmp_path / "ws"
    assert (
        main(["worksheet", str(_task_file(tmp_path)), "--n", "4", "--index", str(sample_index), "--out", str(out)]) == 0
    )
    assert (out / "worksheet.md").read_text(encoding="utf-8").count("## sfqa-") == 4
    assert len((out / "draft.jsonl").read_text(encoding="utf-8").splitlines()) == 4
    assert main(["summary", str(AUDIT)]) == 0
    assert "clue precision (true)" in capsys.readouterr().out


def test_worksheet_explains_a_missing_store(tmp_path):
    tasks = _task_file(tmp_path)
    with pytest.raises(FileNotFoundError, match="no page store"):
        worksheet(tasks, 2, seed=0, index_dir=tmp_path)


def test_bad_task_files_get_a_clear_error(sample_index, tmp_path):
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"id": "a"}\nnot json\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"broken.jsonl:2: not a JSON object"):
        worksheet(broken, 2, seed=0, index_dir=sample_index)
    partial = tmp_path / "partial.jsonl"
    partial.write_text('{"id": "a", "question": "q"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"lack one of \['answer', 'clues', 'id', 'question'\]"):
        worksheet(partial, 2, seed=0, index_dir=sample_index)


def test_the_card_s_reading_is_the_latest_committed_audit():
    from training.synth.outputs.audit_summary import latest_reading, render_reading

    reading = latest_reading()
    assert ROOT / reading["audit"] == FIFTEENTH  # the last reading registered above
    figs = summarise(FIFTEENTH)["all"]
    assert reading["questions"] == figs.questions
    for key in ("clue_precision", "every_clue_true", "unique", "fair"):
        rate = getattr(figs, key)
        assert reading[key] == [rate.k, rate.n], key
    text = "\n".join(render_reading(reading))
    assert f"unique for a reader {figs.unique}" in text and reading["commit"] in FIFTEENTH.name
