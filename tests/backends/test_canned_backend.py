import pytest

from dialogue_gym.backends import GenerationRequest
from dialogue_gym.backends.canned import CannedBackend
from dialogue_gym.errors import BackendError, ConfigError

REQ = GenerationRequest(({"role": "user", "content": "hi"},))


def test_replies_in_order_and_cycle():
    backend = CannedBackend(["a", "b"])
    assert [o.text for o in backend.generate([REQ, REQ, REQ])] == ["a", "b", "a"]
    assert [o.text for o in backend.generate([REQ])] == ["b"]
    out = backend.generate([REQ])[0]
    assert out.finish_reason == "stop" and out.token_ids is None and out.logprobs is None
    assert out.meta == {"backend": "canned", "index": 0}
    assert backend.generate([]) == []


def test_no_cycle_runs_out():
    backend = CannedBackend(["a", "b"], cycle=False)
    assert [o.text for o in backend.generate([REQ, REQ])] == ["a", "b"]
    with pytest.raises(BackendError, match="cycle=False"):
        backend.generate([REQ])
    backend.reset()
    assert backend.generate([REQ])[0].text == "a"


@pytest.mark.parametrize("bad", [[], "hello", [1, "a"], None])
def test_bad_replies(bad):
    with pytest.raises(ConfigError):
        CannedBackend(bad)


def test_empty_message_names_value():
    with pytest.raises(ConfigError, match=r"empty"):
        CannedBackend([])
