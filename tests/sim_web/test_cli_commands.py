"""``sim-web``'s subcommands from other packages come from the ``sim_web.commands`` entry points."""

from __future__ import annotations

import tomllib
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path

import pytest

from sim_web import cli

ROOT = Path(__file__).resolve().parents[2]


def _declared() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return project["entry-points"][cli.COMMANDS_GROUP]


def test_the_installed_entry_points_are_the_declared_ones() -> None:
    installed = {ep.name: ep.value for ep in entry_points(group=cli.COMMANDS_GROUP)}
    assert installed == _declared(), (
        "stale install: run `pip install --no-deps -e .` to register pyproject's entry points"
    )


def test_every_declared_subcommand_is_on_the_parser() -> None:
    choices = cli.make_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert set(_declared()) | {"serve", "demo", "bundle", "gpu-kit"} == set(choices)


def test_help_lists_every_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        cli.main(["--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    for name in [*_declared(), "serve", "demo", "bundle", "gpu-kit"]:
        assert f"\n    {name} " in out, f"{name} missing from sim-web --help:\n{out}"


def _with(monkeypatch: pytest.MonkeyPatch, *eps: EntryPoint) -> None:
    monkeypatch.setattr(cli, "entry_points", lambda group: [e for e in eps if e.group == group])


def test_a_subcommand_whose_module_is_not_installed_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _with(monkeypatch, EntryPoint("ghost", "no_such_package.cli:add_parser", cli.COMMANDS_GROUP))
    assert cli.main(["ghost", "--any", "args"]) == 2
    err = capsys.readouterr().err
    assert "sim-web ghost" in err and "no_such_package.cli" in err and "not installed" in err and "pip install" in err
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    assert "ghost" in capsys.readouterr().out


def test_a_missing_import_inside_an_installed_module_is_raised(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "broken_plugin.py").write_text("import no_such_dependency\n\ndef add_parser(sub):\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    _with(monkeypatch, EntryPoint("broken", "broken_plugin:add_parser", cli.COMMANDS_GROUP))
    with pytest.raises(ModuleNotFoundError, match="no_such_dependency"):
        cli.make_parser()
