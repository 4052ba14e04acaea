"""A faster CPU decode step for the trainer's own model: a key/value cache that grows in place and an attention kernel
for one query token.

Two costs dominate a batched decode step of a small model on a CPU besides its linear layers, and neither is
arithmetic: :class:`~transformers.DynamicCache` concatenates every layer's keys and values to a new tensor on every
step (a copy of the whole cache per token), and the CPU flash-attention kernel behind ``sdpa`` is built for long
queries, so with one query token per row it runs far below the speed of a plain batched matrix product.
:class:`GrowCache` keeps each layer's keys and values in a preallocated buffer that grows in chunks, and writes each
step's new columns in place; :func:`decode_attention` computes one-token attention as two batched matrix products
over the key/value heads (the query heads of a group packed together, no repeated keys), and hands every longer
query (a prefill) to ``sdpa`` unchanged. The weights, the layers and the rest of the forward pass are the model's
own; :func:`fast_decode` switches the attention for the span of a ``generate`` call and restores it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

NAME = "simweb_decode"
CHUNK = 64  # columns a buffer grows by when it is full (attention reads the whole buffer, its spare columns masked)


def _grow_layer_class() -> type:
    from transformers.cache_utils import DynamicLayer

    class GrowLayer(DynamicLayer):
        """A :class:`~transformers.cache_utils.DynamicLayer` whose ``keys``/``values`` are views of a buffer with spare
        columns; ``update`` writes into the buffer and reallocates only when it is full."""

        _kbuf: Any = None
        _vbuf: Any = None

        def _owns(self) -> bool:
            k = self.keys
            return (
                self._kbuf is not None
                and k.numel() > 0
                and k.data_ptr() == self._kbuf.data_ptr()
                and k.shape[:2] == self._kbuf.shape[:2]
            )

        def update(self, key_states: Any, value_states: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
            if not self.is_initialized:
                self.lazy_initialization(key_states, value_states)
            n, m = self.get_seq_length(), key_states.shape[-2]
            owned = self._owns()
            if not owned or n + m > self._kbuf.shape[-2] or self._kbuf.dtype != key_states.dtype:
                b, h, _, d = key_states.shape
                kbuf = key_states.new_zeros((b, h, n + m + CHUNK, d))  # zeros: a masked column must not be NaN
                vbuf = value_states.new_zeros((b, value_states.shape[1], n + m + CHUNK, value_states.shape[-1]))
                if n:
                    kbuf[:, :, :n] = self.keys
                    vbuf[:, :, :n] = self.values
                self._kbuf, self._vbuf = kbuf, vbuf
            self._kbuf[:, :, n : n + m] = key_states
            self._vbuf[:, :, n : n + m] = value_states
            self.keys, self.values = self._kbuf[:, :, : n + m], self._vbuf[:, :, : n + m]
            return self.keys, self.values

    return GrowLayer


_GROW: type | None = None


def grow_layer() -> type:
    """The :class:`GrowLayer` class (built on first use, so that importing this module does not import transformers)."""
    global _GROW
    if _GROW is None:
        _GROW = _grow_layer_class()
    return _GROW


def grow_cache(config: Any, data: Iterable[tuple[Any, Any]] | None = None) -> Any:
    """A :class:`~transformers.DynamicCache` of :class:`GrowLayer` layers, optionally filled with ``data``.

    Args:
        config: The model's config (its number of layers).
        data: Per layer, keys and values of shape ``[batch, kv_heads, length, head_dim]`` to start from.

    Returns:
        The cache, to pass to ``generate`` or a forward pass.
    """
    from transformers import DynamicCache

    cache = DynamicCache(config=config)
    layer = grow_layer()
    cache.layers = [layer() for _ in cache.layers]
    for i, (k, v) in enumerate(data or []):
        cache.layers[i].update(k, v)
    return cache


def decode_attention(
    module: Any, query: Any, key: Any, value: Any, attention_mask: Any, scaling: float | None = None, **kwargs: Any
) -> tuple[Any, None]:
    """Attention of one query token per row as two batched matrix products; longer queries go to ``sdpa``.

    Args:
        module: The attention module (``num_key_value_groups``).
        query: ``[batch, heads, q, head_dim]``.
        key: ``[batch, kv_heads, length, head_dim]``.
        value: Same shape as ``key``.
        attention_mask: ``sdpa``'s mask (boolean, True = attend, or additive float), or None.
        scaling: The softmax scale (default ``head_dim ** -0.5``).
        **kwargs: ``sdpa``'s other arguments (dropout, is_causal...).

    Returns:
        The output ``[batch, q, heads, head_dim]`` and None (no attention weights).
    """
    import torch
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    b, h, q, d = query.shape
    if q != 1 or kwargs.get("dropout", 0.0) or torch.is_grad_enabled():
        return sdpa_attention_forward(module, query, key, value, attention_mask, scaling=scaling, **kwargs)
    hk, length = key.shape[1], key.shape[2]
    g = h // hk
    dtype = key.dtype if key.dtype == value.dtype else torch.float32
    ks, vs, width = _whole(key), _whole(value), length
    if ks is None or vs is None or ks.shape[1] != vs.shape[1] or not dtype == key.dtype == value.dtype:
        ks, vs = key.reshape(b * hk, length, d).to(dtype), value.reshape(b * hk, length, d).to(dtype)
    else:
        width = ks.shape[1]
    qs = query.reshape(b * hk, g, d).to(dtype)
    with torch.autocast("cpu", enabled=False):
        if dtype == torch.bfloat16:  # the bf16 kernel is fast with the keys as the left operand
            scores = torch.bmm(ks, qs.transpose(1, 2)).transpose(1, 2)
        else:
            scores = torch.bmm(qs, ks.transpose(1, 2))
        scores = scores.float().view(b, hk, g, width).mul_(d**-0.5 if scaling is None else scaling)
        if width > length:
            scores[..., length:] = float("-inf")
        if attention_mask is not None:
            mask = attention_mask[..., -length:].reshape(b, 1, 1, length)
            if mask.dtype == torch.bool:
                scores[..., :length].masked_fill_(~mask, float("-inf"))
            else:
                scores[..., :length].add_(mask.float())
        probs = torch.softmax(scores, dim=-1).to(dtype).view(b * hk, g, width)
        out = torch.bmm(probs, vs)
    return out.view(b, h, 1, d).transpose(1, 2).to(query.dtype), None


def _whole(x: Any) -> Any:
    """The whole contiguous buffer ``[batch * kv_heads, capacity, head_dim]`` behind a :class:`GrowLayer` view (its
    spare columns zero), or None when ``x`` is not such a view (then the caller reads ``x`` as it is)."""
    b, hk, length, d = x.shape
    st = x.stride()
    if st[3] != 1 or st[2] != d or st[1] % d or st[0] != hk * st[1]:
        return None
    return x.as_strided((b * hk, st[1] // d, d), (st[1], d, 1))


def register() -> str:
    """Register :func:`decode_attention` (and ``sdpa``'s mask) under :data:`NAME` with transformers; returns the name."""
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, sdpa_mask

    if NAME not in AttentionInterface._global_mapping:
        AttentionInterface.register(NAME, decode_attention)
        ALL_MASK_ATTENTION_FUNCTIONS.register(NAME, sdpa_mask)
    return NAME


def supported(model: Any) -> bool:
    """Whether :func:`fast_decode` applies: a model on the CPU whose attention is ``sdpa`` (what it falls back to for
    prefills); on a GPU ``sdpa``'s own kernels are the fast ones."""
    config = getattr(model, "config", None)
    if getattr(config, "_attn_implementation", None) not in ("sdpa", NAME):
        return False
    param = next(iter(model.parameters()), None)
    return param is None or param.device.type == "cpu"


@contextmanager
def fast_decode(model: Any, enabled: bool = True) -> Iterator[bool]:
    """Within the block, ``model`` attends with :func:`decode_attention` (restored afterwards); yields whether it does.

    Args:
        model: The model about to ``generate``.
        enabled: False: leave the model alone (yields False).
    """
    if not enabled or not supported(model):
        yield False
        return
    configs = [m.config for m in model.modules() if hasattr(m, "config") and hasattr(m.config, "_attn_implementation")]
    configs = list({id(c): c for c in configs}.values())
    old = [c._attn_implementation for c in configs]
    name = register()
    try:
        for c in configs:
            c._attn_implementation = name
        yield True
    finally:
        for c, o in zip(configs, old):
            c._attn_implementation = o
