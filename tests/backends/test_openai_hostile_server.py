"""OpenAIBackend against a hostile server (tests/backends/chat_server.py): trickled answers, malformed
200 bodies and endless bodies are failures of that request, never exceptions or stalls."""

import json
import math
import re
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dialogue_gym.backends import GenerationRequest, OpenAIBackend
from dialogue_gym.backends.openai_compat import _Attempt

DEADLINE = 0.5
BACKOFF_MAX = 0.05


def chat(text="hi"):
    return GenerationRequest(({"role": "user", "content": text},))


def backend(server, **kwargs):
    kwargs = {"backoff_base": 0.01, "backoff_max": BACKOFF_MAX, "timeout": DEADLINE, "api_key_env": None, "max_retries": 1, **kwargs}
    return OpenAIBackend(server.model, server.base_url, **kwargs)


def upper_bound(attempts):
    """Generous for a loaded 2-core machine: 5x the deadline per attempt, plus every backoff."""
    return 5 * DEADLINE * attempts + BACKOFF_MAX * (attempts - 1)


@pytest.mark.parametrize("trickle", ["trickle_head", "trickle_body"])
def test_a_trickled_answer_is_cut_off_at_the_whole_request_deadline(chat_server, trickle):
    # one byte every 50 ms never trips a per-read timeout of 0.5 s: the answer would take ~15 s
    server = chat_server(["fine"])
    client = backend(server)
    server.script = [(trickle, 0.05), (trickle, 0.05)]
    start = time.perf_counter()
    failed = client.generate([chat()])[0]
    assert time.perf_counter() - start < upper_bound(2)
    assert failed.text == "" and failed.error.startswith(f"timed out after {DEADLINE:g}s") and "after 2 attempts" in failed.error

    server.script = [(trickle, 0.05)]  # the retry, on a fresh connection, gets a normal answer
    start = time.perf_counter()
    recovered = client.generate([chat()])[0]
    assert time.perf_counter() - start < upper_bound(2)
    assert recovered.text == "fine" and recovered.error is None and recovered.meta["attempts"] == 2
    assert (client.usage.failed, client.usage.succeeded, client.usage.retries) == (1, 1, 2)


def completion(content="fine", *, usage=None, **choice_fields):
    """A chat-completion body; ``choice_fields`` go into choices[0] (``None`` drops a field)."""
    choice = {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop", **choice_fields}
    body = {"model": "test-model", "choices": [{k: v for k, v in choice.items() if v is not None}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1} if usage is None else usage}
    return body


def body(value):
    return json.dumps(value).encode()


def logprobs(*items):
    return {"content": list(items)}


def item(logprob=-0.5, token="fine"):
    return {"token": token, "logprob": logprob, "top_logprobs": []}


def with_usage_field(key, raw_value):
    """A body whose usage.<key> is the raw JSON text ``raw_value`` (NaN, 1e999, 5,000 digits, ...)."""
    return body(completion()).replace(b'"prompt_tokens": 3', f'"{key}": {raw_value}'.encode())


MALFORMED = {
    # usage and token counts
    "usage is a list": (body(completion(usage=[1, 2])), r"'usage' must be an object, got list \[1, 2\]"),
    "usage is a string": (body(completion(usage="3 tokens")), r"'usage' must be an object, got str"),
    "count not numeric": (body(completion(usage={"prompt_tokens": "many"})), r"usage\.prompt_tokens must be an integer in \[0, \d+\], got str 'many'"),
    "count negative": (body(completion(usage={"completion_tokens": -5})), r"usage\.completion_tokens must be an integer .*got int -5"),
    "count fractional": (body(completion(usage={"prompt_tokens": 2.5})), r"usage\.prompt_tokens .*got float 2\.5"),
    "count boolean": (body(completion(usage={"prompt_tokens": True})), r"usage\.prompt_tokens .*got bool True"),
    "count NaN": (with_usage_field("prompt_tokens", "NaN"), r"usage\.prompt_tokens .*got float nan"),
    "count overflows to inf": (with_usage_field("prompt_tokens", "1e999"), r"usage\.prompt_tokens .*got float inf"),
    "count beyond any model": (with_usage_field("prompt_tokens", "1" + "0" * 30), r"usage\.prompt_tokens .*got int 1000"),
    "count of 5,000 digits": (with_usage_field("prompt_tokens", "9" * 5000), r"not JSON: ValueError"),
    # choices and message
    "choices missing": (body({"model": "test-model", "usage": {}}), r"'choices' must be a non-empty list, got NoneType None"),
    "choices empty": (body({**completion(), "choices": []}), r"'choices' must be a non-empty list, got list \[\]"),
    "choices a string": (body({**completion(), "choices": "fine"}), r"'choices' must be a non-empty list, got str 'fine'"),
    "choices an object": (body({**completion(), "choices": {"0": {}}}), r"'choices' must be a non-empty list, got dict"),
    "choice not an object": (body({**completion(), "choices": [5]}), r"choices\[0\] must be an object with a 'message' object, got int 5"),
    "message missing": (body({**completion(), "choices": [{"index": 0}]}), r"choices\[0\] must be an object with a 'message' object"),
    "message a string": (body({**completion(), "choices": [{"message": "fine"}]}), r"choices\[0\] must be an object with a 'message' object"),
    "content a number": (body(completion(5)), r"message\.content must be a string or null, got int 5"),
    "content a list": (body(completion([{"type": "text", "text": "fine"}])), r"message\.content must be a string or null, got list"),
    "content a lone surrogate": (body(completion("\ud800 fine")), r"message\.content is not valid Unicode"),
    "finish_reason a number": (body(completion(finish_reason=7)), r"finish_reason must be a string or null, got int 7"),
    "model an object": (body({**completion(), "model": {"name": "x"}}), r"'model' must be a string, got dict"),
    # logprobs and token ids
    "logprobs a string": (body(completion(logprobs="-0.5")), r"choices\[0\]\.logprobs must be an object or null, got str"),
    "logprobs content an object": (body(completion(logprobs={"content": {"fine": -0.5}})), r"logprobs\.content must be a list or null, got dict"),
    "logprob item a number": (body(completion(logprobs=logprobs(-0.5))), r"logprobs\.content\[0\] must be an object, got float -0\.5"),
    "logprob a string": (body(completion(logprobs=logprobs(item("high")))), r"logprobs\.content\[0\]\.logprob must be a finite number, got str 'high'"),
    "logprob missing": (body(completion(logprobs=logprobs({"token": "fine"}))), r"logprobs\.content\[0\]\.logprob must be a finite number, got NoneType"),
    "logprob boolean": (body(completion(logprobs=logprobs(item(), item(True)))), r"logprobs\.content\[1\]\.logprob must be a finite number, got bool True"),
    "logprob NaN": (body(completion(logprobs=logprobs(item(float("nan"))))), r"logprobs\.content\[0\]\.logprob must be a finite number, got float nan"),
    "logprob an int beyond floats": (body(completion(logprobs=logprobs(item(10**400)))), r"logprobs\.content\[0\]\.logprob must be a finite number, got int 1000"),
    "logprob -Infinity": (body(completion(logprobs=logprobs(item(float("-inf"))))), r"logprobs\.content\[0\]\.logprob must be a finite number, got float -inf"),
    "token a number": (body(completion(logprobs=logprobs(item(token=17)))), r"logprobs\.content\[0\]\.token must be a string, got int 17"),
    "token_ids longer than logprobs": (
        body(completion(logprobs=logprobs(item(), item()), token_ids=[1, 2, 3])),
        r"choices\[0\]\.token_ids has 3 ids but logprobs has 2 entries",
    ),
    "token_ids a string": (body(completion(token_ids="1 2")), r"choices\[0\]\.token_ids must be a list of token ids, got str"),
    "token id a string": (body(completion(token_ids=[1, "two"])), r"choices\[0\]\.token_ids\[1\] must be an integer .*got str 'two'"),
    "prompt token id negative": (body({**completion(), "prompt_token_ids": [4, -1]}), r"prompt_token_ids\[1\] must be an integer .*got int -1"),
    # not a chat completion at all
    "html": (b"<html>502 Bad Gateway</html>", r"not JSON: JSONDecodeError"),
    "empty": (b"", r"not JSON: JSONDecodeError"),
    "invalid UTF-8": (b'\xff\xfe{"choices": []}', r"not JSON: (UnicodeDecodeError|JSONDecodeError)"),
    "JSON list": (b"[1, 2]", r"the body must be a JSON object, got list \[1, 2\]"),
    "JSON string": (b'"fine"', r"the body must be a JSON object, got str 'fine'"),
    "JSON null": (b"null", r"the body must be a JSON object, got NoneType None"),
    "deeply nested": (b"[" * 100_000 + b"]" * 100_000, r"not JSON: RecursionError"),
}


@pytest.mark.parametrize("raw, problem", MALFORMED.values(), ids=MALFORMED.keys())
def test_a_malformed_200_body_is_a_failure_of_that_request(chat_server, raw, problem):
    server = chat_server(["fine"])
    client = backend(server, max_concurrency=1, logprobs=True, price_per_million_prompt_tokens=1.0, price_per_million_completion_tokens=1.0)
    server.script = [("raw", raw), ("raw", raw)]
    failed, good = client.generate([chat("first"), chat("second")])
    assert failed.text == "" and failed.meta["attempts"] == 2
    assert failed.error is not None and "after 2 attempts" in failed.error
    assert re.match(r"unreadable response \(" + problem, failed.error), failed.error
    assert good.text == "fine" and good.error is None  # the next request on the same client is unaffected
    usage = client.usage
    assert (usage.failed, usage.succeeded, usage.attempts) == (1, 1, 3)
    assert (usage.prompt_tokens, usage.completion_tokens) == (1, 1)  # the failed answers count nothing


def test_odd_but_well_formed_answers_are_read(chat_server):
    server = chat_server(["fine"])
    client = backend(server, max_retries=0, max_concurrency=1)
    odd = [
        completion(None, usage={"prompt_tokens": None}),  # null content: the model said nothing
        {**completion(), "usage": None, "model": None},
        completion(usage={"prompt_tokens": 12.0, "completion_tokens": 2}, logprobs={"content": None}),
        completion(logprobs=logprobs(item(-1, "token_id:\u00b2"), item(0, "token_id:7"))),  # '²' is a digit, not an id
        completion(logprobs=logprobs(item(token="token_id:1"), item(token="token_id:" + "9" * 17))),
    ]
    server.script = [("raw", body(answer)) for answer in odd]
    outputs = client.generate([chat(str(i)) for i in range(len(odd))])
    assert [o.error for o in outputs] == [None] * len(odd)
    assert [o.text for o in outputs] == ["", "fine", "fine", "fine", "fine"]
    assert outputs[0].meta["usage"]["prompt_tokens"] == 0 and outputs[1].meta["model"] == "test-model"
    assert outputs[2].meta["usage"]["prompt_tokens"] == 12 and outputs[2].logprobs is None
    assert outputs[3].logprobs == [-1.0, 0.0] and outputs[3].token_ids is None
    assert outputs[4].token_ids is None and outputs[4].logprobs == [-0.5, -0.5]


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "until-close"])
def test_an_endless_body_is_cut_off_at_max_response_bytes(chat_server, declared):
    server = chat_server(["fine"])
    client = backend(server, max_response_bytes=100_000, timeout=5.0)
    server.script = [("huge", (20_000_000, declared)), ("huge", (20_000_000, declared))]
    start = time.perf_counter()
    failed = client.generate([chat()])[0]
    assert time.perf_counter() - start < 5.0
    assert failed.error.startswith("unreadable response (longer than max_response_bytes=100000)") and "after 2 attempts" in failed.error
    assert client.generate([chat()])[0].text == "fine"


def test_a_body_cut_short_of_its_content_length_is_a_connection_failure(chat_server):
    # guards the bounded body reading: http.client hands a short read back without an error
    server = chat_server(["fine"])
    client = backend(server)
    whole = body(completion())
    server.script = [("hang_up", whole), ("hang_up", whole[:40])]
    failed = client.generate([chat()])[0]
    assert failed.error.startswith("connection failed (IncompleteRead") and "after 2 attempts" in failed.error
    assert client.generate([chat()])[0].text == "fine"


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
FIELDS = [
    ("usage",), ("usage", "prompt_tokens"), ("usage", "completion_tokens"), ("choices",), ("choices", 0),
    ("choices", 0, "message"), ("choices", 0, "message", "content"), ("choices", 0, "finish_reason"),
    ("choices", 0, "logprobs"), ("choices", 0, "logprobs", "content"), ("choices", 0, "logprobs", "content", 0),
    ("choices", 0, "logprobs", "content", 0, "logprob"), ("choices", 0, "logprobs", "content", 0, "token"),
    ("choices", 0, "token_ids"), ("prompt_token_ids",), ("model",),
]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(field=st.sampled_from(FIELDS), value=JSON_VALUES, raw=st.none() | st.binary(max_size=64))
def test_any_value_in_any_field_is_read_or_a_failure_of_that_request(field, value, raw):
    """The parser of 200 bodies is total: an output or an unreadable-response failure, nothing else."""
    answer = completion(logprobs=logprobs(item(), item()), token_ids=[1, 2])
    answer["prompt_token_ids"] = [0, 1]
    container = answer
    for step in field[:-1]:
        container = container[step]
    container[field[-1]] = value
    data = raw if raw is not None else json.dumps(answer).encode()
    client = OpenAIBackend("test-model", "http://127.0.0.1:9/v1", api_key_env=None)
    try:
        output = client._parse(200, None, data)
    except _Attempt as failure:
        assert failure.cause.startswith("unreadable response (") and failure.retry
        return
    assert isinstance(output.text, str)
    output.text.encode("utf-8")  # valid Unicode: it can be written to any trajectory file
    json.dumps(output.meta, allow_nan=False)
    for numbers in (output.token_ids, output.logprobs, output.prompt_token_ids):
        assert numbers is None or all(math.isfinite(n) for n in numbers)
    assert output.token_ids is None or output.logprobs is None or len(output.token_ids) == len(output.logprobs)
