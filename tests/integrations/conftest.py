import pytest


@pytest.fixture(scope="session")
def scenario_model_dir(tmp_path_factory):
    """A tiny random chat model whose tokenizer was trained on the scenarios' opening chats."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from integration_models import build_scenario_model

    return build_scenario_model(tmp_path_factory.mktemp("scenario_model"))
