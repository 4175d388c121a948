import pytest


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """A tiny random Llama chat model + tokenizer saved with save_pretrained (built once per session)."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from dialogue_gym.backends.tiny import build_tiny_chat_model

    return build_tiny_chat_model(tmp_path_factory.mktemp("tiny_chat_model"))
