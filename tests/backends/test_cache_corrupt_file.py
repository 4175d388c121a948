"""CachedBackend on files that are not caches: a typed error naming the path and the fix, never a raw
sqlite3 error, and nothing written into someone else's file."""

import hashlib
import random
import re
import sqlite3

import pytest

from dialogue_gym.backends import CannedBackend, GenerationRequest, SamplingParams
from dialogue_gym.backends.cache import CachedBackend
from dialogue_gym.errors import ConfigError

MODES = ["record", "replay", "read-through"]
FIX = r"\. Delete it \(with any -wal / -shm file beside it\) to start a new cache there, or point path= at another file\."


def req(text, seed=0):
    return GenerationRequest(({"role": "user", "content": text},), SamplingParams(seed=seed))


def random_bytes(path):
    path.write_bytes(random.Random(0).randbytes(8192))


def truncated(path):
    recorder = CachedBackend(CannedBackend(["reply " * 50]), path, mode="record", identity="t")
    recorder.generate([req(f"question {i}", seed=i) for i in range(300)])
    recorder.close()  # checkpoints the write-ahead log into the file
    data = path.read_bytes()
    assert len(data) > 50_000
    path.write_bytes(data[: len(data) // 2])


def wrong_columns(path):
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE generations (id INTEGER PRIMARY KEY, text TEXT)")
        connection.execute("INSERT INTO generations (text) VALUES ('hello')")
    connection.close()


def another_program(path):
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE users (name TEXT)")
    connection.close()


CORRUPT = {
    "random bytes": (random_bytes, r"sqlite3: file is not a database"),
    "truncated": (truncated, r"sqlite3: database disk image is malformed"),
    "wrong columns": (wrong_columns, r"it is an SQLite database with another schema: table generations, generations columns \['id', 'text'\]; a cache holds only"),
    "another program's tables": (another_program, r"it is an SQLite database with another schema: table users, generations columns \[\]"),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("make_file, problem", CORRUPT.values(), ids=CORRUPT.keys())
def test_a_file_that_is_not_a_cache_is_refused_when_the_backend_is_built(tmp_path, make_file, problem, mode):
    path = tmp_path / "c.sqlite"
    make_file(path)
    before = path.read_bytes()
    message = re.escape(f"CachedBackend: the cache file {str(path)!r} is not a usable dialogue_gym cache (") + problem + ".*" + FIX
    with pytest.raises(ConfigError, match=message):
        CachedBackend(CannedBackend(["x"]), path, mode=mode, identity="t")
    assert path.read_bytes() == before  # nothing was written into it


@pytest.mark.parametrize("mode", ["record", "read-through"])
def test_a_file_spoilt_after_the_backend_was_built_is_refused_on_first_use(tmp_path, mode):
    path = tmp_path / "later.sqlite"
    cache = CachedBackend(CannedBackend(["x"]), path, mode=mode, identity="t")
    random_bytes(path)
    with pytest.raises(ConfigError, match=r"later\.sqlite' is not a usable dialogue_gym cache \(sqlite3: file is not a database\)" + ".*" + FIX):
        cache.generate([req("hi")])


def test_an_empty_file_or_a_folder_is_refused_with_the_fix(tmp_path):
    empty = tmp_path / "empty.sqlite"
    empty.touch()
    with pytest.raises(ConfigError, match=r"empty database with no recordings; record into it first with mode='record'"):
        CachedBackend(CannedBackend(["x"]), empty, mode="replay", identity="t")
    assert CachedBackend(CannedBackend(["x"]), empty, mode="record", identity="t").generate([req("hi")])[0].text == "x"
    folder = tmp_path / "folder"
    folder.mkdir()
    with pytest.raises(ConfigError, match=r"folder' is not a usable dialogue_gym cache \(it is not a regular file\)"):
        CachedBackend(CannedBackend(["x"]), folder, mode="record", identity="t")


def test_a_path_that_cannot_be_opened_says_so(tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache's folder should be")
    cache = CachedBackend(CannedBackend(["x"]), blocker / "c.sqlite", mode="record", identity="t")
    with pytest.raises(ConfigError, match=r"cannot open the cache file '.*not-a-folder/c\.sqlite' in mode='record' \((FileExistsError|NotADirectoryError): .*or point path= at another file\."):
        cache.generate([req("hi")])


def test_a_row_that_is_not_an_output_names_its_key(tmp_path):
    path = tmp_path / "c.sqlite"
    recorder = CachedBackend(CannedBackend(["x"]), path, mode="record", identity="t")
    recorder.generate([req("hi")])
    recorder.close()
    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE generations SET output = '[1, 2'")
    connection.close()
    key = recorder.key(req("hi"))[0]
    with pytest.raises(ConfigError, match=rf"the row with key {key[:12]} is not a recorded output: JSONDecodeError"):
        CachedBackend(CannedBackend(["x"]), path, mode="replay", identity="t").generate([req("hi")])


def test_lone_surrogates_in_messages_and_outputs_round_trip(tmp_path):
    # hostile actions reach an LLM counterpart's messages as they are; UTF-8 cannot encode "\ud800"
    path = tmp_path / "c.sqlite"
    hostile = req("\ud800 hi \udfff")
    recorded = CachedBackend(CannedBackend(["odd \udc80 reply"]), path, mode="record", identity="t").generate([hostile])
    replayed = CachedBackend(CannedBackend(["unused"]), path, mode="replay", identity="t").generate([hostile])
    assert replayed == recorded and replayed[0].text == "odd \udc80 reply"
    plain = CachedBackend(CannedBackend(["x"]), path, mode="off", identity="t")
    key, document = plain.key(req("h\u00e9llo \U0001f600"))
    assert key == hashlib.sha256(document.encode("utf-8")).hexdigest()  # valid text keeps its key: old recordings still hit
