import pathlib
import subprocess
import sys

import pytest

import dialogue_gym.backends as backends
from dialogue_gym.backends import Backend, CannedBackend, make_backend
from dialogue_gym.errors import ConfigError


def test_object_returned_as_is():
    class Duck:
        def generate(self, requests):
            return []

    duck = Duck()
    assert make_backend(duck) is duck
    canned = CannedBackend(["x"])
    assert make_backend(canned) is canned
    assert isinstance(canned, Backend)


def test_dict_spec_builds_canned_and_round_trips():
    backend = make_backend({"name": "canned", "replies": ["hello"], "cycle": False})
    assert isinstance(backend, CannedBackend) and backend.replies == ["hello"] and backend.cycle is False
    again = make_backend(backend.spec)
    assert again.spec == backend.spec


def test_unknown_name_lists_known_names():
    with pytest.raises(ConfigError) as info:
        make_backend({"name": "nope"})
    message = str(info.value)
    assert "'nope'" in message
    for name in backends.BACKENDS:
        assert name in message


def test_missing_name():
    with pytest.raises(ConfigError, match="no 'name'"):
        make_backend({"replies": ["x"]})


@pytest.mark.parametrize("spec", [42, "canned", ["canned"], None])
def test_wrong_type_names_the_type(spec):
    with pytest.raises(ConfigError, match=type(spec).__name__):
        make_backend(spec)


def test_bad_kwargs_become_config_error():
    with pytest.raises(ConfigError, match="colour"):
        make_backend({"name": "canned", "replies": ["x"], "colour": "red"})


def test_bad_kwarg_values_raise_config_error():
    with pytest.raises(ConfigError):
        make_backend({"name": "canned", "replies": []})


def test_register_backend():
    backends.register_backend("canned_alias", "dialogue_gym.backends.canned:CannedBackend")
    try:
        assert make_backend({"name": "canned_alias", "replies": ["y"]}).generate([None])[0].text == "y"
    finally:
        del backends.BACKENDS["canned_alias"]
    with pytest.raises(ConfigError):
        backends.register_backend("x", "no_colon")


def test_import_does_not_load_torch():
    code = (
        "import sys, dialogue_gym.backends as b; b.make_backend({'name': 'canned', 'replies': ['x']}); "
        "assert 'torch' not in sys.modules and 'transformers' not in sys.modules, sorted(sys.modules)"
    )
    root = pathlib.Path(backends.__file__).resolve().parents[2]
    subprocess.run([sys.executable, "-c", code], check=True, cwd=root)
