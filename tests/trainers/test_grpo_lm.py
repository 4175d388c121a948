"""Token accounting of the causal-LM GRPO core on a tiny model: the loss sees learner tokens only."""

import math

import pytest

torch = pytest.importorskip("torch")

from trainers.grpo.lm import (  # noqa: E402
    CausalLMPolicy,
    GRPOConfig,
    TurnSample,
    build_batch,
    pack_turns,
    grpo_loss,
    token_logprobs,
)


def test_build_batch_marks_exactly_the_completion_tokens():
    samples = [TurnSample([5, 6, 7], [8, 9], [-1.0, -2.0], [0.5, 0.5]), TurnSample([5], [4, 3, 2], [-1, -1, -1], [1, 1, 1])]
    input_ids, attention, mask, old, advantages = build_batch(samples, pad_id=0)
    assert input_ids.tolist() == [[5, 6, 7, 8, 9], [5, 4, 3, 2, 0]]
    assert attention.tolist() == [[1, 1, 1, 1, 1], [1, 1, 1, 1, 0]]
    # position i predicts token i + 1: the completion tokens 8, 9 are predicted at positions 2, 3
    assert mask.tolist() == [[0, 0, 1, 1, 0], [1, 1, 1, 0, 0]]
    assert old[0].tolist() == [0, 0, -1, -2, 0] and advantages[1].tolist() == [1, 1, 1, 0, 0]


def test_mismatched_sample_lengths_are_named():
    from dialogue_gym.errors import ConfigError

    with pytest.raises(ConfigError, match=r"completion_ids \(2\), old_logprobs \(1\)"):
        build_batch([TurnSample([1], [2, 3], [-1.0], [1.0, 1.0])], 0)


def test_an_empty_prompt_is_refused_rather_than_scored_from_the_last_position():
    from dialogue_gym.errors import ConfigError

    with pytest.raises(ConfigError, match=r"TurnSample 0: prompt_ids is empty.*Pass the tokenized prompt"):
        build_batch([TurnSample([], [2, 3], [-1.0, -1.0], [1.0, 1.0])], 0)


def test_loss_depends_on_learner_tokens_only(tiny_model_dir):
    policy = CausalLMPolicy(str(tiny_model_dir), GRPOConfig(kl_coef=0.01, learning_rate=1e-3, temperature=1.0))
    sample = TurnSample([3, 4, 5, 6], [7, 8, 9], [-5.0, -5.0, -5.0], [1.0, 1.0, 1.0])
    input_ids, attention, mask, old, advantages = build_batch([sample], policy._pad)
    new = token_logprobs(policy.model, input_ids, attention, 1.0)
    reference = token_logprobs(policy.reference, input_ids, attention, 1.0)
    base, _ = grpo_loss(new, old, reference, advantages, mask, 0.2, 0.01)
    prompt_only = old.clone()
    prompt_only[0, 0] = 3.0  # a prompt position: outside the mask
    assert grpo_loss(new, prompt_only, reference, advantages, mask, 0.2, 0.01)[0] == base
    learner = old.clone()
    learner[0, 3] = -0.1  # a completion position
    assert grpo_loss(new, learner, reference, advantages, mask, 0.2, 0.01)[0] != base
    new.sum().backward()  # gradients flow into the policy, not the frozen reference
    assert all(p.grad is None for p in policy.reference.parameters())


def test_update_moves_the_policy_towards_advantaged_tokens(tiny_model_dir):
    policy = CausalLMPolicy(str(tiny_model_dir), GRPOConfig(kl_coef=0.0, learning_rate=5e-3, temperature=1.0))
    prompt, completion = [3, 4, 5], [7, 8]
    input_ids = torch.tensor([prompt + completion])
    attention = torch.ones_like(input_ids)
    before = token_logprobs(policy.model, input_ids, attention, 1.0)[0, 2:4].detach()
    sample = TurnSample(prompt, completion, before.tolist(), [1.0, 1.0])
    metrics = policy.step([sample])
    after = token_logprobs(policy.model, input_ids, attention, 1.0)[0, 2:4].detach()
    assert (after > before).all() and metrics["loss/learner_tokens"] == 2
    assert abs(metrics["loss/ratio_mean"] - 1.0) < 1e-4  # old logprobs were exact: ratio starts at 1


def test_generation_records_exact_tokens_for_training(tiny_model_dir):
    policy = CausalLMPolicy(str(tiny_model_dir), GRPOConfig(max_new_tokens=6, temperature=1.0))
    memory = policy.start({}, seed=3)
    [text] = policy.act_batch([{"messages": [{"role": "user", "content": "hello"}], "turn": 0}], [{}], [memory])
    turn = policy.record(memory)["turns"][0]
    assert len(turn["completion_ids"]) == len(turn["logprobs"]) <= 6 and turn["prompt_ids"]
    assert policy.tokenizer.decode(turn["completion_ids"], skip_special_tokens=True) == text


def _perturbed(policy, seed=0, scale=0.05):
    """Move the policy's weights off the reference's, so the KL term is not zero."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in policy.model.parameters():
            parameter.add_(torch.randn(parameter.shape, generator=generator) * scale)
    return policy


def _samples_off_policy(policy, turns, offsets, advantages):
    """TurnSamples whose old logprobs are the policy's own plus ``offsets``: token ratios exp(-offset)."""
    samples = []
    for (prompt, completion), offset, advantage in zip(turns, offsets, advantages):
        input_ids = torch.tensor([prompt + completion])
        with torch.no_grad():
            current = token_logprobs(policy.model, input_ids, torch.ones_like(input_ids), policy.config.temperature)
        start = len(prompt) - 1
        own = current[0, start : start + len(completion)].tolist()
        samples.append(TurnSample(prompt, completion, [o + d for o, d in zip(own, offset)], advantage))
    return samples


def _full_batch(policy, samples):
    """The loss, its statistics and its gradient computed over all samples in one batch."""
    input_ids, attention, mask, old, advantages = build_batch(samples, policy._pad)
    new = token_logprobs(policy.model, input_ids, attention, policy.config.temperature)
    with torch.no_grad():
        reference = token_logprobs(policy.reference, input_ids, attention, policy.config.temperature)
    loss, stats = grpo_loss(new, old, reference, advantages, mask, policy.config.clip_eps, policy.config.kl_coef)
    parameters = [p for p in policy.model.parameters() if p.requires_grad]
    return float(loss.detach()), stats, torch.autograd.grad(loss, parameters)


def test_micro_batches_accumulate_to_the_full_batch_loss_and_gradient(tiny_model_dir):
    # micro-batches of 2 over 3 turns of 1, 2 and 4 learner tokens: chunks of 3 and 4 tokens, so a
    # step that weighted chunks equally, or not by their token share, gives another gradient. No
    # gradient clipping (max_grad_norm 1e9): after the step, .grad holds the accumulated gradient.
    # Tolerances are float32 summation-order noise (kernels differ across torch/transformers builds);
    # a wrong chunk weighting moves the loss and gradient by percents.
    config = GRPOConfig(kl_coef=0.05, learning_rate=1e-3, temperature=1.0, micro_batch_size=2, max_grad_norm=1e9)
    policy = _perturbed(CausalLMPolicy(str(tiny_model_dir), config))
    policy.model.train()
    turns = [([5, 6, 7], [8]), ([9, 10], [11, 12]), ([13, 14, 15, 16], [17, 18, 19, 20])]
    offsets = [[0.5], [0.0, -0.5], [0.1, -0.1, 0.5, 0.0]]
    samples = _samples_off_policy(policy, turns, offsets, [[1.0], [-0.5, -0.5], [2.0, 1.0, -1.0, 0.5]])
    loss, stats, gradient = _full_batch(policy, samples)
    metrics = policy.step(samples)
    assert metrics["loss/learner_tokens"] == 7
    # ratios exp(-offset): 3 of the 7 tokens (offsets +-0.5) lie outside the band 1 +- 0.2
    assert metrics["loss/clip_fraction"] == pytest.approx(3 / 7, abs=1e-6)
    ratios = [math.exp(-d) for offset in offsets for d in offset]
    assert metrics["loss/ratio_mean"] == pytest.approx(sum(ratios) / 7, abs=1e-5)
    assert stats["loss/kl"] > 1e-4  # the perturbed policy is away from the reference: the KL term is live
    assert metrics["loss/total"] == pytest.approx(loss, abs=1e-6) and metrics["loss/kl"] == pytest.approx(stats["loss/kl"], rel=1e-5)
    accumulated = [p.grad for p in policy.model.parameters() if p.requires_grad]
    for got, expected in zip(accumulated, gradient):
        torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-6)


def test_a_single_learner_token_carries_the_whole_step(tiny_model_dir):
    policy = CausalLMPolicy(str(tiny_model_dir), GRPOConfig(kl_coef=0.0, learning_rate=1e-3, temperature=1.0))
    [sample] = _samples_off_policy(policy, [([5, 6], [7])], [[-0.1]], [[1.0]])
    metrics = policy.step([sample])
    # one token of ratio exp(0.1), inside the band: the loss is -ratio x A, with weight 1
    assert metrics["loss/learner_tokens"] == 1 and metrics["loss/clip_fraction"] == 0.0
    assert metrics["loss/ratio_mean"] == pytest.approx(math.exp(0.1), abs=1e-5)
    assert metrics["loss/total"] == pytest.approx(-math.exp(0.1), abs=1e-5) and metrics["loss/kl"] == 0.0
    assert math.isnan(policy.step([])["loss/total"])


def test_update_gives_every_learner_token_its_trajectorys_advantage():
    from types import SimpleNamespace

    stepped = []
    fake = SimpleNamespace(step=lambda samples: stepped.extend(samples) or {"loss/total": 0.0})
    first = {"prompt_ids": [1, 2], "completion_ids": [3, 4, 5], "logprobs": [-0.1, -0.2, -0.3]}
    silent = {"prompt_ids": [1, 2, 3], "completion_ids": [], "logprobs": []}
    second = {"prompt_ids": [6], "completion_ids": [7], "logprobs": [-0.4]}
    CausalLMPolicy.update(fake, [{"turns": [first, silent]}, {"turns": [second]}], [0.5, -2])
    # the turn without generated tokens has nothing to learn from and is left out
    assert stepped == [TurnSample([1, 2], [3, 4, 5], [-0.1, -0.2, -0.3], [0.5, 0.5, 0.5]), TurnSample([6], [7], [-0.4], [-2.0])]


def test_the_reference_is_a_frozen_copy_and_only_exists_with_a_kl_term(tiny_model_dir):
    with_kl = CausalLMPolicy(str(tiny_model_dir), GRPOConfig(kl_coef=0.01))
    assert not with_kl.reference.training and not any(p.requires_grad for p in with_kl.reference.parameters())
    assert with_kl.reference is not with_kl.model
    assert CausalLMPolicy(str(tiny_model_dir), GRPOConfig(kl_coef=0.0)).reference is None


@pytest.mark.parametrize("rank", [1, 2])
def test_lora_trains_adapters_scaled_by_two_against_the_base_model(tiny_model_dir, rank):
    pytest.importorskip("peft")
    policy = CausalLMPolicy(str(tiny_model_dir), GRPOConfig(lora_rank=rank, kl_coef=0.1, learning_rate=1e-2, temperature=1.0))
    trainable = [name for name, p in policy.model.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in name for name in trainable)
    scalings = {m.scaling["default"] for m in policy.model.modules() if isinstance(getattr(m, "scaling", None), dict)}
    assert scalings == {2.0}  # lora_alpha = 2 x rank
    assert policy.reference is None  # the base model, adapters disabled, is the reference: no second copy
    [sample] = _samples_off_policy(policy, [([5, 6, 7], [8, 9])], [[0.0, 0.0]], [[1.0, 1.0]])
    # the adapters start at zero, so the policy is its reference; after one step it is not
    assert policy.step([sample])["loss/kl"] == 0.0
    assert policy.step([sample])["loss/kl"] > 0.0


def test_lora_layers_puts_trainable_adapters_on_the_top_layers_only(tiny_model_dir):
    pytest.importorskip("peft")
    layers = CausalLMPolicy(str(tiny_model_dir)).model.config.num_hidden_layers
    policy = CausalLMPolicy(str(tiny_model_dir), GRPOConfig(lora_rank=2, lora_layers=1, kl_coef=0.0))
    trainable = [name for name, p in policy.model.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in name and f".layers.{layers - 1}." in name for name in trainable), trainable
    scalings = {m.scaling["default"] for m in policy.model.modules() if isinstance(getattr(m, "scaling", None), dict)}
    assert scalings == {2.0}  # lora_alpha = 2 x rank, as with every layer adapted


def test_a_saved_checkpoint_resumes_the_same_optimisation(tiny_model_dir, tmp_path):
    config = GRPOConfig(kl_coef=0.0, learning_rate=1e-2, temperature=1.0)
    trained = CausalLMPolicy(str(tiny_model_dir), config)
    [sample] = _samples_off_policy(trained, [([5, 6, 7], [8, 9])], [[0.0, 0.0]], [[1.0, -1.0]])
    trained.step([sample])
    trained.save(tmp_path / "checkpoint")
    resumed = CausalLMPolicy(str(tiny_model_dir), config, checkpoint=str(tmp_path / "checkpoint"))
    for ours, theirs in zip(trained.model.parameters(), resumed.model.parameters()):
        torch.testing.assert_close(ours, theirs, rtol=0, atol=0)
    assert resumed.optimizer.state_dict()["state"][0]["step"] == 1
    # Adam's second step depends on the first step's moments: equal weights after it need the restored optimizer
    trained.step([sample])
    resumed.step([sample])
    for ours, theirs in zip(trained.model.parameters(), resumed.model.parameters()):
        torch.testing.assert_close(ours, theirs)


def test_a_lora_checkpoint_resumes_trainable_adapters_on_the_base_model(tiny_model_dir, tmp_path):
    pytest.importorskip("peft")
    config = GRPOConfig(lora_rank=1, kl_coef=0.0, learning_rate=1e-2, temperature=1.0)
    trained = CausalLMPolicy(str(tiny_model_dir), config)
    [sample] = _samples_off_policy(trained, [([5, 6, 7], [8, 9])], [[0.0, 0.0]], [[1.0, 1.0]])
    trained.step([sample])
    trained.save(tmp_path / "adapters")
    resumed = CausalLMPolicy(str(tiny_model_dir), config, checkpoint=str(tmp_path / "adapters"))
    adapters = {name: p for name, p in resumed.model.named_parameters() if p.requires_grad}
    assert adapters and all("lora_" in name for name in adapters)
    for name, parameter in trained.model.named_parameters():
        torch.testing.assert_close(parameter, dict(resumed.model.named_parameters())[name], rtol=0, atol=0)


def test_a_checkpoint_optimizer_state_that_is_not_plain_data_is_refused(tiny_model_dir, tmp_path):
    import datetime
    import pickle

    config = GRPOConfig(kl_coef=0.0)
    CausalLMPolicy(str(tiny_model_dir), config).save(tmp_path)
    state = torch.load(tmp_path / "optimizer.pt", weights_only=True)
    # an object that is neither a tensor nor a plain container: loading it could run pickled code
    torch.save({**state, "saved_on": datetime.date(2024, 1, 1)}, tmp_path / "optimizer.pt")
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        CausalLMPolicy(str(tiny_model_dir), config, checkpoint=str(tmp_path))


def test_a_tokenizer_without_a_pad_token_pads_with_its_eos(tiny_model_dir, tmp_path):
    import shutil

    from transformers import AutoTokenizer

    folder = shutil.copytree(tiny_model_dir, tmp_path / "no_pad")
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    tokenizer.pad_token = None
    tokenizer.save_pretrained(str(folder))
    policy = CausalLMPolicy(str(folder), GRPOConfig(kl_coef=0.0, temperature=1.0))
    assert policy.tokenizer.pad_token_id is None and policy._pad == policy.tokenizer.eos_token_id
    samples = _samples_off_policy(policy, [([5, 6], [7]), ([5, 6, 7, 8], [9, 10])], [[0.0], [0.0, 0.0]], [[1.0], [1.0, 1.0]])
    metrics = policy.step(samples)  # two lengths: the shorter row is padded
    assert metrics["loss/ratio_mean"] == pytest.approx(1.0, abs=1e-4)


def test_the_policy_seed_makes_unseeded_requests_reproducible(tiny_model_dir):
    from dialogue_gym.backends import GenerationRequest, SamplingParams

    config = GRPOConfig(max_new_tokens=8, temperature=1.0, kl_coef=0.0)
    requests = [GenerationRequest(({"role": "user", "content": "hello"},), SamplingParams())] * 2

    def drawn(policy):
        return [output.token_ids for output in policy.generate(requests)]

    default = drawn(CausalLMPolicy(str(tiny_model_dir), config))
    assert drawn(CausalLMPolicy(str(tiny_model_dir), config, seed=0)) == default  # the default seed is 0
    assert drawn(CausalLMPolicy(str(tiny_model_dir), config, seed=1)) != default


def test_recorded_logprobs_equal_a_recomputation_over_50_varied_multi_turn_prompts(tiny_model_dir):
    # The GRPO ratio divides the recomputed probability by the one recorded while sampling: the two must
    # be the same numbers up to rounding. The trainer generates without the prefix cache (whose reuse
    # flipped near-tied greedy tokens of SmolLM2), in batches of mixed lengths as rollouts do.
    policy = CausalLMPolicy(str(tiny_model_dir), GRPOConfig(max_new_tokens=12, temperature=1.0, kl_coef=0.0))
    assert policy.backend.prefix_cache is False
    words = ["hello", "price", "the order", "refund please", "why?", "ok", "no thanks", "tell me more about the deal"]
    observations, memories = [], []
    for index in range(50):
        messages = [{"role": "system", "content": f"You are agent {index % 7}."}]
        for turn in range(index % 4 + 1):
            messages.append({"role": "user", "content": " ".join(words[(index + turn + k) % len(words)] for k in range(turn + 1))})
            messages.append({"role": "assistant", "content": words[(index * 3 + turn) % len(words)]})
        observations.append({"messages": messages[:-1], "turn": index % 4})
        memories.append(policy.start({}, seed=index))
    policy.act_batch(observations, [{}] * 50, memories)
    worst = 0.0
    for memory in memories:
        turn = memory["turns"][0]
        sample = TurnSample(turn["prompt_ids"], turn["completion_ids"], turn["logprobs"], [0.0] * len(turn["completion_ids"]))
        input_ids, attention, mask, old, _ = build_batch([sample], policy._pad)
        with torch.no_grad():
            new = token_logprobs(policy.model, input_ids, attention, 1.0)
        worst = max(worst, float(((new - old).abs() * mask).max()))
    assert worst < 1e-4, worst


def test_greedy_evaluation_ignores_the_sampling_seed(tiny_model_dir):
    policy = CausalLMPolicy(str(tiny_model_dir), GRPOConfig(max_new_tokens=6, temperature=1.0, kl_coef=0.0))
    observation = {"messages": [{"role": "user", "content": "hello there"}], "turn": 0}

    def said(seed):
        return policy.act_batch([observation], [{}], [policy.start({}, seed)])[0]

    assert len({said(seed) for seed in range(4)}) > 1  # sampling: the seed matters
    policy.greedy = True
    assert len({said(seed) for seed in range(4)}) == 1


def test_pack_turns_joins_a_turn_only_when_it_extends_the_previous_one_token_for_token():
    first = TurnSample([1, 2], [3], [-0.1], [1.0])
    second = TurnSample([1, 2, 3, 4], [5, 6], [-0.2, -0.3], [1.0, 1.0])  # prompt = first's prompt + completion + [4]
    near_miss = TurnSample([1, 2, 3, 4, 5, 7, 8], [9], [-0.4], [1.0])  # 7 where second generated 6
    other = TurnSample([1], [2], [-0.5], [2.0])  # shorter than the sequence so far
    packed = pack_turns([first, second, near_miss, other])
    assert [(p.ids, p.starts) for p in packed] == [([1, 2, 3, 4, 5, 6], [2, 4]), ([1, 2, 3, 4, 5, 7, 8, 9], [7]), ([1, 2], [1])]
    assert packed[0].turns == [first, second]
    _, _, mask, old, advantages = build_batch(packed[:1], pad_id=0)
    # position i predicts token i + 1: the completions 3 (index 2) and 5, 6 (indices 4, 5)
    assert mask[0].tolist() == [0, 1, 0, 1, 1, 0] and old[0].tolist() == pytest.approx([0, -0.1, 0, -0.2, -0.3, 0])


def test_a_packed_dialogue_gives_the_loss_and_gradient_of_its_turns_one_by_one(tiny_model_dir):
    config = GRPOConfig(kl_coef=0.05, learning_rate=1e-3, temperature=1.0, micro_batch_size=8, max_grad_norm=1e9)
    policy = _perturbed(CausalLMPolicy(str(tiny_model_dir), config))
    policy.model.train()
    turns = [([5, 6, 7], [8, 9]), ([5, 6, 7, 8, 9, 21, 22], [23]), ([5, 6, 7, 8, 9, 21, 22, 23, 24], [25, 26]), ([30, 31], [32])]
    offsets = [[0.5, 0.0], [-0.5], [0.1, 0.3], [0.0]]
    samples = _samples_off_policy(policy, turns, offsets, [[1.0, 1.0], [1.0], [1.0, 1.0], [-2.0]])
    assert len(pack_turns(samples)) == 2
    loss, stats, gradient = _full_batch(policy, samples)  # four rows, each turn with its own prompt
    metrics = policy.step(samples)  # two rows: the three chained turns share one
    assert metrics["loss/learner_tokens"] == 6
    assert metrics["loss/total"] == pytest.approx(loss, abs=1e-6) and metrics["loss/kl"] == pytest.approx(stats["loss/kl"], rel=1e-5)
    assert metrics["loss/clip_fraction"] == pytest.approx(stats["loss/clip_fraction"], abs=1e-7)
    for got, expected in zip([p.grad for p in policy.model.parameters() if p.requires_grad], gradient):
        torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-6)


def test_a_memory_marked_greedy_decodes_greedily_among_sampled_rows_and_score_gives_the_tempered_logprobs(tiny_model_dir):
    # The greedy copy of a decision point (SeadTrainConfig.greedy_copy) is one row of a sampled batch.
    policy = CausalLMPolicy(str(tiny_model_dir), GRPOConfig(max_new_tokens=6, temperature=2.0, kl_coef=0.0))
    observation = {"messages": [{"role": "user", "content": "hello there"}], "turn": 0}
    rows = [policy.start({}, seed) for seed in range(6)]
    for memory in rows[:3]:
        memory["greedy"] = True
    said = policy.act_batch([observation] * 6, [{}] * 6, rows)
    policy.greedy = True
    [argmax] = policy.act_batch([observation], [{}], [policy.start({}, 99)])
    policy.greedy = False
    assert said[:3] == [argmax] * 3  # greedy whatever the seed
    assert len(set(said[3:])) > 1  # the unmarked rows still sample
    # Greedy decoding records the untempered logprobs; score() gives those of the rollout temperature,
    # which step() recomputes: the ratio starts at 1 only with the rescored ones.
    greedy_turn, sampled_turn = rows[0]["turns"][0], rows[3]["turns"][0]
    rescored = policy.score(greedy_turn["prompt_ids"], greedy_turn["completion_ids"])
    assert max(abs(a - b) for a, b in zip(policy.score(sampled_turn["prompt_ids"], sampled_turn["completion_ids"]), sampled_turn["logprobs"])) < 1e-4
    assert max(abs(a - b) for a, b in zip(rescored, greedy_turn["logprobs"])) > 1e-2
    ones = [1.0] * len(rescored)
    step = policy.step([TurnSample(greedy_turn["prompt_ids"], greedy_turn["completion_ids"], rescored, ones)])
    assert step["loss/ratio_mean"] == pytest.approx(1.0, abs=1e-4) and step["loss/clip_fraction"] == 0.0
