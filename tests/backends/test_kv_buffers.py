"""The in-place decoding cache layer: same keys/values as DynamicLayer's concatenation, without a copy per step."""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from transformers import LlamaConfig  # noqa: E402
from transformers.cache_utils import DynamicLayer  # noqa: E402

from dialogue_gym.backends.kv_buffers import PreallocatedLayer, full_attention_layers, preallocated_cache  # noqa: E402


def steps(batch=2, heads=3, dim=4, widths=(5, 1, 1, 1)):
    generator = torch.Generator().manual_seed(0)
    return [(torch.randn(batch, heads, w, dim, generator=generator), torch.randn(batch, heads, w, dim, generator=generator)) for w in widths]


def test_updates_equal_dynamic_layers_concatenation_and_write_into_one_buffer():
    reference, layer = DynamicLayer(), PreallocatedLayer(capacity=8)
    buffers = set()
    for keys, values in steps():
        expected = reference.update(keys, values)
        got = layer.update(keys, values)
        assert torch.equal(got[0], expected[0]) and torch.equal(got[1], expected[1])
        buffers.add(got[0].data_ptr())
    assert len(buffers) == 1  # one allocation for the prompt and every decode step
    assert layer.get_seq_length() == reference.get_seq_length() == 8


def test_a_full_buffer_grows_by_doubling_and_keeps_what_it_held():
    layer = PreallocatedLayer(capacity=5)
    written = steps(widths=(5, 1, 1))
    for keys, values in written:
        layer.update(keys, values)
    assert layer.capacity == 10  # 5 columns, then 2 * 5 when the sixth arrived
    assert torch.equal(layer.keys, torch.cat([keys for keys, _ in written], dim=-2))


def test_keys_replaced_from_outside_move_the_layer_to_a_new_buffer():
    layer = PreallocatedLayer(capacity=8)
    (keys, values), (more_keys, more_values) = steps(widths=(4, 1))
    layer.update(keys, values)
    layer.batch_select_indices(torch.tensor([1]))  # beam search reorders rows: a new tensor, not the buffer
    layer.update(more_keys[1:], more_values[1:])
    assert torch.equal(layer.keys, torch.cat([keys[1:], more_keys[1:]], dim=-2))
    assert torch.equal(layer.values, torch.cat([values[1:], more_values[1:]], dim=-2))


def test_adopted_buffers_expose_only_their_filled_columns():
    layer = PreallocatedLayer(capacity=1)
    keys, values = torch.zeros(1, 2, 6, 4), torch.ones(1, 2, 6, 4)
    layer.adopt(keys, values, length=3)
    assert layer.get_seq_length() == 3 and layer.capacity == 6
    new_keys = torch.full((1, 2, 1, 4), 7.0)
    out_keys, _ = layer.update(new_keys, new_keys)
    assert out_keys.data_ptr() == keys.data_ptr() and torch.equal(keys[:, :, 3], new_keys[:, :, 0])


def test_only_models_whose_every_layer_is_full_attention_decode_in_place():
    full = LlamaConfig(num_hidden_layers=3, hidden_size=16, num_attention_heads=2, intermediate_size=32, vocab_size=50)
    assert full_attention_layers(full) == 3
    sliding = LlamaConfig(num_hidden_layers=3, hidden_size=16, num_attention_heads=2, intermediate_size=32, vocab_size=50)
    sliding.layer_types = ["full_attention", "sliding_attention", "full_attention"]
    sliding.sliding_window = 4
    assert full_attention_layers(sliding) == 0
    cache = preallocated_cache(3, capacity=12)
    assert [type(layer) for layer in cache.layers] == [PreallocatedLayer] * 3 and cache.layers[0].capacity == 12
