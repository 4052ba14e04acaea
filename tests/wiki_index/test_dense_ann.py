"""Approximate dense indexes (HNSW, IVF-PQ) built through ``wiki_index.search.dense``: recall vs exact search, the memory
estimate vs the serialized size, the search settings a searcher applies, and the encoder's device choice.

Synthetic clustered unit vectors with fixed seeds, FAISS on one thread (its HNSW build is then deterministic).
The scale numbers (100k vectors, real embeddings) are in ``benchmarks/bench_dense_scale.py``.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterator
from dataclasses import replace
from typing import ClassVar

import numpy as np
import pytest

faiss = pytest.importorskip("faiss")

from simweb_core.errors import ConfigError  # noqa: E402 (after the importorskip)
from wiki_index.search.dense import (  # noqa: E402
    DenseConfig,
    DenseSearcher,
    LineTable,
    _make_index,
    apply_search_params,
    index_vectors,
    ivf_cells,
    memory_estimate,
    train_size,
)

N, DIM, K = 3_000, 384, 10


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray]:
    """``N`` clustered unit vectors (300 centres) and 100 held-out queries near them."""
    rng = np.random.default_rng(7)
    centres = _unit(rng.standard_normal((300, DIM)))
    x = _unit(centres[rng.integers(0, 300, N)] + rng.standard_normal((N, DIM)) * 0.05)
    q = _unit(centres[rng.integers(0, 300, 100)] + rng.standard_normal((100, DIM)) * 0.05)
    return x, q


@pytest.fixture(autouse=True, scope="module")
def one_thread() -> Iterator[None]:
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    yield
    faiss.omp_set_num_threads(before)


def _recall(index, q: np.ndarray, truth: np.ndarray) -> float:
    _, got = index.search(q, K)
    return float(np.mean([len(set(g) & set(t)) / K for g, t in zip(got.tolist(), truth.tolist())]))


@pytest.fixture(scope="module")
def truth(data) -> np.ndarray:
    x, q = data
    return index_vectors(x, DenseConfig(index_type="flat")).search(q, K)[1]


def test_hnsw_recall_close_to_exact_and_ef_search_matters(data, truth):
    x, q = data
    cfg = DenseConfig(index_type="hnsw")
    index = index_vectors(x, cfg)
    assert index.hnsw.efSearch == cfg.hnsw_ef_search and index.hnsw.efConstruction == cfg.hnsw_ef_construction
    assert _recall(index, q, truth) >= 0.95
    low = _recall(apply_search_params(index, replace(cfg, hnsw_ef_search=1)), q, truth)
    assert low < _recall(apply_search_params(index, replace(cfg, hnsw_ef_search=128)), q, truth)


#: IVF-PQ with 48 code bytes: training the default 192 sub-quantisers takes ~15 s of CPU at this size.
PQ48 = DenseConfig(index_type="ivfpq", pq_m=48)


@pytest.fixture(scope="module")
def ivfpq(data):
    """An IVF-PQ index over ``data`` (trained once: PQ training is the slow part of these tests)."""
    return index_vectors(data[0], PQ48)


def test_ivfpq_recall_and_nprobe_matters(data, truth, ivfpq):
    q = data[1]
    cfg, index = PQ48, ivfpq
    ivf = faiss.extract_index_ivf(index)
    assert ivf.nlist == ivf_cells(N, cfg) and ivf.nprobe == cfg.nprobe and index.ntotal == N
    assert _recall(index, q, truth) >= 0.8
    one = _recall(apply_search_params(index, replace(cfg, nprobe=1)), q, truth)
    assert one < _recall(apply_search_params(index, replace(cfg, nprobe=ivf.nlist)), q, truth)


@pytest.mark.parametrize(
    "cfg",
    [
        DenseConfig(index_type="flat"),
        DenseConfig(index_type="hnsw"),
        DenseConfig(index_type="hnsw", hnsw_m=8),
        DenseConfig(index_type="ivfpq", pq_m=8, ivf_nlist=16),
    ],
    ids=lambda c: f"{c.index_type}-m{c.hnsw_m if c.index_type == 'hnsw' else c.pq_m}",
)
def test_memory_estimate_matches_the_serialized_size(data, cfg):
    x = _unit(data[0][:, :64])  # 64 dimensions keep the extra PQ training short
    size = len(faiss.serialize_index(index_vectors(x, cfg)))
    assert abs(size - memory_estimate(N, 64, cfg)) <= 0.05 * size


def test_memory_estimate_of_a_384_dim_ivfpq(ivfpq):
    size = len(faiss.serialize_index(ivfpq))
    assert abs(size - memory_estimate(N, DIM, PQ48)) <= 0.05 * size


def test_default_ivfpq_shape():
    cfg = DenseConfig(index_type="ivfpq")
    index = _make_index(DIM, 1_000_000, cfg)
    assert (index.pq.M, index.pq.nbits, index.nlist) == (cfg.pq_m, 8, 4_000) and index.code_size == cfg.pq_m


def test_searcher_applies_the_config_settings_on_load(data, ivfpq, tmp_path):
    q = data[1]
    cfg = replace(PQ48, nprobe=5)
    faiss.write_index(ivfpq, str(tmp_path / "index.faiss"))
    (tmp_path / "docids.txt").write_text("".join(f"d{i}\n" for i in range(N)), encoding="utf-8")
    s = DenseSearcher(tmp_path, cfg, lambda ids: [])
    assert faiss.extract_index_ivf(s.index).nprobe == 5
    hits = s.search_vectors(q[:3], K)
    assert [len(h) for h in hits] == [K] * 3 and all(h[0].docid.startswith("d") for h in hits)
    assert all(a.score >= b.score for h in hits for a, b in itertools.pairwise(h))


def test_config_errors_name_the_fix(data):
    x, _ = data
    with pytest.raises(ConfigError, match="must divide the embedding dimension 384; try one of"):
        index_vectors(x[:300], DenseConfig(index_type="ivfpq", pq_m=50))
    with pytest.raises(ConfigError, match="at least 256 vectors"):
        index_vectors(x[:100], DenseConfig(index_type="ivfpq"))
    with pytest.raises(ConfigError, match="nprobe"):
        DenseConfig(nprobe=0)
    with pytest.raises(ConfigError, match="dtype"):
        DenseConfig(dtype="int8")


def test_training_sample_grows_with_the_cells():
    cfg = DenseConfig(index_type="ivfpq")
    assert train_size(5_000, cfg) == 5_000 and train_size(200_000, cfg) == 100_000
    assert train_size(21_000_000, cfg) == 39 * ivf_cells(21_000_000, cfg) > 100_000


def test_auto_dtype_is_float16_on_a_gpu_and_explicit_ones_stay():
    assert DenseConfig().resolved_dtype("cuda") == "float16"
    assert DenseConfig().resolved_dtype("cpu") in ("float32", "bfloat16")
    assert DenseConfig(dtype="float32").resolved_dtype("cuda") == "float32"


def test_line_table_reads_lines_by_number(tmp_path):
    (tmp_path / "ids.txt").write_text("100-0\nCafé-1\n\nlast\n", encoding="utf-8")
    lines = LineTable(tmp_path / "ids.txt")
    assert len(lines) == 4 and [lines[i] for i in range(4)] == ["100-0", "Café-1", "", "last"] and lines[-1] == "last"
    (tmp_path / "empty.txt").write_text("", encoding="utf-8")
    assert len(LineTable(tmp_path / "empty.txt")) == 0


class _FakeST:
    """Stands in for ``SentenceTransformer``: records how the encoder asked for the model."""

    made: ClassVar[list[dict]] = []

    def __init__(self, path: str, device: str, model_kwargs: dict) -> None:
        self.made.append({"device": device, **model_kwargs})
        self.max_seq_length = 0

    def get_embedding_dimension(self) -> int:
        return DIM


@pytest.fixture
def fake_st(monkeypatch):
    import types

    monkeypatch.setitem(sys.modules, "sentence_transformers", types.SimpleNamespace(SentenceTransformer=_FakeST))
    monkeypatch.setattr("wiki_index.search.dense.default_model_path", lambda: "model")
    _FakeST.made.clear()
    return _FakeST.made


def test_encoder_falls_back_to_float32_on_a_cpu_and_says_so(fake_st, monkeypatch, caplog):
    from wiki_index.search import dense

    monkeypatch.setattr(dense, "encode_device", lambda: "cpu")
    with caplog.at_level("INFO", logger="wiki_index.search.dense"):
        enc = dense.Encoder(DenseConfig(dtype="float16"))
    assert (enc.device, enc.where, enc.dtype, enc.dim) == ("cpu", "cpu", "float32", DIM)
    assert fake_st == [{"device": "cpu"}] and "no GPU" in caplog.text and "on cpu (float32)" in caplog.text


def test_encoder_uses_a_gpu_in_float16_and_names_it(fake_st, monkeypatch, caplog):
    import torch

    from wiki_index.search import dense

    monkeypatch.setattr(dense, "encode_device", lambda: "cuda")
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i: "Test GPU")
    with caplog.at_level("INFO", logger="wiki_index.search.dense"):
        enc = dense.Encoder(DenseConfig())
    assert (enc.device, enc.dtype, enc.where) == ("cuda", "float16", "cuda:0 (Test GPU)")
    assert (
        fake_st == [{"device": "cuda", "torch_dtype": torch.float16}]
        and "on cuda:0 (Test GPU) (float16)" in caplog.text
    )
