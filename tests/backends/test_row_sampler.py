"""Per-request sampling in the transformers backend: a request's sample depends on its own seed alone."""

import pytest

from dialogue_gym.backends import GenerationRequest, SamplingParams

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from transformers import TopPLogitsWarper  # noqa: E402

from dialogue_gym.backends.row_sampler import TokenPicker, inverse_cdf, row_uniforms  # noqa: E402
from dialogue_gym.backends.transformers_backend import TransformersBackend  # noqa: E402

SAMPLED = {"temperature": 0.8, "top_p": 0.9, "max_new_tokens": 10}


def request(text, seed=None, **sampling):
    return GenerationRequest(({"role": "user", "content": text},), SamplingParams(**{**SAMPLED, **sampling, "seed": seed}))


TARGET = request("Hello, I would like to ask about my order.", seed=11)
MATES = [request("Hi", seed=1), request("<reply>cooperation</reply>", seed=2), request("Can you confirm your name?", seed=3),
         request("Yes. " * 9, seed=4), request("What is the status?", seed=5), request("No.")]


def assert_same_reply(a, b):
    assert a.token_ids == b.token_ids and a.text == b.text and a.finish_reason == b.finish_reason
    assert a.logprobs == pytest.approx(b.logprobs, abs=1e-4)  # batching changes the scores' rounding only


@pytest.mark.parametrize("prefix_cache", [True, False], ids=["cache", "no-cache"])
def test_a_sampled_reply_is_the_same_alone_in_any_batch_and_at_any_batch_size(tiny_model_dir, prefix_cache):
    alone = TransformersBackend(str(tiny_model_dir), prefix_cache=prefix_cache).generate([TARGET])[0]
    assert len(alone.token_ids) >= 3
    for batch_size in (1, 2, 8):
        backend = TransformersBackend(str(tiny_model_dir), batch_size=batch_size, prefix_cache=prefix_cache)
        assert_same_reply(backend.generate([TARGET])[0], alone)
        # batches of 5 with other batch-mates, the target at another row each time
        assert_same_reply(backend.generate(MATES[:2] + [TARGET] + MATES[2:4])[2], alone)
        assert_same_reply(backend.generate([TARGET] + MATES[2:])[0], alone)
    # the reply is drawn with the request's seed: another seed draws another reply
    other = TransformersBackend(str(tiny_model_dir), prefix_cache=prefix_cache).generate([request(TARGET.messages[0]["content"], seed=12)])[0]
    assert other.token_ids != alone.token_ids


def test_the_prefix_cache_samples_the_same_replies_as_full_prefill(tiny_model_dir):
    played = []
    for prefix_cache in (True, False):
        backend = TransformersBackend(str(tiny_model_dir), batch_size=3, prefix_cache=prefix_cache)
        chats = [[{"role": "system", "content": "Follow the procedure: greet, verify, resolve, close. " * 4},
                  {"role": "user", "content": text}] for text in ("Hi", "Where is my order?", "Yes.", "No.")]
        turns = []
        for turn in range(3):
            batch = [GenerationRequest(tuple(chat), SamplingParams(**SAMPLED, seed=10 * turn + row)) for row, chat in enumerate(chats)]
            outputs = backend.generate(batch)
            turns.append(outputs)
            for chat, out in zip(chats, outputs):
                chat += [{"role": "assistant", "content": out.text}, {"role": "user", "content": "Go on."}]
        played.append(turns)
        assert backend.prefix_cache_stats()["cached_tokens"] > 0 or not prefix_cache
    for with_cache, without in zip(*played):
        for a, b in zip(with_cache, without):
            assert_same_reply(a, b)


def test_backend_seed_rows_depend_on_call_and_position_not_on_batch_size(tiny_model_dir):
    batch = [request(r.messages[0]["content"]) for r in [TARGET] + MATES[:4]]
    runs = []
    for batch_size in (1, 2, 8):
        backend = TransformersBackend(str(tiny_model_dir), batch_size=batch_size, seed=0)
        runs.append([backend.generate(batch), backend.generate(batch)])
    for first, second in runs[1:]:
        for a, b in zip(first + second, runs[0][0] + runs[0][1]):
            assert_same_reply(a, b)
    # a later call, or another position in the call, draws afresh
    assert [o.token_ids for o in runs[0][0]] != [o.token_ids for o in runs[0][1]]
    twice = TransformersBackend(str(tiny_model_dir), seed=0).generate([batch[0], batch[0]])
    assert twice[0].token_ids != twice[1].token_ids


def test_seeded_sampling_leaves_the_global_rng_alone_and_unseeded_sampling_follows_it(tiny_model_dir):
    backend = TransformersBackend(str(tiny_model_dir))
    state = torch.get_rng_state()
    backend.generate([TARGET] + MATES[:2])
    assert torch.equal(torch.get_rng_state(), state)
    unseeded = [request("Hi"), request("Where is my order?")]
    torch.manual_seed(5)
    first = [o.token_ids for o in backend.generate(unseeded)]
    torch.manual_seed(5)
    assert [o.token_ids for o in backend.generate(unseeded)] == first
    assert [o.token_ids for o in backend.generate(unseeded)] != first


def test_sampled_logprobs_are_those_of_the_warped_distribution(tiny_model_dir):
    backend = TransformersBackend(str(tiny_model_dir), prefix_cache=False)
    out = backend.generate([TARGET])[0]
    ids = torch.tensor([out.prompt_token_ids + out.token_ids])
    with torch.inference_mode():
        logits = backend.model(input_ids=ids).logits[0].float()
    start = len(out.prompt_token_ids)
    expected = []
    for t, token in enumerate(out.token_ids):
        scores = TopPLogitsWarper(SAMPLED["top_p"])(ids[:, : start + t], logits[start + t - 1 : start + t] / SAMPLED["temperature"])
        logp = torch.log_softmax(scores, dim=-1)[0]
        assert torch.isfinite(logp[token])  # never a token top_p removed
        expected.append(float(logp[token]))
    assert out.logprobs == pytest.approx(expected, abs=1e-4)


def test_greedy_is_argmax_with_its_logprob():
    scores = torch.tensor([[0.0, 2.0, 1.0, 2.0], [3.0, -1.0, float("-inf"), 0.0]])
    picker = TokenPicker(None)
    picked = picker(torch.zeros((2, 1), dtype=torch.long), scores)
    assert picked.argmax(dim=-1).tolist() == [1, 0]  # the first of tied maxima, as torch.argmax
    assert torch.isinf(picked).sum().item() == 6
    assert torch.allclose(picker.logprobs[0], torch.log_softmax(scores, dim=-1)[[0, 1], [1, 0]])


def test_inverse_cdf_draws_each_token_as_often_as_its_probability():
    probs = torch.tensor([0.5, 0.0, 0.3, 0.2, 0.0])
    scores = probs.log().expand(1000, -1)
    grid = (torch.arange(1000, dtype=torch.float64) + 0.5) / 1000  # evenly spread uniforms
    counts = torch.bincount(inverse_cdf(scores, grid), minlength=5)
    assert counts.tolist() == [500, 0, 300, 200, 0]
    # the largest uniform torch draws, and one whose product with the total rounds up to the total
    # (as 1.0 does), still land on a token of probability > 0, never past the end
    edge = torch.tensor([1 - 2**-53, 1.0, 0.0], dtype=torch.float64)
    assert inverse_cdf(scores[:3], edge).tolist() == [3, 3, 0]
    # nor does the smallest land on a token of probability 0 before the first likely one
    assert inverse_cdf(torch.tensor([[float("-inf"), 0.0, 0.0]]), torch.zeros(1, dtype=torch.float64)).tolist() == [1]


def test_each_row_samples_with_its_own_uniforms_step_by_step():
    scores = torch.tensor([[0.0, 0.0], [0.0, 0.0], [0.0, 0.0]])  # two equally likely tokens per row
    uniforms = torch.tensor([[0.1, 0.9], [0.9, 0.1], [0.4, 0.6]], dtype=torch.float64)
    picker = TokenPicker(uniforms)
    steps = [picker(torch.zeros((3, 1), dtype=torch.long), scores).argmax(dim=-1).tolist() for _ in range(2)]
    assert steps == [[0, 1, 0], [1, 0, 1]]
    assert torch.allclose(torch.stack(picker.logprobs), torch.full((2, 3), -0.6931471805599453))


def test_row_uniforms_come_from_each_rows_seed_alone():
    table = row_uniforms([7, 8, 7], 4, torch.device("cpu"))
    assert table.shape == (3, 4) and table.dtype == torch.float64
    assert torch.equal(table[0], table[2]) and not torch.equal(table[0], table[1])
    assert torch.equal(row_uniforms([8], 4, torch.device("cpu"))[0], table[1])
    assert torch.equal(table[0], torch.rand(4, generator=torch.Generator().manual_seed(7), dtype=torch.float64))
