"""same_setting: a run folder resumes when a path is spelt another way, and refuses a changed value."""

from __future__ import annotations

import os

from simweb_core.same import same_setting


def test_paths_spelt_another_way_are_the_same_setting(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sft").mkdir()
    (tmp_path / "other").mkdir()
    os.symlink(tmp_path / "sft", tmp_path / "linked")
    assert same_setting("hf:sft", f"hf:{tmp_path / 'sft'}")  # relative, then absolute
    assert same_setting(str(tmp_path / "linked"), "sft")  # through a link, bare paths
    assert not same_setting("hf:sft", "hf:other")
    assert not same_setting("hf:sft", "openai:sft")  # the same folder as another kind of policy
    assert not same_setting("hf:sft", "hf:missing") and not same_setting("missing", "missing/..")


def test_files_with_equal_bytes_are_the_same_setting(tmp_path):
    a, b, c = (tmp_path / n for n in ("a.jsonl", "b.jsonl", "c.jsonl"))
    a.write_text('{"id": 1}\n')
    b.write_text('{"id": 1}\n')
    c.write_text('{"id": 2}\n')
    assert same_setting(str(a), str(b)) and not same_setting(str(a), str(c))
    assert not same_setting(str(a), str(tmp_path))  # a file and a folder


def test_values_that_are_not_paths_compare_by_equality():
    assert same_setting(0.8, 0.8) and same_setting(None, None) and same_setting([1, 2], [1, 2])
    assert not same_setting(0.8, 0.6) and not same_setting("a", "b") and not same_setting(1, "1")
