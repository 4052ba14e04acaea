"""The README and docs/*.md stay true: every relative link resolves, and every command they show exists.

Checked in process, without running anything: relative links (and ``#anchors``, against GitHub's heading slugs) point
to files and headings that exist; each ``sim-web <sub>`` and ``wiki-index <sub>`` written in code is a subcommand of
that CLI's own argparse parser (``sim-web sft collect`` descends into nested subcommands), and each ``--flag`` after it
on the same line is one of that subcommand's options; each ``make <target>`` is a target of the Makefile; each
``python -m <module>`` is a module that ``importlib.util.find_spec`` finds.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC_FILES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

FENCE = re.compile(r"^```.*?^```[ \t]*$", re.S | re.M)
INLINE_CODE = re.compile(r"``(.+?)``|`([^`\n]+)`")
LINK = re.compile(r"!?\[[^\]\n]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$", re.M)
CLI_CALL = re.compile(r"(?<![\w./-])(sim-web|wiki-index)((?:[ \t]+[a-z][a-z0-9-]*)+)")
MAKE_CALL = re.compile(r"(?<![\w.-])make[ \t]+([a-z][a-z0-9-]*)")
PYTHON_M = re.compile(r"(?<![\w-])(?:python3?|\.venv/bin/python|accelerate launch\b[^\n#]*?)\s+-m\s+([A-Za-z_][\w.]*)")
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


@dataclass(frozen=True)
class Snippet:
    """One piece of code from a doc: a line of a code block or an inline code span."""

    doc: str
    text: str


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _rel(path: Path) -> str:
    """``path`` relative to the repository when it is inside it (for messages)."""
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)


def code_snippets(path: Path) -> list[Snippet]:
    """Every line of every code block (fenced or indented) and every inline code span of ``path``."""
    text, doc = _read(path), _rel(path)
    out = [Snippet(doc, line) for block in FENCE.findall(text) for line in block.splitlines()[1:-1]]
    prose = FENCE.sub("", text)
    out += [
        Snippet(doc, line)
        for line in prose.splitlines()
        if line.startswith("    ") and not line.lstrip().startswith(("*", "-", "|"))
    ]
    out += [Snippet(doc, a or b) for a, b in INLINE_CODE.findall(prose)]
    return out


def _prose(path: Path) -> str:
    """The text of ``path`` without code blocks and code spans (links inside code are not links)."""
    return INLINE_CODE.sub("", FENCE.sub("", _read(path)))


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: markup dropped, lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading keeps its text
    text = text.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading anchor of ``path``, numbered as GitHub numbers repeated headings (``x``, ``x-1``, ...)."""
    seen: dict[str, int] = {}
    out = set()
    for _, title in HEADING.findall(FENCE.sub("", _read(path))):
        slug = github_slug(title)
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def broken_links(path: Path) -> list[str]:
    """The relative links of ``path`` whose file or ``#anchor`` does not exist, each with the reason."""
    bad = []
    for target in LINK.findall(_prose(path)):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto: ...: not checked here
            continue
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        if not dest.exists():
            bad.append(f"{target}: no file {_rel(dest)}")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            bad.append(f"{target}: no heading with anchor #{anchor} in {_rel(dest)}")
    return bad


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return {opt for action in parser._actions for opt in action.option_strings}


@pytest.fixture(scope="module")
def parsers() -> dict[str, argparse.ArgumentParser]:
    from sim_web.cli import make_parser as sim_web_parser
    from wiki_index.cli import make_parser as wiki_index_parser

    return {"sim-web": sim_web_parser(), "wiki-index": wiki_index_parser()}


def command_problems(snippets: list[Snippet], parsers: dict[str, argparse.ArgumentParser]) -> list[str]:
    """Each ``sim-web``/``wiki-index`` call whose subcommand or ``--flag`` its parser does not know."""
    bad = []
    for snip in snippets:
        for m in CLI_CALL.finditer(snip.text):
            prog, words = m.group(1), m.group(2).split()
            parser, path = parsers[prog], [prog]
            subs = _subparsers(parser)
            if not subs:
                continue
            if words[0] not in subs:
                bad.append(
                    f"{snip.doc}: `{prog} {words[0]}` is not a subcommand of {prog} (it has {sorted(subs)}): {snip.text.strip()}"
                )
                continue
            for word in words:  # descend as far as the words name subcommands (`sim-web sft collect`)
                subs = _subparsers(parser)
                if word not in subs:
                    break
                parser = subs[word]
                path.append(word)
            rest = snip.text[m.end() :].split(" #", 1)[0]  # the call's own line, up to a shell comment
            known = _options(parser)
            for flag in FLAG.findall(rest):
                if flag not in known:
                    bad.append(f"{snip.doc}: `{' '.join(path)}` has no option {flag}: {snip.text.strip()}")
    return bad


def make_targets() -> set[str]:
    """The targets of the Makefile (rules and .PHONY names)."""
    text = _read(ROOT / "Makefile")
    targets = set(re.findall(r"^([a-zA-Z][\w-]*)\s*:(?!=)", text, re.M))
    for line in re.findall(r"^\.PHONY:(.*)$", text, re.M):
        targets.update(line.split())
    return targets


def make_problems(snippets: list[Snippet], targets: set[str]) -> list[str]:
    """Each ``make X`` whose X is not a Makefile target."""
    return [
        f"{s.doc}: `make {t}` is not a Makefile target: {s.text.strip()}"
        for s in snippets
        for t in MAKE_CALL.findall(s.text)
        if t not in targets
    ]


def module_problems(snippets: list[Snippet]) -> list[str]:
    """Each ``python -m X`` whose module X cannot be found (run from the repository root, as the docs do)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))  # `python -m benchmarks.x` finds the repository's own folders
    bad = []
    for s in snippets:
        for module in PYTHON_M.findall(s.text):
            module = module.rstrip(".")
            try:
                found = importlib.util.find_spec(module) is not None
            except ModuleNotFoundError:
                found = False
            if not found:
                bad.append(f"{s.doc}: `python -m {module}`: no such module: {s.text.strip()}")
    return bad


def all_snippets() -> list[Snippet]:
    return [s for path in DOC_FILES for s in code_snippets(path)]


def test_the_docs_folder_is_linked_from_the_readme() -> None:
    linked = {(ROOT / t.partition("#")[0]).resolve() for t in LINK.findall(_prose(ROOT / "README.md"))}
    pages = sorted((ROOT / "docs").glob("*.md"))
    assert pages, "docs/ has no pages"
    missing = [p.name for p in pages if p.resolve() not in linked]
    assert not missing, f"docs pages the README does not link to: {missing}; add them to its Documentation list"


@pytest.mark.parametrize("path", DOC_FILES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_resolve(path: Path) -> None:
    bad = broken_links(path)
    assert not bad, "broken links (fix the path or the heading it points to):\n" + "\n".join(bad)


def test_documented_cli_commands_and_flags_exist(parsers: dict[str, argparse.ArgumentParser]) -> None:
    snippets = all_snippets()
    assert sum(bool(CLI_CALL.search(s.text)) for s in snippets) > 20, (
        "found almost no sim-web/wiki-index calls: is the scan broken?"
    )
    bad = command_problems(snippets, parsers)
    assert not bad, "documented commands the CLIs do not have (fix the doc or the parser):\n" + "\n".join(bad)


def test_documented_make_targets_exist() -> None:
    snippets = all_snippets()
    targets = make_targets()
    assert {"run", "test"} <= targets, f"the Makefile parse found {sorted(targets)}"
    bad = make_problems(snippets, targets)
    assert not bad, "documented make targets the Makefile does not have:\n" + "\n".join(bad)


def test_documented_python_modules_exist() -> None:
    snippets = all_snippets()
    assert any(PYTHON_M.search(s.text) for s in snippets), "found no `python -m` in the docs: is the scan broken?"
    bad = module_problems(snippets)
    assert not bad, "documented `python -m` modules that do not exist:\n" + "\n".join(bad)


def test_the_checks_catch_a_made_up_flag_a_broken_link_and_a_missing_target(
    tmp_path: Path, parsers: dict[str, argparse.ArgumentParser]
) -> None:
    """The scanners above find problems when there are some (a check that cannot fail proves nothing)."""
    doc = tmp_path / "bad.md"
    doc.write_text(
        "# Bad\n\nSee [x](missing.md) and [y](#nowhere) and [z](#bad).\n\n"
        "```\nsim-web grpo --recipe cpu-smoke --made-up-flag 1\nwiki-index nosuch\nmake no-such-target\n"
        "python -m sim_web.no_such_module\nsim-web sft collect RUN --out D --no-such\n```\n",
        encoding="utf-8",
    )
    links = broken_links(doc)
    assert any("missing.md" in b for b in links) and any("#nowhere" in b for b in links)
    assert not any("#bad" in b for b in links)
    snippets = code_snippets(doc)
    cmds = command_problems(snippets, parsers)
    assert any("--made-up-flag" in b for b in cmds) and any("nosuch" in b for b in cmds)
    assert any("`sim-web sft collect` has no option --no-such" in b for b in cmds)
    assert not any("has no option --recipe" in b or "has no option --out" in b for b in cmds)
    assert make_problems(snippets, make_targets()) and module_problems(snippets)
