"""The DuckDB schema of an index is the store's business: SQL lives in ``wiki_index/store/store.py`` (reads) and ``store/writer.py`` only.

Every ``.py`` file of the repository is parsed with :mod:`ast`; a string literal that reads like
SQL (``SELECT ... FROM``, ``INSERT INTO``, ``JOIN ... ON``, ...) or a literal passed to
``.query(`` / ``.execute(`` / ``.sql(`` fails the test, naming the file and line. Code that needs
something from the store calls (or adds) a named :class:`wiki_index.store.store.Store` method.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: Files allowed to hold SQL, and why: the store itself, and modules that own a database of their own
#: (never an index's store.duckdb).
ALLOWED = {
    "wiki_index/store/store.py": "the page store: every query on an index's store.duckdb",
    "wiki_index/store/writer.py": "the page store's writer: the schema and the layout finalize() gives store.duckdb",
    "training/synth/outputs/write.py": "writes the synthesized task set's own DuckDB file (tasks, clues, evidence, edges)",
    "tests/training/test_synth_pipeline.py": "reads that task-set DuckDB file back",
    "sim_web/executor/cache.py": "the executor's own SQLite result cache (its own file and table), not an index store",
    "tests/wiki_index/test_no_sql_outside_store.py": "this test's own examples",
    "benchmarks/bench_store.py": "turns a copy of a store into the ART-index baseline it is measured against",
    "tests/wiki_index/test_store_layout.py": "writes a store in an earlier version's layout, to check that it is still read",
    "tests/sim_web/fuzz_inputs.py": "an SQL-injection string fed to the env as hostile agent input, never run",
    "tests/sim_web/test_env_fuzz.py": "the same hostile input",
    "tests/sim_web/test_real_hardening.py": "damages rows of the executor's own SQLite cache, to check they are read as misses",
}
#: Files that still hold SQL on the store and have not moved to the named methods yet (their owners
#: move them; the test fails once one is clean, so that it leaves this list).
PENDING: dict[str, str] = {}  # files allowed to keep SQL for now, each with the Store methods that will replace it

_SQL = re.compile(
    r"\bSELECT\b[\s\S]+?\bFROM\b|^\s*SELECT\s|\bINSERT\s+INTO\b|\bDELETE\s+FROM\b|\bUPDATE\s+\w+\s+SET\b"
    r"|\b(?:CREATE|DROP|ALTER)\s+(?:UNIQUE\s+)?(?:TABLE|INDEX|VIEW)\b|\bJOIN\s+\w+[\s\S]+?\bON\b"
)
_SQL_CALLS = frozenset({"query", "execute", "executemany", "sql"})
_SKIP_DIRS = frozenset({"node_modules", "build", "dist", "__pycache__"})


def _literal(node: ast.AST) -> str | None:
    """The text of a string literal or f-string (``{}`` for each placeholder), else ``None``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
    return None


def sql_in_source(source: str) -> list[tuple[int, str]]:
    """``(line, text)`` of every SQL-looking literal in Python source."""
    found: dict[int, str] = {}
    for node in ast.walk(ast.parse(source)):
        text = _literal(node)
        if text is not None and _SQL.search(text):
            found.setdefault(node.lineno, text)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _SQL_CALLS:
            first = _literal(node.args[0]) if node.args else None
            if first is not None:
                found.setdefault(node.lineno, first)
    return sorted((line, " ".join(text.split())[:100]) for line, text in found.items())


def _python_files() -> list[Path]:
    files = []
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT)
        if any(p.startswith(".") or p in _SKIP_DIRS or p.endswith(".egg-info") for p in rel.parts[:-1]):
            continue
        files.append(path)
    return sorted(files)


def test_the_detector_sees_sql_and_only_sql():
    positives = [
        'con.execute("select 1")',
        'q = "SELECT a FROM t"',
        's.query(f"UPDATE {t} SET x = 1")',
        'X = ("SELECT p.id, "\n     "s.text FROM pages p")',
        'Y = _SQL + " WHERE x = ?"\nZ = "SELECT x, y"',
        'c.execute("CREATE UNIQUE INDEX i ON t(x)")',
        'A = "a JOIN b ON a.x = b.x"',
        'B = "INSERT INTO t VALUES (1)"',
    ]
    negatives = [
        '"""Select the pages from the store."""',
        "self._execute(tool, args)",
        'x = "select the best from these"',
        "ex.search(req.query, req.k)",
        "parse_qs(parts.query)",
        'log.info("joined %s on %s", a, b)',
    ]
    for src in positives:
        assert sql_in_source(src), src
    for src in negatives:
        assert not sql_in_source(src), src
    assert [line for line, _ in sql_in_source('a = 1\nb = "DELETE FROM t"\n')] == [2]


def test_no_sql_outside_the_store_module():
    files = _python_files()
    rels = {p.relative_to(ROOT).as_posix() for p in files}
    assert {"wiki_index/store/store.py", "sim_web/env/tasks.py", "tests/conftest.py"} <= rels  # the walk sees the repo
    offenders = []
    for path in files:
        rel = path.relative_to(ROOT).as_posix()
        if rel in ALLOWED or rel in PENDING:
            continue
        offenders += [f"{rel}:{line}: {text}" for line, text in sql_in_source(path.read_text(encoding="utf-8"))]
    assert not offenders, (
        "SQL outside wiki_index/store/store.py; add a named, typed Store method there and call it:\n  "
        + "\n  ".join(offenders)
    )


def test_allowed_and_pending_files_are_current():
    assert sql_in_source(
        (ROOT / "wiki_index/store/store.py").read_text(encoding="utf-8")
    )  # the detector works on the real thing
    for rel in PENDING:
        path = ROOT / rel
        assert path.is_file() and sql_in_source(path.read_text(encoding="utf-8")), (
            f"{rel} no longer holds SQL (or is gone): remove it from PENDING in {Path(__file__).name}"
        )
