"""The transformers backend's model lookup and input checks, by hand (issue 43 item 6,
dialogue_gym/backends/transformers_backend.py): the .gguf a folder or the smollm2 package holds, a CUDA
device asked for where there is none, and a request whose messages lack a role or content."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from dialogue_gym.backends import GenerationRequest, SamplingParams
from dialogue_gym.errors import ConfigError

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from dialogue_gym.backends import transformers_backend  # noqa: E402
from dialogue_gym.backends.transformers_backend import TransformersBackend, find_smollm2_gguf  # noqa: E402


def test_the_smollm2_package_gives_its_first_gguf_by_name(tmp_path, monkeypatch):
    for name in ("b.gguf", "a.gguf", "notes.txt"):
        (tmp_path / name).write_text("x")
    monkeypatch.setattr(transformers_backend.importlib.util, "find_spec", lambda name: SimpleNamespace(submodule_search_locations=[str(tmp_path)]))
    assert find_smollm2_gguf() == tmp_path / "a.gguf"


def test_a_folder_holding_one_gguf_and_no_config_is_that_gguf(tmp_path):
    (tmp_path / "model.gguf").write_text("x")
    assert TransformersBackend._resolve_model(str(tmp_path), None) == (tmp_path, "model.gguf")


def test_a_cuda_device_where_cuda_is_not_available_is_refused_before_loading(tmp_path, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ConfigError, match=r"device='cuda' but CUDA is not available here; pass device='cpu'"):
        TransformersBackend(str(tmp_path / "never-read"), device="cuda")


@pytest.mark.parametrize("message", [{"role": "user"}, {"content": "Hi"}, "Hi"])
def test_a_message_without_a_role_or_content_is_refused(tiny_model_dir, message):
    backend = TransformersBackend(str(tiny_model_dir), max_new_tokens=2)
    with pytest.raises(ConfigError, match=r"request 0 must be a GenerationRequest whose messages are dicts with 'role' and 'content'"):
        backend.generate([GenerationRequest(({"role": "system", "content": "Be brief."}, message), SamplingParams())])


def test_a_stop_string_in_the_first_token_ends_the_reply_after_that_token(tiny_model_dir):
    backend = TransformersBackend(str(tiny_model_dir), max_new_tokens=4)
    messages = ({"role": "user", "content": "Hello there"},)
    free = backend.generate([GenerationRequest(messages, SamplingParams(temperature=0.0, max_new_tokens=4))])[0]
    first = backend.tokenizer.decode(free.token_ids[:1], skip_special_tokens=True)
    assert len(free.token_ids) >= 2 and first  # greedy: the same reply again below, up to the stop
    stopped = backend.generate([GenerationRequest(messages, SamplingParams(temperature=0.0, max_new_tokens=4, stop=(first,)))])[0]
    # the stop is found in the decoded first token: the reply keeps that one token and the text before the stop
    assert (list(stopped.token_ids), stopped.text, stopped.finish_reason) == (list(free.token_ids[:1]), "", "stop")


def test_a_stop_string_completed_by_a_later_token_keeps_the_tokens_up_to_that_one(tiny_model_dir):
    backend = TransformersBackend(str(tiny_model_dir), max_new_tokens=8)
    messages = ({"role": "user", "content": "Hello there"},)
    free = backend.generate([GenerationRequest(messages, SamplingParams(temperature=0.0, max_new_tokens=8))])[0]
    decoded = [backend.tokenizer.decode(free.token_ids[:k], skip_special_tokens=True) for k in range(len(free.token_ids) + 1)]
    # the first token k >= 2 whose text brings a character the reply has not shown yet: that character is the stop
    k, stop = next(
        (k, c) for k in range(2, len(decoded)) if decoded[k].startswith(decoded[k - 1])
        for c in decoded[k][len(decoded[k - 1]) :] if not c.isspace() and c not in decoded[k - 1]
    )
    stopped = backend.generate([GenerationRequest(messages, SamplingParams(temperature=0.0, max_new_tokens=8, stop=(stop,)))])[0]
    # greedy gives the same reply up to the stop: kept through token k, the text cut just before the stop
    assert (list(stopped.token_ids), stopped.text, stopped.finish_reason) == (list(free.token_ids[:k]), decoded[k][: decoded[k].index(stop)], "stop")
