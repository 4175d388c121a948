"""A ``transformers`` cache layer that decodes in place: keys and values live in buffers sized for the
whole ``generate`` call, so each step writes its new column instead of copying the cache.

``transformers``' ``DynamicLayer`` appends a step's keys/values with ``torch.cat``, which allocates a
new tensor the size of the whole cache, per layer, per step: decoding then costs a full copy of the
cache per token, and with the large blocks a prefix cache keeps alive, glibc serves those allocations
from fresh pages (measured: 27,000-49,000 page faults per decode step at 32 rows, against 0-2,500
without the prefix cache, and 1.2-1.9x the CPU per step). :class:`PreallocatedLayer` reserves
``capacity`` columns once (the prompt's width plus ``max_new_tokens``), writes each step into the next
free columns and exposes the filled part as a view, so a step copies only its own column.

Everything else about a ``DynamicLayer`` is kept (it is a subclass, so ``DynamicCache`` treats it as
one): ``keys``/``values`` are the filled ``(batch, kv_heads, length, head_dim)`` part, and an operation
that replaces them (a beam search reorder, a crop) moves the layer onto a new buffer at the next update.
This module imports ``transformers``; the backend imports it only when it builds its caches.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers.cache_utils import DynamicLayer


class PreallocatedLayer(DynamicLayer):
    """A ``DynamicLayer`` whose keys/values are the first ``length`` columns of buffers of ``capacity``
    columns; :meth:`update` writes new columns in place and reallocates (doubling) only when full."""

    def __init__(self, capacity: int) -> None:
        super().__init__()
        self.capacity = capacity
        self._key_buffer: torch.Tensor | None = None
        self._value_buffer: torch.Tensor | None = None

    def adopt(self, key_buffer: torch.Tensor, value_buffer: torch.Tensor, length: int) -> None:
        """Use ``key_buffer``/``value_buffer`` (``(batch, kv_heads, capacity, head_dim)``, their first
        ``length`` columns filled) as this layer's buffers."""
        self.lazy_initialization(key_buffer, value_buffer)
        self._key_buffer, self._value_buffer = key_buffer, value_buffer
        self.capacity = key_buffer.shape[-2]
        self.keys, self.values = key_buffer[..., :length, :], value_buffer[..., :length, :]

    def _holds_buffer_view(self) -> bool:
        """Whether ``keys``/``values`` are still the filled part of this layer's buffers (nothing replaced them)."""
        buffer = self._key_buffer
        return (
            buffer is not None
            and self.keys.data_ptr() == buffer.data_ptr()
            and self.values.data_ptr() == self._value_buffer.data_ptr()
            and self.keys.shape[:2] == buffer.shape[:2]
            and self.keys.stride() == buffer.stride()
        )

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        length = self.get_seq_length()
        end = length + key_states.shape[-2]
        if not (self._holds_buffer_view() and end <= self._key_buffer.shape[-2]):
            capacity = max(self.capacity, end, 2 * length)
            keys = key_states.new_zeros((*key_states.shape[:2], capacity, key_states.shape[-1]))
            values = value_states.new_zeros((*value_states.shape[:2], capacity, value_states.shape[-1]))
            if length:
                keys[..., :length, :] = self.keys
                values[..., :length, :] = self.values
            self._key_buffer, self._value_buffer, self.capacity = keys, values, capacity
        self._key_buffer[..., length:end, :] = key_states
        self._value_buffer[..., length:end, :] = value_states
        self.keys, self.values = self._key_buffer[..., :end, :], self._value_buffer[..., :end, :]
        return self.keys, self.values


def full_attention_layers(config: Any) -> int:
    """How many layers a model with ``config`` has when every one keeps a plain ``DynamicLayer`` cache
    (full attention), so that :class:`PreallocatedLayer` can stand in for each; 0 otherwise (sliding-window,
    chunked, linear-attention and shared-KV layers keep the layers ``transformers`` gives them)."""
    from transformers.cache_utils import DynamicCache

    try:
        layers = DynamicCache(config=config).layers
    except (TypeError, ValueError, AttributeError):  # a transformers without per-config cache layers
        return 0
    return len(layers) if all(type(layer) is DynamicLayer for layer in layers) else 0


def preallocated_cache(num_layers: int, capacity: int) -> Any:
    """An empty ``DynamicCache`` of ``num_layers`` :class:`PreallocatedLayer` of ``capacity`` columns."""
    from transformers.cache_utils import DynamicCache

    cache = DynamicCache()
    cache.layers = [PreallocatedLayer(capacity) for _ in range(num_layers)]
    return cache
