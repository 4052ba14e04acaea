"""The package layout: imports run one way (simweb_core -> wiki_index -> sim_web -> agents -> training) and, inside sim_web,
bottom-up through its layers (protocol <- backends, executor <- tools <- env <- serve <- cli / demo), inside
training.synth through its stages (extract <- graph <- compose <- verify, tiers <- outputs <- pipeline / cli). Imports
spelled as strings (``importlib.import_module("training.grpo.cli")``, a table of module paths, ``python -c`` code)
count too: a package names no module of a package above it in any form."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("simweb_core", "wiki_index", "sim_web", "agents", "training")
#: Package rank: a package may import only packages of lower or equal rank (training builds on agents' policies
#: and harness; agents never imports training). simweb_core, the config kernel, is the ground floor: every package may
#: import it, and it imports none of them.
PACKAGE_RANK = {"simweb_core": 0, "wiki_index": 1, "sim_web": 2, "agents": 3, "training": 4}
#: sim_web's layers, bottom-up; the top level (cli, demo, bundle, __init__) is above all.
LAYERS = {"protocol": 0, "backends": 1, "executor": 1, "tools": 2, "env": 3, "serve": 4}
TOP = 5


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[str, int]]:
    """Every absolute module this file imports (top level or inside functions), with its line."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.module, node.lineno))
            found += [(f"{node.module}.{a.name}", node.lineno) for a in node.names]  # `from pkg import submodule`
    return found


def _edges() -> list[tuple[str, str, int, str]]:
    edges = []
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            src = _module_name(path)
            for target, line in _imports(path):
                if target.split(".")[0] in PACKAGES:
                    edges.append((src, target, line, str(path.relative_to(ROOT))))
    return edges


def _layer(module: str) -> int:
    parts = module.split(".")
    return LAYERS.get(parts[1], TOP) if len(parts) > 1 else TOP


def test_packages_import_one_way() -> None:
    bad = [
        f"{where}:{line}: {src} imports {dst}"
        for src, dst, line, where in _edges()
        if PACKAGE_RANK[dst.split(".")[0]] > PACKAGE_RANK[src.split(".")[0]]
    ]
    assert not bad, "upward imports across packages:\n" + "\n".join(bad)


#: What the kernel may import besides the standard library (read lazily, for ``--set`` values).
KERNEL_THIRD_PARTY = {"yaml"}


def test_the_kernel_imports_only_the_standard_library() -> None:
    """simweb_core is the ground floor: no project package and no third-party package but YAML's parser."""
    import sys

    bad = [
        f"{path.relative_to(ROOT)}:{line}: {module}"
        for path in sorted((ROOT / "simweb_core").rglob("*.py"))
        for module, line in _imports(path)
        if (top := module.split(".")[0]) != "simweb_core"
        and top not in sys.stdlib_module_names
        and top not in KERNEL_THIRD_PARTY
    ]
    assert not bad, "simweb_core imports outside the standard library:\n" + "\n".join(bad)


#: A string that is a module path: dotted, optionally with an ``:attribute`` (``"agents.cli:add_parser"``).
MODULE_PATH = re.compile(r"^\s*([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?::[\w.]+)?\s*$")
#: Python code inside a string (``python -c "from agents.models import x"``): the module each import names.
CODE_IMPORT = re.compile(r"(?:^|[\s;\"'(])(?:from\s+([\w.]+)\s+import\b|import\s+([\w.]+))")
#: Calls that import (or locate) the module their first argument names.
IMPORT_CALLS = {"import_module", "__import__", "run_module", "find_spec"}
#: (file, module) pairs allowed to name a higher package in a string, each with its reason.
STRING_IMPORTS_ALLOWED = {
    # the install.sh the bundle writes checks the installed distribution (which holds every package) finds the model
    ("sim_web/bundle/build.py", "agents.models"),
}


def _literal_prefix(node: ast.expr) -> str | None:
    """The text of a string argument: a literal's whole value, an f-string's leading literal part, else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
        return str(node.values[0].value)
    return None


def string_imports(source: str) -> list[tuple[str, int]]:
    """Each module that ``source`` names in a string (docstrings and other bare string statements aside), with
    its line: string arguments of import calls (also f-strings, by their literal start), strings that are a
    module path, and import statements inside strings."""
    tree = ast.parse(source)
    prose = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args:
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
            text = _literal_prefix(node.args[0]) if name in IMPORT_CALLS else None
            if text:
                found.append((text.split(":")[0].rstrip("."), node.lineno))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose:
            path = MODULE_PATH.match(node.value)
            found += [(path.group(1), node.lineno)] if path else []
            found += [(m.group(1) or m.group(2), node.lineno) for m in CODE_IMPORT.finditer(node.value)]
    return sorted(set(found), key=lambda f: (f[1], f[0]))  # an import call's argument is also a module path


def test_packages_name_no_higher_package_in_strings() -> None:
    bad = []
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            where = path.relative_to(ROOT).as_posix()
            for module, line in string_imports(path.read_text(encoding="utf-8")):
                top = module.split(".")[0]
                if PACKAGE_RANK.get(top, -1) > PACKAGE_RANK[pkg] and (where, module) not in STRING_IMPORTS_ALLOWED:
                    bad.append(f"{where}:{line}: {pkg} names {module!r} in a string")
    assert not bad, (
        "upward imports spelled as strings (declare a plugin as an entry point in pyproject.toml, as "
        "`sim-web`'s subcommands are, instead):\n" + "\n".join(bad)
    )


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('importlib.import_module("training.grpo.cli")', ["training.grpo.cli"]),
        ("import_module(f'agents.{name}')", ["agents"]),
        ('__import__("training")', ["training"]),
        (
            'PLUGINS = {"grpo": "training.grpo.cli", "eval": "agents.cli:add_parser"}',
            ["agents.cli", "training.grpo.cli"],
        ),
        ("cmd = 'python -c \"from agents.models import smollm2_path\"'", ["agents.models"]),
        ('def f():\n    """See training.grpo.cli for the command."""\n', []),
        ('HELP = "the training split of the tasks"', []),
    ],
)
def test_string_imports_are_found(source: str, expected: list[str]) -> None:
    assert [m for m, _ in string_imports(source)] == expected


def test_sim_web_layers_import_bottom_up() -> None:
    bad = []
    for src, dst, line, where in _edges():
        if not (src.startswith("sim_web.") and dst.startswith("sim_web.")):
            continue
        ls, ld = _layer(src), _layer(dst)
        sibling = ls == ld and ls != TOP and src.split(".")[1] != dst.split(".")[1]  # backends <-> executor
        if ld > ls or sibling:
            bad.append(f"{where}:{line}: {src} (layer {ls}) imports {dst} (layer {ld})")
    assert not bad, (
        "sim_web imports must run protocol <- backends, executor <- tools <- env <- serve <- cli:\n" + "\n".join(bad)
    )


#: training.synth's stages, bottom-up: a page read, the knowledge graph, clues and questions made, clues checked and
#: questions gated (verify) beside the curriculum tiers, what a run writes. verify and tiers are siblings: neither
#: imports the other. The top level (pipeline, drafting, config, cli, __init__, __main__) is above all.
SYNTH_STAGES = {"extract": 0, "graph": 1, "compose": 2, "verify": 3, "tiers": 3, "outputs": 4}
SYNTH_TOP = {"__init__", "__main__", "cli", "config", "drafting", "pipeline"}


def _in_synth(module: str) -> bool:
    return module == "training.synth" or module.startswith("training.synth.")


def _synth_stage(module: str) -> int:
    parts = module.split(".")
    return SYNTH_STAGES.get(parts[2], TOP) if len(parts) > 2 else TOP


def test_synth_stages_import_bottom_up() -> None:
    """A stage imports only stages below it (an import or a module path in a string), never a sibling or the top."""
    edges = [(src, dst, line, where) for src, dst, line, where in _edges() if _in_synth(src) and _in_synth(dst)]
    for path in sorted((ROOT / "training" / "synth").rglob("*.py")):
        src, where = _module_name(path), path.relative_to(ROOT).as_posix()
        edges += [(src, m, line, where) for m, line in string_imports(path.read_text(encoding="utf-8")) if _in_synth(m)]
    bad = []
    for src, dst, line, where in edges:
        ls, ld = _synth_stage(src), _synth_stage(dst)
        sibling = ls == ld and ls != TOP and src.split(".")[2] != dst.split(".")[2]  # verify <-> tiers
        if ld > ls or sibling:
            bad.append(f"{where}:{line}: {src} (stage {ls}) imports {dst} (stage {ld})")
    assert not bad, (
        "training.synth imports must run extract <- graph <- compose <- verify, tiers <- outputs <- pipeline / cli:\n"
        + "\n".join(bad)
    )


def test_synth_modules_sit_in_a_stage_whose_init_only_says_what_it_does() -> None:
    """Every module of training.synth is in a stage's subpackage or one of the top level's; a stage's
    ``__init__.py`` is its docstring only (what the stage does, where a clue is made, checked or dropped)."""
    synth = ROOT / "training" / "synth"
    top = {p.stem for p in synth.glob("*.py")}
    assert top == SYNTH_TOP, (
        f"modules at training/synth/'s top level beside {sorted(SYNTH_TOP)}: {sorted(top - SYNTH_TOP)}"
    )
    stages = {p.name for p in synth.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert stages == set(SYNTH_STAGES), f"training/synth/ holds {sorted(stages)}, the stages are {sorted(SYNTH_STAGES)}"
    for stage in sorted(stages):
        tree = ast.parse((synth / stage / "__init__.py").read_text(encoding="utf-8"))
        assert ast.get_docstring(tree), f"{stage}/__init__.py says nothing"
        assert len(tree.body) == 1, f"{stage}/__init__.py holds more than its docstring (import from the module itself)"


def test_no_import_cycles_between_modules() -> None:
    modules = {_module_name(p) for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}
    graph = nx.DiGraph()
    for src, dst, _, _ in _edges():
        dst = dst if dst in modules else dst.rsplit(".", 1)[0]  # `from pkg.mod import name` -> pkg.mod
        if dst in modules and dst != src and not src.startswith(dst + ".") and not dst.startswith(src + "."):
            graph.add_edge(src, dst)  # a package and its own submodules are not a cycle
    cycles = list(nx.simple_cycles(graph))
    assert not cycles, f"import cycles: {cycles}"


@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_every_layer_is_a_package_that_reexports(layer: str) -> None:
    import importlib

    mod = importlib.import_module(f"sim_web.{layer}")
    assert mod.__all__, f"sim_web.{layer}.__init__ re-exports nothing"
    for name in mod.__all__:
        assert getattr(mod, name) is not None


def test_readme_file_tree_matches_the_folders() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    tree = readme.split("## File structure", 1)[1].split("```")[1]
    for pkg in PACKAGES:
        folders = sorted(p.parent.relative_to(ROOT).as_posix() for p in (ROOT / pkg).rglob("__init__.py"))
        for folder in folders:
            assert f"{folder.rsplit('/', 1)[-1]}/" in tree, f"README's file structure does not show {folder}/"


def test_environment_variables_are_read_and_set_in_settings_only() -> None:
    """``simweb_core/settings.py`` is the one module that touches ``os.environ`` (its table documents every variable)."""
    bad = []
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            if path.relative_to(ROOT).as_posix() == "simweb_core/settings.py":
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if (
                    isinstance(node, ast.Attribute)
                    and node.attr in ("environ", "getenv", "putenv", "unsetenv")
                    and isinstance(node.value, ast.Name)
                    and node.value.id == "os"
                ):
                    bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: os.{node.attr}")
    assert not bad, "use simweb_core.settings.env / set_env:\n" + "\n".join(bad)


def test_integrations_are_packages_of_their_own_on_sim_web() -> None:
    """``integrations/<name>/`` holds packages with their own ``pyproject.toml`` (their own name and dependencies,
    e.g. verifiers' mcp pin): they may import sim_web and what it builds on, never agents or training, and no
    project package imports them."""
    folders = sorted(p for p in (ROOT / "integrations").iterdir() if p.is_dir())
    assert folders, "integrations/ has no package"
    names = set()
    for folder in folders:
        assert (folder / "pyproject.toml").is_file(), f"{folder.name}: no pyproject.toml of its own"
        for path in sorted(folder.rglob("*.py")):
            names.add(path.relative_to(folder).parts[0].removesuffix(".py"))
            bad = [(m, line) for m, line in _imports(path) if m.split(".")[0] in ("agents", "training")]
            assert not bad, f"{path.relative_to(ROOT)} imports a package above sim_web: {bad}"
    importing = [
        f"{p.relative_to(ROOT)}:{line}: {m}"
        for pkg in PACKAGES
        for p in sorted((ROOT / pkg).rglob("*.py"))
        for m, line in _imports(p)
        if m.split(".")[0] in names
    ]
    assert not importing, "project packages import an integration:\n" + "\n".join(importing)
