import shutil

import pytest

from dialogue_gym.scenarios.rlada.data import DATA_DIR, load_domain


@pytest.fixture
def data_dir(tmp_path):
    """A copy of the packaged RL-ADA data folder to edit; the domain cache is emptied around the test."""
    folder = tmp_path / "domain"
    shutil.copytree(DATA_DIR, folder)
    load_domain.cache_clear()
    yield folder
    load_domain.cache_clear()
