"""The generator identity of a task set and ``sim-web synth --if-stale`` (what the Makefile runs)."""

from __future__ import annotations

import json

import pytest

from training.synth.outputs.identity import (
    SYNTH_ROOT,
    generator_id,
    index_identity,
    source_digest,
    stale_reason,
)

CONFIG = {"n": 3, "seed": 2, "max_nodes": 400, "sizes": (3, 4), "progress": False}
SMALL = ["--n", "3", "--max-nodes", "400", "--n-seeds", "10", "--seed", "2", "--quiet"]


@pytest.fixture
def tree(tmp_path):
    """A small source tree and an index folder with a manifest."""
    src = tmp_path / "synth"
    (src / "verify").mkdir(parents=True)
    (src / "pipeline.py").write_text("def run():\n    return 1\n")
    (src / "verify" / "gate.py").write_text("LIMIT = 3\n")
    (src / "verify" / "notes.txt").write_text("not code\n")
    index = tmp_path / "index"
    index.mkdir()
    manifest = {"content_sha256": "ab" * 32, "chunk": {"size": 200}, "bm25": {"k1": 0.9}, "counts": {"pages": 5}}
    (index / "manifest.json").write_text(json.dumps({**manifest, "built_at": "2026-01-01T00:00:00"}))
    return src, index


def test_the_id_is_stable_and_follows_every_source_byte_and_path(tree):
    src, index = tree
    first = generator_id(CONFIG, index, root=src)
    assert first == generator_id(dict(CONFIG), index, root=src)
    assert len(first) == 16 and int(first, 16) >= 0
    (src / "verify" / "notes.txt").write_text("still not code\n")  # only *.py files count
    assert generator_id(CONFIG, index, root=src) == first
    (src / "verify" / "gate.py").write_text("LIMIT = 4\n")
    changed = generator_id(CONFIG, index, root=src)
    assert changed != first
    (src / "verify" / "gate.py").write_text("LIMIT = 3\n")
    assert generator_id(CONFIG, index, root=src) == first
    (src / "verify" / "gate.py").rename(src / "verify" / "gates.py")  # same bytes, another path
    assert generator_id(CONFIG, index, root=src) != first


def test_the_id_follows_the_settings_but_not_the_progress_bar(tree):
    src, index = tree
    first = generator_id(CONFIG, index, root=src)
    assert generator_id({**CONFIG, "seed": 3}, index, root=src) != first
    assert generator_id({**CONFIG, "sizes": [3, 4]}, index, root=src) == first  # a tuple as the card's JSON has it
    assert generator_id({**CONFIG, "progress": True, "llm": {"model": "m"}}, index, root=src) == first


def test_the_id_follows_the_index_content_not_its_build_time(tree, tmp_path):
    src, index = tree
    first = generator_id(CONFIG, index, root=src)
    manifest = json.loads((index / "manifest.json").read_text())
    (index / "manifest.json").write_text(json.dumps({**manifest, "built_at": "2027-01-01T00:00:00"}))
    assert generator_id(CONFIG, index, root=src) == first
    (index / "manifest.json").write_text(json.dumps({**manifest, "content_sha256": "cd" * 32}))
    assert generator_id(CONFIG, index, root=src) != first
    bare = tmp_path / "bare"
    bare.mkdir()
    assert index_identity(bare) == {"path": str(bare.resolve())}


def test_the_source_digest_refuses_a_folder_without_code(tmp_path):
    with pytest.raises(FileNotFoundError, match="synthesiser's"):
        source_digest(tmp_path)
    assert len(source_digest(SYNTH_ROOT)) == 64


def test_stale_reason_names_what_is_missing_or_different(tmp_path):
    out, card = tmp_path / "qa.jsonl", tmp_path / "qa.card.json"
    assert "does not exist" in stale_reason(out, card, "1" * 16)
    out.write_text("{}\n")
    assert f"{card} does not exist" in stale_reason(out, card, "1" * 16)
    card.write_text(json.dumps({"records": 1}))
    assert "no generator_id" in stale_reason(out, card, "1" * 16)
    card.write_text(json.dumps({"generator_id": "2" * 16}))
    assert stale_reason(out, card, "1" * 16) == f"generator_id {'2' * 16} differs from the current {'1' * 16}"
    assert stale_reason(out, card, "2" * 16) == ""


def test_if_stale_skips_an_up_to_date_set_and_regenerates_a_stale_one(sample_index, tmp_path, capsys, monkeypatch):
    import training.synth.pipeline as pipeline
    from training.synth.cli import main

    real, runs = pipeline.generate_with_report, []

    def once(index_dir, config):  # the first run synthesises; the later ones replay it (the CLI writes it all again)
        runs.append(runs[-1] if runs else real(index_dir, config=config))
        return runs[-1]

    monkeypatch.setattr(pipeline, "generate_with_report", once)
    out, card = tmp_path / "qa.jsonl", tmp_path / "qa.card.json"
    argv = ["--index", str(sample_index), "--out", str(out), *SMALL, "--if-stale"]
    assert main(argv) == 0 and len(runs) == 1
    text = capsys.readouterr().out
    assert f"synth: regenerating {out}: {out} does not exist" in text and f"jsonl: {out}" in text
    current = json.loads(card.read_text())["generator_id"]
    assert len(current) == 16

    before, content = out.stat().st_mtime_ns, out.read_bytes()
    assert main(argv) == 0 and len(runs) == 1  # the check computes the id the write recorded
    assert capsys.readouterr().out == f"synth: {out} is up to date (generator_id {current}); not regenerated\n"
    assert out.stat().st_mtime_ns == before and out.read_bytes() == content

    data = json.loads(card.read_text())
    card.write_text(json.dumps({k: v for k, v in data.items() if k != "generator_id"}))
    assert main(argv) == 0 and len(runs) == 2
    assert "has no generator_id (written by an older sim-web)" in capsys.readouterr().out
    assert json.loads(card.read_text())["generator_id"] == current

    card.write_text(json.dumps({**data, "generator_id": "0" * 16}))
    assert main(argv) == 0 and len(runs) == 3
    assert f"generator_id {'0' * 16} differs from the current {current}" in capsys.readouterr().out
    assert json.loads(card.read_text())["generator_id"] == current

    assert main([a for a in argv if a != "--if-stale"]) == 0 and len(runs) == 4  # without the flag: always runs
    assert "up to date" not in capsys.readouterr().out
    other = [a if a != "2" else "3" for a in argv]  # --seed 3: the id this run would write differs
    assert main(other) == 0 and len(runs) == 5
    assert f"generator_id {current} differs from the current " in capsys.readouterr().out


def test_if_stale_is_for_the_sailorfog_set_only(capsys):
    from training.synth.cli import main

    assert main(["--tier", "lookup", "--if-stale"]) == 2
    assert "--if-stale checks the sailorfog set only" in capsys.readouterr().err
