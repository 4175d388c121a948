"""Teacher-forced agreement (is the model's greedy turn the teacher's, with the teacher's history?) and
DAgger's expert-labelled seat."""

import pytest

from dialogue_gym.evaluation import evaluate
from dialogue_gym.integrations.datasets import build_rows

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

KWARGS = {"max_agent_turns": 3}


def memorised_model(tmp_path, chat):
    """A tiny model trained until it says ``chat``'s assistant turns from their histories."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from dialogue_gym.backends.tiny import build_tiny_chat_model
    from trainers.common.sft import turn_spans

    folder = build_tiny_chat_model(tmp_path / "m", seed=0, corpus=[m["content"] for m in chat], whole_sentences=True)
    tokenizer, model = AutoTokenizer.from_pretrained(str(folder)), AutoModelForCausalLM.from_pretrained(str(folder))
    ids, spans = turn_spans(tokenizer, chat)
    x = torch.tensor([ids])
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for _ in range(40):
        logits = model(x).logits[0]
        loss = sum(torch.nn.functional.cross_entropy(logits[s - 1 : e - 1], x[0, s:e]) for s, e in spans)
        optimizer.zero_grad(), loss.backward(), optimizer.step()
    return model.eval(), tokenizer


def greedy_turns(model, tokenizer, chat, max_new_tokens):
    """Whether greedy generation from each assistant turn's history says that turn (the definition)."""
    from dialogue_gym.backends import GenerationRequest, SamplingParams
    from dialogue_gym.backends.transformers_backend import TransformersBackend

    backend = TransformersBackend(model, tokenizer=tokenizer, max_new_tokens=max_new_tokens, prefix_cache=False)
    turns = [i for i, m in enumerate(chat) if m["role"] == "assistant"]
    outputs = backend.generate([GenerationRequest(tuple(chat[:i]), SamplingParams(temperature=0.0)) for i in turns])
    return [output.text == chat[i]["content"] for output, i in zip(outputs, turns)]


@pytest.mark.slow  # trains a tiny model to memorise a chat (about 15 s idle, a minute on a loaded machine)
def test_teacher_forced_agreement_is_greedy_generation_saying_the_teachers_turn(tmp_path, monkeypatch):
    import trainers.common.sft as sft
    from trainers.common.sft import teacher_forced_agreement

    chats = [row["messages"] for row in build_rows(evaluate("SEAD-Outbound-v0", "adaptive", 6, seed=1, env_kwargs=KWARGS), "sft", KWARGS)]
    model, tokenizer = memorised_model(tmp_path, chats[0])
    per_chat = [teacher_forced_agreement(model, tokenizer, [chat], 32)["agreement_per_turn"] for chat in chats]
    generated = [greedy_turns(model, tokenizer, chat, 32) for chat in chats]
    assert [[float(g) for g in turns] for turns in generated] == per_chat
    flat = [g for turns in generated for g in turns]
    assert any(flat) and not all(flat)  # the memorised chat agrees, others in part: both outcomes are checked
    whole = teacher_forced_agreement(model, tokenizer, chats, 32, utterance_end="</response>")
    assert whole["agreement"] == pytest.approx(sum(flat) / len(flat)) and whole["turns"] == len(flat)
    assert whole["utterance_agreement"] >= whole["agreement"]
    monkeypatch.setattr(sft, "AGREEMENT_LOGITS", 1)  # one dialogue per forward pass, no padding
    assert teacher_forced_agreement(model, tokenizer, chats, 32, utterance_end="</response>") == whole
    assert teacher_forced_agreement(model, tokenizer, chats, 2)["agreement"] == 0.0  # no turn fits in 2 tokens
    assert teacher_forced_agreement(model, tokenizer, chats, 2)["too_long"] == 1.0


def test_agreement_passes_keep_their_logits_within_the_budget_and_at_most_the_batch(monkeypatch):
    import trainers.common.sft as sft

    monkeypatch.setattr(sft, "AGREEMENT_LOGITS", 1000)
    monkeypatch.setattr(sft, "AGREEMENT_BATCH", 3)
    # vocab 10: rows x longest must stay <= 100. [30, 20, 40] -> 3 x 40 = 120 too many, so [30, 20] (2 x 30);
    # then [40, 10] (2 x 40 = 80; a third row would be 3 x 40); then [10, 10, 10] stops at the batch of 3;
    # 200 alone exceeds the budget and still gets its pass.
    batches = sft.agreement_batches([30, 20, 40, 10, 10, 10, 10, 200, 5], vocab=10)
    assert [list(b) for b in batches] == [[0, 1], [2, 3], [4, 5, 6], [7], [8]]
    assert sft.agreement_batches([], vocab=10) == []
    assert [list(b) for b in sft.agreement_batches([50, 50], vocab=10)] == [[0, 1]]  # 2 x 50 x 10: exactly the budget fits
    monkeypatch.setattr(sft, "AGREEMENT_LOGITS", 2**26)
    monkeypatch.setattr(sft, "AGREEMENT_BATCH", 16)
    smollm2_calls = sft.agreement_batches([1600] * 4, vocab=49152)  # 5 GB in one pass before the budget
    assert [len(b) for b in smollm2_calls] == [1] * 4


def test_dagger_seat_plays_the_learner_and_keeps_the_experts_label_of_every_state():
    from dialogue_gym.scenarios.sead.policies import make_policy
    from trainers.common.dagger import ExpertLabels, label_agreement

    seat = ExpertLabels(make_policy("agent", "sop", None), make_policy("agent", "adaptive", None))
    played = evaluate("SEAD-Outbound-v0", seat, 4, seed=2, env_kwargs=KWARGS)
    sop = evaluate("SEAD-Outbound-v0", "sop", 4, seed=2, env_kwargs=KWARGS)
    adaptive = evaluate("SEAD-Outbound-v0", "adaptive", 4, seed=2, env_kwargs=KWARGS)
    assert [[t.raw for t in p.turns] for p in played] == [[t.raw for t in s.turns] for s in sop]  # the learner plays
    assert len(seat.sessions) == 4 and sum(map(len, seat.sessions)) == sum(1 for p in played for t in p.turns if t.role == "agent")
    first_labels = sorted(session[1]["completion"][0]["content"] for session in seat.sessions)
    assert first_labels == sorted(a.turns[2].raw for a in adaptive)  # after the same opening and reply, adaptive's own turn
    for session in seat.sessions:
        assert session[0]["completion"][0]["content"] == session[0]["said"]  # both open with the same line
        for earlier, later in zip(session, session[1:]):
            assert later["prompt"][len(earlier["prompt"])]["content"] == earlier["said"]  # the history holds what the learner said
    assert 0 < label_agreement(seat.sessions) < 1


class PieceTokenizer:
    """Decodes ids to fixed pieces of text, as a pretrained BPE tokenizer splits a tag."""

    def __init__(self, pieces):
        self.pieces = pieces

    def decode(self, ids):
        return "".join(self.pieces[i] for i in ids)


def test_utterance_stop_counts_the_tokens_up_to_a_tag_split_over_several():
    from trainers.common.sft import utterance_stop

    tokenizer = PieceTokenizer(["<response>", "Hello", " there", "</", "resp", "onse", ">", "<score>", "3"])
    assert utterance_stop(tokenizer, [0, 1, 2, 3, 4, 5, 6, 7, 8], "</response>") == 7  # "</", "resp", "onse", ">" end at token 7
    assert utterance_stop(tokenizer, [1, 2, 3, 4, 5, 6], "</response>") == 6
    assert utterance_stop(tokenizer, [1, 2, 7, 8], "</response>") == 4  # no tag: the whole turn
    one_token = PieceTokenizer(["Hi", "</response>", "<score>"])
    assert utterance_stop(one_token, [0, 1, 2], "</response>") == 2  # a tag that is one token: as before
    assert utterance_stop(one_token, [1, 2], "</response>") == 1  # the tag as the turn's first token


def test_utterance_end_must_be_a_tag():
    from trainers.common.sft import teacher_forced_agreement

    from dialogue_gym.errors import ConfigError

    for bad in ("", 7):
        with pytest.raises(ConfigError, match=r"utterance_end=.* is not a tag of the turn format; pass e.g. '</response>'"):
            teacher_forced_agreement(None, PieceTokenizer([]), [], 8, utterance_end=bad)


class TeacherExceptAtTurnEnds:
    """A stand-in model whose next-token argmax is the teacher's token everywhere but at the given
    positions (there it says token 0): teacher-forced agreement counted by hand."""

    device = "cpu"

    def __init__(self, wrong_at):
        self.wrong_at = wrong_at

    def eval(self):
        return self

    def __call__(self, input_ids, attention_mask):
        from types import SimpleNamespace

        logits = torch.zeros((*input_ids.shape, 1 + int(input_ids.max())))
        for row in range(input_ids.shape[0]):
            for position in range(input_ids.shape[1] - 1):
                said = 0 if (row, position + 1) in self.wrong_at else int(input_ids[row, position + 1])
                logits[row, position, said] = 1.0
        return SimpleNamespace(logits=logits)


def test_agreement_counts_whole_turns_and_what_was_said_apart(tmp_path):
    """Wrong only at each turn's last token (the end of turn, after the scores): no whole turn agrees,
    every utterance does; wrong inside what was said, neither does."""
    from transformers import AutoTokenizer

    from dialogue_gym.backends.tiny import build_tiny_chat_model
    from trainers.common.sft import teacher_forced_agreement, turn_spans

    chats = [row["messages"] for row in build_rows(evaluate("SEAD-Outbound-v0", "adaptive", 3, seed=4, env_kwargs=KWARGS), "sft", KWARGS)]
    folder = build_tiny_chat_model(tmp_path / "m", seed=0, corpus=[m["content"] for chat in chats for m in chat], whole_sentences=True)
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    spans = [turn_spans(tokenizer, chat)[1] for chat in chats]
    turns = sum(map(len, spans))
    ends = {(row, end - 1) for row, chat_spans in enumerate(spans) for _, end in chat_spans}
    starts = {(row, start) for row, chat_spans in enumerate(spans) for start, _ in chat_spans}
    perfect = teacher_forced_agreement(TeacherExceptAtTurnEnds(set()), tokenizer, chats, 64, utterance_end="</response>")
    assert (perfect["agreement"], perfect["utterance_agreement"], perfect["turns"]) == (1.0, 1.0, turns)
    at_ends = teacher_forced_agreement(TeacherExceptAtTurnEnds(ends), tokenizer, chats, 64, utterance_end="</response>")
    assert (at_ends["agreement"], at_ends["utterance_agreement"]) == (0.0, 1.0)
    assert at_ends["utterance_agreement_per_turn"] == [1.0] * len(at_ends["agreement_per_turn"])
    at_starts = teacher_forced_agreement(TeacherExceptAtTurnEnds(starts), tokenizer, chats, 64, utterance_end="</response>")
    assert (at_starts["agreement"], at_starts["utterance_agreement"]) == (0.0, 0.0)
    assert "utterance_agreement" not in teacher_forced_agreement(TeacherExceptAtTurnEnds(ends), tokenizer, chats, 64)


def test_agreement_batches_by_the_models_own_vocabulary(tiny_model_dir, monkeypatch):
    import trainers.common.sft as sft
    from transformers import AutoModelForCausalLM, AutoTokenizer

    chats = [row["messages"] for row in build_rows(evaluate("SEAD-Outbound-v0", "adaptive", 2, seed=3, env_kwargs=KWARGS), "sft", KWARGS)]
    tokenizer, model = AutoTokenizer.from_pretrained(str(tiny_model_dir)), AutoModelForCausalLM.from_pretrained(str(tiny_model_dir))
    seen, batches = [], sft.agreement_batches
    monkeypatch.setattr(sft, "agreement_batches", lambda lengths, vocab: seen.append(vocab) or batches(lengths, vocab))
    sft.teacher_forced_agreement(model, tokenizer, chats, 64)
    assert seen == [model.config.vocab_size] and seen[0] > 1
