"""Python 3.12+ gets pyserini 2.4.0 (Anserini 2.3, Lucene 10): the index code runs on it unchanged.

This machine's Python is 3.11, where pip installs pyserini 1.6.0; so the test puts pyserini 2.4.0's own Python package
and jar first on the path of a subprocess (its code runs on 3.11), and checks that an index written by 1.6.0 reads the
same, and that one written by 2.4.0 searches the same, as with 1.6.0. Slow: the first run fetches pyserini's source
(about 110 MB) and builds its wheel into `$SIM_WEB_HOME/cache/bundle` (the bundle's cache).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import json, sys, tempfile
from pathlib import Path
import pyserini
from wiki_index.search._java import autoclass
from wiki_index.search.bm25 import BM25Searcher, BM25Writer
from wiki_index.search.index import WikiIndex

index = WikiIndex.from_dir(sys.argv[1])
jar = [p for p in autoclass("java.lang.System").getProperty("java.class.path").split(":") if "anserini" in p][0]
old = [(h.docid, round(h.score, 4)) for h, _ in index.search("theory of relativity", 5)]
out = Path(tempfile.mkdtemp()) / "bm25"
writer = BM25Writer(out)
writer.add([p for _, p in index.search("desert", 30)])
writer.close()
new = [(h.docid, round(h.score, 4)) for h in BM25Searcher(out).search("desert", 5)]
print("RESULT", json.dumps({"pyserini": pyserini.__file__, "jar": Path(jar).name, "old": old, "new": new}))
"""


def _probe(index: Path, pythonpath: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [pythonpath, str(ROOT)]))
    r = subprocess.run([sys.executable, "-c", PROBE, str(index)], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.split("RESULT", 1)[1])


def test_the_index_code_runs_on_pyserini_2(sample_index, tmp_path):
    from sim_web.bundle.wheels import BundleError, build_source_wheel
    from simweb_core.settings import sim_web_home

    try:
        wheel = build_source_wheel("pyserini==2.4.0", sim_web_home() / "cache" / "bundle" / "built")
    except BundleError as e:
        pytest.skip(f"pyserini 2.4.0 cannot be fetched here: {e}")
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as z:
        z.extractall(site)
    base, two = _probe(sample_index, None), _probe(sample_index, str(site))
    assert base["jar"].startswith("anserini-1.") and two["jar"] == "anserini-2.3.0-fatjar.jar"
    assert two["pyserini"].startswith(str(site))
    assert two["old"] == base["old"] and two["new"] == base["new"] and len(base["new"]) == 5
