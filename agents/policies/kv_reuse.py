"""Reuse the keys and values of earlier turns across ``generate`` calls (multi-turn agents on a CPU).

In a multi-turn episode each turn's context is the previous turn's context, its generated ids and the tool
response; calling ``generate`` on the whole context again repeats the prefill of everything before. A
:class:`PrefixKV` keeps, per sequence, the keys and values that a ``generate`` call computed, and builds the next
call's batch from them: each context reuses its longest stored prefix and only the rest is prefilled, while the
contexts of a call stay batched together.

Layout of a batch: row ``i`` is ``[pad] * (C - n_i) + prefix_i + [pad] * (S - m_i) + new_i``. The first ``C``
columns come from the stored keys and values (``n_i`` reused tokens, left padded to the longest reuse), the last
``S`` are prefilled (``m_i`` new tokens, left padded to the longest). Rows that share a context with no stored
prefix (the episodes of a GRPO group on their first turn) can have it prefilled once beforehand
(:meth:`PrefixKV.prime`) and then all reuse it. The attention mask zeroes every pad and
transformers derives the position ids from the mask's cumulative sum, so each token gets the positions, and so
the keys, of a plain left-padded call: a hole in the middle of a row is invisible to it. Entries are matched
token by token (longest common prefix), so stored keys are never reused for a context they do not prefix.

Only models whose transformers cache is a :class:`~transformers.DynamicCache` of full-attention layers qualify
(:func:`supports`): a sliding-window or linear-attention layer cannot be re-sliced this way. Stored keys belong to
the weights that computed them: clear the store whenever the weights change.
"""

from __future__ import annotations

import inspect
import itertools
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass
class Entry:
    """One stored sequence: its token ids and, per layer, keys and values of shape ``[heads, len(tokens), head_dim]``."""

    tokens: list[int]
    kv: list[tuple[Any, Any]]

    @property
    def nbytes(self) -> int:
        """Memory held by the keys and values."""
        return sum(k.element_size() * k.nelement() + v.element_size() * v.nelement() for k, v in self.kv)


@dataclass
class Batch:
    """The inputs of one ``generate`` call with reuse: full ids, attention mask, the prefilled cache and its layout."""

    input_ids: Any
    attention_mask: Any
    cache: Any
    contexts: list[list[int]]
    reused: list[int]
    past: int
    used: list[Hashable | None]

    @property
    def width(self) -> int:
        """Columns of the input (stored part plus prefilled part)."""
        return int(self.input_ids.shape[1])


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix of two id lists (binary search over slice comparisons, which run in C)."""
    lo, hi = 0, min(len(a), len(b))
    if a[:hi] == b[:hi]:
        return hi
    while lo < hi:  # invariant: a[:lo] == b[:lo] and a[:hi + 1] != b[:hi + 1]
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def supports(model: Any) -> bool:
    """Whether ``model``'s generation cache is a plain :class:`~transformers.DynamicCache` whose rows can be re-sliced."""
    try:
        from transformers import DynamicCache
        from transformers.cache_utils import DynamicLayer

        layers = DynamicCache(config=model.config).layers
    except Exception:  # an older transformers, or a config DynamicCache cannot read
        return False
    return bool(layers) and all(type(layer) is DynamicLayer for layer in layers)


def cache_kwarg(model: Any) -> str:
    """The name ``generate`` takes a cache under: ``cache`` (recent transformers) or ``past_key_values``."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model  # a peft wrapper takes **kwargs
    return "cache" if "cache" in inspect.signature(base.prepare_inputs_for_generation).parameters else "past_key_values"


class PrefixKV:
    """Stored keys and values of recent sequences, reused as the prefix of the next ``generate`` call's contexts.

    Args:
        max_bytes: Memory budget of the stored keys and values; the oldest entries go first (None: unbounded).
    """

    def __init__(self, max_bytes: int | None = None) -> None:
        self.max_bytes = max_bytes
        self.entries: dict[Hashable, Entry] = {}
        self.reused_tokens = 0
        self.prefilled_tokens = 0
        self._ids = itertools.count()

    def _new_key(self) -> tuple[str, int]:
        """A key of the store's own (unkeyed rows, primed prompts), distinct from any caller's key."""
        return ("kv_reuse", next(self._ids))

    def clear(self) -> None:
        """Drop every entry (after the weights changed)."""
        self.entries.clear()

    def retain(self, keys: Sequence[Hashable]) -> None:
        """Keep only the entries of ``keys`` (the episodes still running)."""
        keep = set(keys)
        self.entries = {k: e for k, e in self.entries.items() if k in keep}

    def prime(
        self, model: Any, contexts: Sequence[Sequence[int]], device: Any = "cpu", keys: Sequence[Hashable] | None = None
    ) -> None:
        """Prefill once, as an entry of its own, each context that several rows share and no entry prefixes (a GRPO
        group's prompt on its first turn), so that the batch prefills it once instead of once per row.

        Args:
            model: The model (a forward pass with a fresh cache).
            contexts: The next call's contexts.
            device: The model's device.
            keys: The rows' keys; a row whose key has an entry is left out.
        """
        import torch
        from transformers import DynamicCache

        fresh = [tuple(c) for i, c in enumerate(contexts) if keys is None or keys[i] not in self.entries]
        for context, rows in Counter(fresh).items():
            if rows < 2 or len(context) < 2 or self._find(list(context), None)[1] >= len(context) - 1:
                continue
            cache = DynamicCache(config=model.config)
            with torch.no_grad():
                model(
                    input_ids=torch.tensor([context[:-1]], device=device),
                    use_cache=True,
                    logits_to_keep=1,
                    **{cache_kwarg(model): cache},
                )
            self.entries[self._new_key()] = Entry(
                list(context[:-1]), [(layer.keys[0], layer.values[0]) for layer in cache.layers]
            )
            self.prefilled_tokens += len(context) - 1

    def _find(self, context: list[int], key: Hashable | None) -> tuple[Hashable | None, int]:
        """The entry to reuse for ``context`` (by ``key``; without one, or when ``key`` has no entry yet, the longest
        match of any entry) and how many of its tokens."""
        pool = [key] if key in self.entries else list(self.entries)
        best, n = None, 0
        for k in pool:
            if (m := common_prefix(self.entries[k].tokens, context)) > n:
                best, n = k, m
        return best, min(n, len(context) - 1)  # at least one token is prefilled: generate needs its logits

    def batch(
        self,
        contexts: Sequence[Sequence[int]],
        pad_id: int,
        config: Any,
        device: Any = "cpu",
        keys: Sequence[Hashable] | None = None,
        grow: bool = False,
    ) -> Batch:
        """The inputs of one ``generate`` call on ``contexts``, with their stored prefixes already in the cache.

        Args:
            contexts: Token ids to continue (each non-empty).
            pad_id: Id of the pad columns (masked out).
            config: The model's config (the cache's layer structure).
            device: Where the inputs go.
            keys: One key per context (e.g. an episode id) to look its entry up by (a key without an entry takes the
                longest match of any entry, e.g. a primed prompt); None: always the longest match.
            grow: Build the cache of :func:`agents.policies.fast_decode.grow_cache` (written in place while decoding)
                instead of a plain :class:`~transformers.DynamicCache`.

        Returns:
            The batch; pass ``input_ids``, ``attention_mask`` and ``cache`` (under :func:`cache_kwarg`'s name) to
            ``generate``, then :meth:`keep` it.
        """
        import torch
        from transformers import DynamicCache

        contexts = [list(c) for c in contexts]
        found = [self._find(c, None if keys is None else keys[i]) for i, c in enumerate(contexts)]
        reused = [n for _, n in found]
        past = max(reused)
        new = [c[n:] for c, n in zip(contexts, reused)]
        span = max(map(len, new))
        ids = [[pad_id] * (past - n) + c[:n] + [pad_id] * (span - len(m)) + m for c, n, m in zip(contexts, reused, new)]
        mask = [[0] * (past - n) + [1] * n + [0] * (span - len(m)) + [1] * len(m) for n, m in zip(reused, new)]
        data = self._stack([k for k, _ in found], reused, past)
        if grow:
            from agents.policies.fast_decode import grow_cache

            cache = grow_cache(config, data)
        else:
            cache = DynamicCache(ddp_cache_data=data, config=config) if data else DynamicCache(config=config)
        self.reused_tokens += sum(reused)
        self.prefilled_tokens += sum(map(len, new))
        return Batch(
            torch.tensor(ids, device=device),
            torch.tensor(mask, device=device),
            cache,
            contexts,
            reused,
            past,
            [k for k, _ in found],
        )

    def _stack(self, used: list[Hashable | None], reused: list[int], past: int) -> list[tuple[Any, Any]] | None:
        """Per layer, the batch's stored keys and values, each row's prefix right-aligned in ``past`` columns."""
        rows = [(i, self.entries[k], n) for i, (k, n) in enumerate(zip(used, reused)) if n > 0]
        if not rows:
            return None
        data = []
        for layer, (k0, v0) in enumerate(rows[0][1].kv):
            keys = k0.new_zeros((len(used), k0.shape[0], past, k0.shape[2]))
            values = v0.new_zeros((len(used), v0.shape[0], past, v0.shape[2]))
            for i, entry, n in rows:
                keys[i, :, past - n :] = entry.kv[layer][0][:, :n]
                values[i, :, past - n :] = entry.kv[layer][1][:, :n]
            data.append((keys, values))
        return data

    def keep(self, batch: Batch, sequences: Any, keys: Sequence[Hashable] | None = None) -> None:
        """Store each row's keys and values after ``generate`` filled ``batch.cache``.

        Args:
            batch: What :meth:`batch` returned, after the ``generate`` call.
            sequences: ``generate``'s output ids (the input columns, then the generated ones).
            keys: The keys given to :meth:`batch` (None: fresh keys; the entries the batch used are dropped).
        """
        cache = batch.cache
        end = cache.get_seq_length()  # the last sampled token of a row has no keys yet
        tail = sequences[:, batch.width : end].tolist()
        if keys is None:
            self.drop_used(batch)
        for i in range(len(batch.contexts)):
            kv = [(layer.keys[i], layer.values[i]) for layer in cache.layers]
            self.keep_row(batch, i, kv, tail[i], None if keys is None else keys[i])
        self.evict()

    def drop_used(self, batch: Batch) -> None:
        """Drop the entries ``batch`` reused (before storing its rows under fresh keys)."""
        for k in set(batch.used) - {None}:
            self.entries.pop(k, None)

    def keep_row(self, batch: Batch, i: int, kv: list[tuple[Any, Any]], tail: list[int], key: Hashable | None) -> None:
        """Store row ``i`` of ``batch`` from its per-layer keys and values after decoding.

        Args:
            batch: What :meth:`batch` returned.
            i: The row.
            kv: Per layer, the row's keys and values ``[kv_heads, length, head_dim]`` in the batch's column layout
                (``length`` = the batch's width plus the generated tokens that have keys).
            tail: The generated tokens that have keys (``length - width`` of them).
            key: The row's key (None: a fresh one).
        """
        import torch

        context = batch.contexts[i]
        end = kv[0][0].shape[-2]
        n, m = batch.reused[i], len(context) - batch.reused[i]
        slots = torch.cat([torch.arange(batch.past - n, batch.past), torch.arange(batch.width - m, end)])
        slots = slots.to(kv[0][0].device)
        key = key if key is not None else self._new_key()
        self.entries.pop(key, None)
        self.entries[key] = Entry(
            context + list(tail[: end - batch.width]), [(k[:, slots], v[:, slots]) for k, v in kv]
        )

    def evict(self) -> None:
        """Drop the oldest entries until the store fits ``max_bytes``."""
        if self.max_bytes is None:
            return
        total = sum(e.nbytes for e in self.entries.values())
        for k in list(self.entries):
            if total <= self.max_bytes:
                break
            total -= self.entries.pop(k).nbytes
