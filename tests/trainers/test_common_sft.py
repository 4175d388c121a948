"""The shared sft phase: expert dialogues through the export writer, chats cut into per-turn rows."""

import pytest

from trainers.common.sft import conversation_rows, expert_dataset

pytest.importorskip("datasets")


def test_conversation_rows_cut_a_chat_at_every_assistant_turn():
    chat = [
        {"role": "system", "content": "s"}, {"role": "user", "content": "u1"}, {"role": "assistant", "content": "a1"},
        {"role": "user", "content": "u2"}, {"role": "assistant", "content": "a2"}, {"role": "user", "content": "u3"},
    ]
    rows = conversation_rows(chat)
    assert [row["completion"] for row in rows] == [[chat[2]], [chat[4]]]
    assert rows[0]["prompt"] == chat[:2] and rows[1]["prompt"] == chat[:4]  # the trailing user turn trains nothing
    assert conversation_rows([{"role": "user", "content": "hi"}]) == []


def test_expert_dataset_is_the_export_writers_sft_rows_and_is_reused_once_complete(tmp_path):
    from dialogue_gym.evaluation import evaluate
    from dialogue_gym.integrations.datasets import build_rows

    rows = expert_dataset("SEAD-Outbound-v0", "adaptive", 5, seed=3, folder=tmp_path)
    expected = build_rows(evaluate("SEAD-Outbound-v0", "adaptive", 5, seed=3), "sft")
    assert rows["messages"] == [row["messages"] for row in expected]
    assert (tmp_path / "expert.jsonl").exists() and not (tmp_path / "sft.partial").exists()
    stamp = (tmp_path / "expert.jsonl").stat().st_mtime_ns
    again = expert_dataset("SEAD-Outbound-v0", "adaptive", 5, seed=3, folder=tmp_path)
    assert again["messages"] == rows["messages"] and (tmp_path / "expert.jsonl").stat().st_mtime_ns == stamp


def test_a_finished_sft_stage_is_not_trained_again_on_the_same_inputs(tmp_path, monkeypatch, capsys):
    """A run killed after SFT saved its model (in the agreement, a DAgger round, an evaluation) resumes
    without training again; other inputs train again."""
    pytest.importorskip("trl")
    import trl

    from dialogue_gym.backends.tiny import build_tiny_chat_model
    from trainers.common.sft import SFT_FINISHED, sft_lm

    chat = [{"role": "system", "content": "s"}, {"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi there"}]
    sessions = [conversation_rows(chat), conversation_rows(chat[:2] + [{"role": "assistant", "content": "good day"}])]
    model = build_tiny_chat_model(tmp_path / "m", seed=0, corpus=["s", "hello", "hi there", "good day"])
    out = tmp_path / "sft"
    first = sft_lm(str(model), sessions, out, epochs=1, learning_rate=1e-3, seed=0, max_steps=2)
    assert (out / SFT_FINISHED).exists() and not list(out.glob("checkpoint-*"))
    assert first["sft/steps"] == 2.0 and len(first["sft/curve"]) == 2

    def must_not_train(*args, **kwargs):
        raise AssertionError("trained again")

    monkeypatch.setattr(trl.SFTTrainer, "train", must_not_train)
    (out / "checkpoint-1").mkdir()  # as a kill between the marker and the checkpoints' removal leaves it
    assert sft_lm(str(model), sessions, out, epochs=1, learning_rate=1e-3, seed=0, max_steps=2) == first
    assert "already holds this stage's model" in capsys.readouterr().err and not (out / "checkpoint-1").exists()
    for other in ({"learning_rate": 2e-3}, {"max_steps": 3}, {"seed": 1}):
        arguments = {"epochs": 1, "learning_rate": 1e-3, "seed": 0, "max_steps": 2, **other}
        with pytest.raises(AssertionError, match="trained again"):
            sft_lm(str(model), sessions, out, **arguments)
    for other_dialogues in (sessions[:1], sessions[::-1]):  # fewer, or as many in another order
        with pytest.raises(AssertionError, match="trained again"):
            sft_lm(str(model), other_dialogues, out, epochs=1, learning_rate=1e-3, seed=0, max_steps=2)
    (out / SFT_FINISHED).write_text("{not json")  # a torn marker: trains again, no traceback of its own
    with pytest.raises(AssertionError, match="trained again"):
        sft_lm(str(model), sessions, out, epochs=1, learning_rate=1e-3, seed=0, max_steps=2)


def test_lora_sft_trains_adapters_and_saves_a_plain_model_with_them_merged(tmp_path):
    """``lora_rank`` > 0: adapters on the linear layers only (embeddings keep the base weights), merged
    into a plain model folder every later phase loads as it loads a full fine-tune; the rank is part of
    what the finished marker matches, and a full fine-tune's marker is the one older runs wrote."""
    pytest.importorskip("peft")
    import json

    from safetensors.torch import load_file

    from dialogue_gym.backends.tiny import build_tiny_chat_model
    from trainers.common.sft import SFT_FINISHED, sft_lm

    chat = [{"role": "system", "content": "s"}, {"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi there"}]
    sessions = [conversation_rows(chat), conversation_rows(chat[:2] + [{"role": "assistant", "content": "good day"}])]
    model = build_tiny_chat_model(tmp_path / "m", seed=0, corpus=["s", "hello", "hi there", "good day"])
    out = tmp_path / "lora"
    metrics = sft_lm(str(model), sessions, out, epochs=1, learning_rate=1e-2, seed=0, max_steps=4, lora_rank=4)
    assert metrics["sft/curve"][-1][1] < metrics["sft/curve"][0][1]
    assert not (out / "adapter_config.json").exists() and (out / "config.json").exists()
    base, tuned = load_file(model / "model.safetensors"), load_file(out / "model.safetensors")
    assert set(tuned) == set(base)  # no lora_A / lora_B left: merged
    changed = {name for name in base if not (base[name] == tuned[name]).all()}
    assert changed and all(name.endswith("proj.weight") for name in changed), sorted(changed)
    assert json.loads((out / SFT_FINISHED).read_text())["inputs"]["lora_rank"] == 4
    from trainers.common.sft import lora_config

    assert (lora_config(None, 4).r, lora_config(None, 4).lora_alpha) == (4, 8)  # alpha 2 x rank, as the RL phase's adapters
    full = sft_lm(str(model), sessions, tmp_path / "full", epochs=1, learning_rate=1e-2, seed=0, max_steps=1)
    assert "lora_rank" not in json.loads((tmp_path / "full" / SFT_FINISHED).read_text())["inputs"] and full["sft/steps"] == 1.0
    assert "lora_layers" not in json.loads((out / SFT_FINISHED).read_text())["inputs"]  # runs from before lora_layers resume


def test_lora_layers_trains_only_the_top_decoder_layers(tmp_path):
    """``lora_layers`` > 0: only the last layers' linear weights change (backpropagation stops there);
    the count is part of what the finished marker matches; more layers than the model has is a typed error."""
    pytest.importorskip("peft")
    import json

    from safetensors.torch import load_file

    from dialogue_gym.backends.tiny import build_tiny_chat_model
    from dialogue_gym.errors import ConfigError
    from trainers.common.sft import SFT_FINISHED, sft_lm

    chat = [{"role": "system", "content": "s"}, {"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi there"}]
    model = build_tiny_chat_model(tmp_path / "m", seed=0, corpus=["s", "hello", "hi there"], num_hidden_layers=3)
    out = tmp_path / "top"
    sft_lm(str(model), [conversation_rows(chat)], out, epochs=1, learning_rate=1e-2, seed=0, max_steps=2, lora_rank=4, lora_layers=2)
    base, tuned = load_file(model / "model.safetensors"), load_file(out / "model.safetensors")
    changed = {name for name in base if not (base[name] == tuned[name]).all()}
    assert {name.split(".")[2] for name in changed} == {"1", "2"}, sorted(changed)  # model.layers.N...: the top two of three
    assert {name.rsplit(".", 2)[-2] for name in changed} == {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}
    assert json.loads((out / SFT_FINISHED).read_text())["inputs"]["lora_layers"] == 2
    with pytest.raises(ConfigError, match=r"lora_layers=4, but the model has 3 decoder layers; pass 1 to 3, or 0"):
        sft_lm(str(model), [conversation_rows(chat)], tmp_path / "bad", epochs=1, learning_rate=1e-2, seed=0, max_steps=1, lora_rank=4, lora_layers=4)


def _two_chats(tmp_path):
    from dialogue_gym.backends.tiny import build_tiny_chat_model

    chat = [{"role": "system", "content": "s"}, {"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi there"}]
    sessions = [conversation_rows(chat), conversation_rows(chat[:2] + [{"role": "assistant", "content": "good day to you"}])]
    return build_tiny_chat_model(tmp_path / "m", seed=0, corpus=["s", "hello", "hi there", "good day to you"]), sessions


def test_the_plain_head_loss_is_trls_fused_head_loss(tmp_path):
    """Right-padded rows, prompt tokens and padding at -100, with and without the step's token count."""
    pytest.importorskip("trl")
    import torch
    import transformers
    from trl.trainer.utils import add_fused_lm_head

    from trainers.common.sft import plain_head_loss

    folder, _ = _two_chats(tmp_path)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder)
    torch.manual_seed(0)
    input_ids = torch.randint(3, model.config.vocab_size, (3, 9))
    attention_mask = torch.ones_like(input_ids)
    attention_mask[1, 6:] = attention_mask[2, 4:] = 0
    labels = input_ids.masked_fill(attention_mask == 0, -100)
    labels[:, :3] = -100  # the prompt
    inputs = {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels}
    scored = int((labels[:, 1:] != -100).sum())
    add_fused_lm_head(model, outputs=("log_probs",))
    fused_sum = -model(**inputs, fused_lm_head=True).log_probs.sum()
    assert scored == 10
    assert plain_head_loss(model, inputs).item() == pytest.approx(fused_sum.item() / scored, rel=1e-5)
    assert plain_head_loss(model, inputs, torch.tensor(25)).item() == pytest.approx(fused_sum.item() / 25, rel=1e-5)
    one = {**inputs, "labels": torch.full_like(labels, -100)}
    one["labels"][0, 5] = input_ids[0, 5]
    single = -model(**one, fused_lm_head=True).log_probs.sum().item()
    assert plain_head_loss(model, one, torch.tensor(1)).item() == pytest.approx(single, rel=1e-5)  # one scored token: its own loss
    assert plain_head_loss(model, {**inputs, "labels": torch.full_like(labels, -100)}).item() == 0.0  # none scored: 0, not 0 / 0


def test_the_plain_head_trainer_hands_evaluation_its_logits(tmp_path):
    """Trainer's evaluation asks compute_loss for the outputs too: TRL's own path answers it."""
    pytest.importorskip("trl")
    import torch
    import transformers
    from datasets import Dataset
    from trl import SFTConfig

    from trainers.common.sft import _plain_head_sft_trainer, plain_head_loss

    folder, _ = _two_chats(tmp_path)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder)
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    args = SFTConfig(output_dir=str(tmp_path / "out"), report_to=[], use_cpu=True, bf16=False, max_length=None)
    trainer = _plain_head_sft_trainer()(model=model, args=args, train_dataset=Dataset.from_list([{"input_ids": [3, 4, 5]}]), processing_class=tokenizer)
    inputs = {"input_ids": torch.tensor([[3, 4, 5, 6]]), "attention_mask": torch.ones(1, 4, dtype=torch.long), "labels": torch.tensor([[-100, 4, 5, 6]])}
    loss, outputs = trainer.compute_loss(trainer.model, dict(inputs), return_outputs=True)
    assert outputs.logits.shape == (1, 4, model.config.vocab_size)
    assert loss.item() == pytest.approx(plain_head_loss(trainer.model, dict(inputs)).item(), rel=1e-5)


def test_sft_on_a_cpu_trains_through_the_plain_head_to_what_trls_own_head_trains(tmp_path, monkeypatch):
    pytest.importorskip("trl")
    import torch
    import transformers
    import trl

    from trainers.common import sft

    folder, sessions = _two_chats(tmp_path)
    arguments = {"epochs": 1, "learning_rate": 1e-2, "seed": 0, "batch_size": 2, "accumulation": 2, "max_steps": 3}
    counted, plain_loss = [], sft.plain_head_loss
    monkeypatch.setattr(sft, "plain_head_loss", lambda *args: counted.append(args[2]) or plain_loss(*args))
    plain = sft.sft_lm(str(folder), sessions * 3, tmp_path / "plain", **arguments)
    calls = len(counted)
    assert calls >= 3 and all(int(count) > 0 for count in counted)  # every batch, over its step's scored tokens
    monkeypatch.setattr(sft, "_plain_head_sft_trainer", lambda: trl.SFTTrainer)
    fused = sft.sft_lm(str(folder), sessions * 3, tmp_path / "fused", **arguments)
    assert len(counted) == calls
    assert [step for step, _ in plain["sft/curve"]] == [1, 2, 3]
    assert [loss for _, loss in plain["sft/curve"]] == pytest.approx([loss for _, loss in fused["sft/curve"]], rel=1e-4)
    weights = [transformers.AutoModelForCausalLM.from_pretrained(tmp_path / name).state_dict() for name in ("plain", "fused")]
    assert plain["sft/curve"][0][1] != plain["sft/curve"][-1][1]  # it trained
    for name, tensor in weights[0].items():  # a step moves a weight by up to the rate, 1e-2; the heads sum in other orders
        torch.testing.assert_close(tensor, weights[1][name], rtol=1e-4, atol=1e-4)
