"""The API key never reaches an error text, a log line or ``repr``, even when a server echoes the
request's headers in its answer (whole, JSON-escaped, or cut at the excerpt's end)."""

from __future__ import annotations

import json
import logging

import pytest

from dialogue_gym.backends import GenerationRequest, OpenAIBackend
from dialogue_gym.backends.openai_compat import REDACTED
from dialogue_gym.errors import BackendError, ConfigError

KEY = "sk-test/SECRET+key=0123456789abcdef"
KEY_ENV = "DIALOGUE_GYM_TEST_KEY"


def chat():
    return GenerationRequest(({"role": "user", "content": "hi"},))


@pytest.fixture
def keyed(chat_server, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    server = chat_server(["fine"])

    def make(**kwargs):
        kwargs = {"api_key_env": KEY_ENV, "backoff_base": 0.0, "backoff_max": 0.0, "timeout": 5, "max_retries": 0, **kwargs}
        return OpenAIBackend(server.model, server.base_url, **kwargs)

    return server, make


def _leaks(text: str) -> list[str]:
    return [part for part in (KEY, KEY[:5], KEY[-12:], "SECRET", "0123456789abcdef") if part in text]


@pytest.mark.parametrize("prefix", [b"", b"x" * 90], ids=["whole", "straddles-the-excerpt-end"])
@pytest.mark.parametrize("status", [500, 400, 429])
def test_an_echoed_key_in_a_retried_or_refused_answer_is_redacted(keyed, caplog, status, prefix):
    server, make = keyed
    server.script = [("echo", (status, prefix))]
    with caplog.at_level(logging.DEBUG, logger="dialogue_gym.backends.openai_compat"):
        (output,) = make().generate([chat()])
    assert output.error is not None and output.error.startswith(f"HTTP {status}")
    assert not _leaks(output.error) and not _leaks(caplog.text)
    assert server.headers[-1]["Authorization"] == f"Bearer {KEY}"  # it was sent, and echoed
    echoed = prefix.decode() + json.dumps({"error": "echo", "headers": server.headers[-1]})
    if prefix:  # the old excerpt, data[:300], showed the key's first characters
        assert echoed.index(KEY) < 300 < echoed.index(KEY) + len(KEY)
    else:
        assert f"Bearer {REDACTED}" in output.error


@pytest.mark.parametrize("status", [401, 403, 404])
def test_an_echoed_key_in_a_fatal_answer_is_redacted(keyed, status):
    server, make = keyed
    server.script = [("echo", (status, b""))]
    with pytest.raises(BackendError, match=rf"HTTP {status}") as raised:
        make().generate([chat()])
    assert not _leaks(str(raised.value)) and REDACTED in str(raised.value)


def test_an_echoed_key_in_an_unreadable_200_and_in_the_raised_batch_error_is_redacted(keyed):
    server, make = keyed
    server.script = [("echo", (200, b"")), ("echo", (503, b""))]
    (output,) = make().generate([chat()])
    assert output.error.startswith("unreadable response") and not _leaks(output.error)
    with pytest.raises(BackendError, match="1 of 1 requests") as raised:
        make(on_failure="raise").generate([chat()])
    assert not _leaks(str(raised.value))


def test_credential_shapes_are_redacted_without_the_configured_key(keyed):
    _, make = keyed
    backend = make(api_key_env=None)
    text = 'Authorization: Bearer abcdefgh12345678, {"api_key": "k-1234567890"}, token sk-proj-AbCdEf123456, password=hunter2hunter2'
    redacted = backend.redact(text)
    for secret in ("abcdefgh12345678", "k-1234567890", "sk-proj-AbCdEf123456", "hunter2hunter2"):
        assert secret not in redacted
    assert redacted.count(REDACTED) == 4 and redacted.startswith("Authorization: Bearer [redacted],")
    assert backend.redact("the task-management model is overloaded") == "the task-management model is overloaded"


def test_credentials_in_base_url_are_refused_without_being_shown(monkeypatch):
    with pytest.raises(ConfigError, match="must not carry credentials") as raised:
        OpenAIBackend("m", "http://user:hunter2hunter2@127.0.0.1:9/v1?api_key=abc", api_key_env=None)
    assert "hunter2hunter2" not in str(raised.value) and "abc" not in str(raised.value)


def test_the_query_of_base_url_is_not_shown(keyed, chat_server):
    backend = OpenAIBackend("m", "http://127.0.0.1:9/v1?key=SECRET0123456789abcdef", api_key_env=None, timeout=0.5, max_retries=0)
    (output,) = backend.generate([chat()])
    assert output.error is not None and "SECRET" not in output.error and "SECRET" not in repr(backend)


@pytest.mark.parametrize("padding", ["\n", "\r\n", " \t\n", "\n\n"], ids=repr)
def test_a_key_read_from_a_file_with_a_trailing_newline_is_sent_stripped(keyed, monkeypatch, caplog, padding):
    server, make = keyed
    monkeypatch.setenv(KEY_ENV, "  " + KEY + padding)
    server.script = [("echo", (500, b""))]
    with caplog.at_level(logging.DEBUG, logger="dialogue_gym.backends.openai_compat"):
        backend = make()
        (echoed,) = backend.generate([chat()])
        (output,) = backend.generate([chat()])
    assert output.error is None and output.text == "fine"
    assert server.headers[-1]["Authorization"] == f"Bearer {KEY}"
    assert not _leaks(echoed.error) and not _leaks(caplog.text) and not _leaks(repr(backend))


@pytest.mark.parametrize("inside, what", [
    ("\n", "a control character at position 36"), (" ", "a space at position 36"), ("\x1b", "a control character at position 36"),
    ("\u00e9", "a non-ASCII character at position 36"),
], ids=repr)
def test_a_key_a_header_cannot_carry_is_one_config_error_that_never_shows_it(keyed, monkeypatch, inside, what):
    _, make = keyed
    monkeypatch.setenv(KEY_ENV, KEY + inside + "sk-second-0123456789")
    with pytest.raises(ConfigError, match=rf"the API key in the environment variable {KEY_ENV} holds {what} of 56") as raised:
        make()
    assert not _leaks(str(raised.value)) and "sk-second" not in str(raised.value) and "\n" not in str(raised.value)


def test_the_cli_reports_a_broken_key_in_one_line_without_the_key(keyed, monkeypatch, capsys):
    from dialogue_gym.cli import main

    server, _ = keyed
    monkeypatch.setenv(KEY_ENV, KEY + "\nsk-second-0123456789\n")
    spec = json.dumps({"name": "openai", "model": server.model, "base_url": server.base_url, "api_key_env": KEY_ENV})
    assert main(["eval", "SEAD-Outbound-v0", "--agent", "llm", "--agent-backend", spec, "--episodes", "1", "--quiet"]) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and "holds a control character at position 36" in captured.err
    assert not _leaks(captured.err + captured.out) and "sk-second" not in captured.err
