"""RL-ADA's fast paths give exactly what the general code gives: each memoised or shortened reader
against the plain code it stands for, on the lines scripted calls say and on hostile text, and the
bank's draws against the draws they replace."""

import hashlib
import json
import random
import re
from dataclasses import asdict
from functools import lru_cache

import pytest

from dialogue_gym.evaluation import Evaluator
from dialogue_gym.scenarios.common import MAX_ACTION_CHARS, MAX_CACHED_TEXT_CHARS, matching_patterns
from dialogue_gym.scenarios.rlada import reading
from dialogue_gym.scenarios.rlada import bank as bank_module
from dialogue_gym.scenarios.rlada.bank import BACKGROUND_DAYS_AGO, generate_bank
from dialogue_gym.scenarios.rlada.cues import _names_intent, cue_hits, flatten_groups, group_hits, names_intent
from dialogue_gym.scenarios.rlada.data import load_domain
from dialogue_gym.scenarios.rlada.agents import KeywordRouterAgent
from dialogue_gym.scenarios.rlada.customers import ScriptedCustomer
from dialogue_gym.scenarios.rlada.game import RladaGame, read_customer_output
from dialogue_gym.scenarios.rlada.judge import RuleJudge
from dialogue_gym.scenarios.rlada.parsing import parse_customer_output
from dialogue_gym.scenarios.rlada.prompts import tool_catalogue
from dialogue_gym.scenarios.rlada.tools import ToolOutcome

DOMAIN = load_domain()


def scripted_texts() -> list[str]:
    """What scripted calls say and hear: raw turns and their readings, tool calls and their results."""
    texts = []
    for env_id, learner, agent in (("RLADA-Banking-v0", "agent", "keyword"), ("RLADA-Customer-v0", "customer", "direct")):
        for trajectory in Evaluator(env_id, agent, learner=learner).run(24, seed=5):
            for turn in trajectory.turns:
                texts += [turn.raw, turn.text]
                outcome = turn.parsed.get("tool_outcome")
                if outcome is not None:
                    texts += [json.dumps(outcome["args"]), json.dumps(outcome["result"])]
    return list(dict.fromkeys(texts))


def hostile_texts() -> list[str]:
    """Long runs of the characters the readers look at, texts on both sides of the memo's length
    limit, odd code points, markup and number-like junk."""
    units = ("1,234.5 ", "$1", "9" * 7, "-0.5e9 ", "ACC-12 ", "[hang up] ", "Customer: ", '"', "<a>", "? ", "refund ", "\x00\ud800")
    texts = [unit * (MAX_ACTION_CHARS // len(unit) + 1) for unit in units]
    texts += [unit * (MAX_CACHED_TEXT_CHARS // len(unit)) for unit in units]
    texts += ["", " ", "?", "1" * 5000, "1,000,000,000,000,000.129", ".5", "5.", "1.2.3", "00042.80", "1e999", "NaN"]
    texts += ["transaction charged twice", "I want to dispute_charge this", "TRANSFER  TO  HUMAN please", "lost_or_stolen_card?"]
    return texts


TEXTS = scripted_texts() + hostile_texts()


def test_the_texts_cover_the_memo_limit_and_the_parsers_bound():
    lengths = [len(text) for text in TEXTS]
    assert min(lengths) == 0 and max(lengths) > MAX_ACTION_CHARS
    assert any(length <= MAX_CACHED_TEXT_CHARS for length in lengths) and any(MAX_CACHED_TEXT_CHARS < length <= MAX_ACTION_CHARS for length in lengths)
    assert len(TEXTS) > 150


def test_evidence_numbers_reads_every_match_as_the_match_loop_did():
    # _evidence_numbers takes the distinct matches from findall; the loop over match objects it replaced:
    def by_match_loop(text: str) -> frozenset[float]:
        found = {match.group(0) for match in reading._NUMBER.finditer(text)}
        return frozenset(value for value in map(reading.number_value, found) if value is not None)

    assert reading._NUMBER.groups == 0  # findall gives whole matches only while the pattern has no group
    for text in TEXTS:
        bounded = text[:MAX_ACTION_CHARS]
        assert reading.evidence_numbers(text) == by_match_loop(bounded), text[:80]


def test_number_value_of_digit_runs_is_the_general_reading():
    # number_value reads a run of at most 15 ASCII digits as float(text); the general path below it:
    def general(text: str) -> float | None:
        try:
            value = float(text.replace(",", ""))
        except ValueError:
            return None
        return round(value, 2) if value == value and abs(value) < 1e15 else None

    rng = random.Random(0)
    runs = ["0", "00", "007", "2024", "9" * 15, "9" * 16, "1" + "0" * 15, "\u0663\u0664", "\u00b2", "12\u00b2", "1,000", "1.5"]
    runs += ["".join(rng.choice("0123456789") for _ in range(rng.randint(1, 18))) for _ in range(3000)]
    for text in runs:
        assert reading.number_value(text) == general(text), text
        assert str(reading.number_value(text)) == str(general(text)), text


# The patterns as first written, each beginning with its assertion (reading.py says why they no longer do).
PLAIN_PATTERNS = {
    "ID_PATTERN": re.compile(r"\b[A-Z]{2,5}-\d{3,}\b"),
    "_LONG_NUMBER": re.compile(r"(?<![\w$.,-])(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d{3,}(?:\.\d+)?)(?![\w-])"),
    "_NUMBER": re.compile(r"(?<![A-Za-z_\d.])\d+(?:,\d{3})*(?:\.\d+)?"),
}


def near_miss_texts(count: int, seed: int = 0) -> list[str]:
    """Random texts of the characters the number and id patterns turn on: digits (ASCII and others that
    are digits to ``\\d``), upper and lower case letters (ASCII and not), the separators they look
    behind and ahead for, spaces and JSON punctuation; ids and amounts glued to each other."""
    pieces = list("0123456789AZQxy_.,-$ \"{}[]:") + ["\u0663", "\u00c9", "\u00e9", "\u212a", "DSP-", "ACC-1234", "CARD-0042", "1,234.50", "12,34", "ABCDEF-123"]
    rng = random.Random(seed)
    return ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 40))) for _ in range(count)]


@pytest.mark.parametrize("name", sorted(PLAIN_PATTERNS))
def test_the_class_first_patterns_match_what_the_plain_patterns_match(name):
    fast, plain = getattr(reading, name), PLAIN_PATTERNS[name]
    assert (fast.flags, fast.groups) == (plain.flags, plain.groups)
    for text in [*TEXTS, *near_miss_texts(20000)]:
        expected = [(match.span(), match.groups()) for match in plain.finditer(text)]
        assert [(match.span(), match.groups()) for match in fast.finditer(text)] == expected, (name, text[:80])
        assert fast.findall(text) == plain.findall(text) and fast.sub(" ", text) == plain.sub(" ", text)


def test_the_near_miss_texts_reach_every_pattern_both_ways():
    # The random texts are only worth comparing on if each pattern finds something in some and nothing in others.
    texts = near_miss_texts(20000)
    for plain in PLAIN_PATTERNS.values():
        found = [bool(plain.search(text)) for text in texts]
        assert 500 < sum(found) < len(texts) - 500, plain.pattern


@pytest.mark.parametrize("customer_max_chars", [400, 20, MAX_ACTION_CHARS])
def test_the_memoised_customer_parse_is_the_parse(customer_max_chars):
    patterns = (DOMAIN.hangup_markers, DOMAIN.role_reversal, DOMAIN.meta_talk)
    for max_sentences in (1, 2):
        for text in TEXTS:
            expected = parse_customer_output(text, *patterns, max_sentences, customer_max_chars)
            for _ in range(2):  # a miss, then a hit where the text is short enough to be kept
                assert read_customer_output(text, DOMAIN, max_sentences, customer_max_chars) == expected, text[:80]


def cue_texts() -> list[str]:
    """Every text and clause the scripted calls read cues in, the intents' own lines, and the hostile texts."""
    lines = [line for intent in DOMAIN.intents for line in (*intent.direct, *intent.vague)]
    clauses = [clause for text in TEXTS for clause in reading._CLAUSE.split(text[:MAX_ACTION_CHARS])]
    return list(dict.fromkeys([*TEXTS, *lines, *clauses, *(line.upper() for line in lines), *(line + " \u212a" for line in lines)]))


def test_cue_hits_counts_what_each_tools_patterns_find():
    # _cue_hits searches all tools' cues in one pass (group_hits); the plain code counted tool by tool.
    texts = cue_texts()
    for text in texts:
        bounded = text[:MAX_ACTION_CHARS]
        plain = {tool: len(matching_patterns(patterns, bounded)) for tool, patterns in DOMAIN.cues.items()}
        assert cue_hits(text, DOMAIN) == plain, text[:80]
        assert list(cue_hits(text, DOMAIN)) == list(DOMAIN.cues)
    with_cues = sum(any(cue_hits(text, DOMAIN).values()) for text in texts)
    assert 300 < with_cues < len(texts) - 300  # texts with cues and texts without


def test_group_hits_counts_a_pattern_in_every_place_it_stands():
    refund, card, twice = re.compile(r"refund", re.I), re.compile(r"\bcard\b"), re.compile(r"twice|double")
    groups = {"a": (refund, card, refund), "b": (card,), "c": (), "d": (twice, re.compile(r"(?:refund)", re.I))}
    flat = flatten_groups(groups)
    assert len(flat[0]) == 4  # the same object once; a pattern of the same matches is another object
    for text in ("", "Refund my card twice", "card", "REFUND", "a cardigan, double", "refund refund"):
        assert group_hits(groups, flat, text) == {name: len(matching_patterns(group, text)) for name, group in groups.items()}, text
    assert group_hits(groups, flat, "Refund my card") == {"a": 3, "b": 1, "c": 0, "d": 1}


def plain_spoken_claims(text: str) -> tuple[reading.Claim, ...]:
    """_spoken_claims as written before its word gates: every claim pattern searched in every statement."""
    found = []
    for sentence in reading.split_sentences(text):
        if sentence.rstrip().endswith("?"):
            continue
        for name, kind, target, pattern in DOMAIN.claims:
            for match in pattern.finditer(sentence):
                mode = reading._mode(sentence[: match.start()])
                if mode is not None:
                    found.append(reading.Claim(name, kind, target, match.group(0), sentence, mode))
    return tuple(found)


def glued_texts(words: list[str], fillers: list[str], count: int, seed: int) -> list[str]:
    """``count`` lines of 1-12 of ``words`` and ``fillers``, each as written, upper-cased, title-cased or with a
    Kelvin sign and a long s standing in for k and s (case folding maps them back)."""
    rng = random.Random(seed)
    texts = []
    for _ in range(count):
        text = " ".join(rng.choice(words + fillers) for _ in range(rng.randint(1, 12)))
        texts.append(rng.choice((text, text.upper(), text.title(), text.replace("k", "\u212a").replace("s", "\u017f"))))
    return texts


def claim_texts(count: int, seed: int = 0) -> list[str]:
    """Statements glued from the claim patterns' own words (each gate word and its neighbours), in
    upper, lower and mixed case, with a Kelvin sign or a long s standing in for k and s, amounts and
    negations: texts where the claims match, nearly match, or match only by case folding."""
    words = sorted({word for words, _ in reading.claim_gates(DOMAIN) if words for word in words})
    fillers = ["I", "have", "your", "the", "card", "is", "now", "not", "I'll", "$42.80", "to", "savings", "team", ".", "!", "?", "\u212a", "\u017f", "ed", "ing"]
    return glued_texts(words, fillers, count, seed)


def test_the_gated_claims_are_the_claims_of_every_pattern():
    texts = [*TEXTS, *claim_texts(6000)]
    with_claims = 0
    for text in texts:
        expected = plain_spoken_claims(text[:MAX_ACTION_CHARS])
        assert reading.spoken_claims(text, DOMAIN) == expected, text[:80]
        with_claims += bool(expected)
    assert len(texts) // 10 < with_claims < len(texts) - len(texts) // 10  # statements with claims and without


def sign_texts(count: int, seed: int = 0) -> list[str]:
    """Lines glued from the problem-sign patterns' own words, fillers that complete some of them ("what
    i've got left", "$12.50 ... $12.50"), a Kelvin sign and a long s, in upper, lower and mixed case."""
    words = sorted({word for *_, words, _ in reading.sign_gates(DOMAIN) if words for word in words})
    fillers = ["i", "it", "my", "the", "card", "have", "got", "left", "is", "up", "$12.50", "for", "again", "once", "me", ".", "?", "\u212a", "\u017f"]
    return glued_texts(words, fillers, count, seed)


def test_the_gated_signs_are_the_signs_of_every_pattern():
    # _problem_signs searches past sign_gates' word gates; the plain code searched every pattern.
    texts = [*TEXTS, *sign_texts(6000)]
    with_signs = 0
    for text in texts:
        bounded = text[:MAX_ACTION_CHARS]
        expected = frozenset(family for family, patterns in DOMAIN.signs.items() if any(p.search(bounded) for p in patterns))
        assert reading.problem_signs(text, DOMAIN) == expected, text[:80]
        with_signs += bool(expected)
    assert len(texts) // 10 < with_signs < len(texts) - len(texts) // 10  # lines with signs and without
    assert [pattern for _, pattern, *_ in reading.sign_gates(DOMAIN)] == [p for patterns in DOMAIN.signs.values() for p in patterns]


def test_a_case_sensitive_sign_is_gated_on_the_text_as_written():
    # The loader compiles every sign ignoring case; a domain built by hand may not: its words are then
    # looked for in the text as written, not lower-cased.
    from dataclasses import replace

    domain = replace(DOMAIN, signs={"atm": (re.compile(r"\bATM card\b"),), "fraud": (re.compile(r"stolen", re.IGNORECASE),)})
    assert reading.sign_gates(domain)[0][2:] == (("ATM card",), False)
    for text in ("my ATM card is STOLEN", "my atm card", "ATM", "an ATM card"):
        expected = frozenset(family for family, patterns in domain.signs.items() if any(p.search(text) for p in patterns))
        assert reading.problem_signs(text, domain) == expected, text
    assert reading.problem_signs("my ATM card is STOLEN", domain) == {"atm", "fraud"}


def test_required_words_hold_for_every_match_of_the_domains_patterns():
    # Soundness of the gate on every pattern the domain has: a pattern never matches a text that holds none of its words.
    patterns = [pattern for group in (*DOMAIN.cues.values(), *DOMAIN.signs.values()) for pattern in group]
    patterns += [pattern for *_, pattern in DOMAIN.claims] + [*DOMAIN.hangup_markers, *DOMAIN.role_reversal, *DOMAIN.meta_talk]
    texts = [*TEXTS, *cue_texts(), *claim_texts(1000)]
    gated = 0
    for pattern in patterns:
        words = reading.required_words(pattern)
        if words is None:
            continue
        gated += 1
        folded = bool(pattern.flags & re.IGNORECASE)
        for text in texts:
            if pattern.search(text):
                assert reading._may_match(words, folded, text, text.lower() if text.isascii() else None), (pattern.pattern, text[:80])
    assert gated > 0.9 * len(patterns)


@pytest.mark.parametrize(
    ("pattern", "words"),
    [
        (re.compile(r"\b(opened|filed)\b.{0,9}(dispute|claim)|\bcase (is|was) open", re.I), ("opened", "filed", "case ")),
        (re.compile(r"ab(?:cd)+ef"), None),  # no run of three: neither "ab", "cd" nor "ef"
        (re.compile(r"(?:xyzzy)+|(?:quux)?"), None),  # an alternative that may match nothing
        (re.compile(r"(?:xyzzy){0,2}refund"), ("refund",)),  # an optional item is stepped over
        (re.compile(r"(?i:Refund)|credit"), None),  # a group with flags of its own is not read
        (re.compile(r"Refund|CREDIT"), ("Refund", "CREDIT")),  # case kept where the pattern minds case
        (re.compile(r"(?=refund)\w+"), None),  # a lookahead does not consume: not read
        (re.compile(r"(?:money back){2,}"), ("money back",)),
        (re.compile(rb"refund"), None),  # bytes: not read
        (re.compile(r"\b(cat|dog) x"), ("cat", "dog")),  # a run of MIN_GATE_CHARS is long enough
        (re.compile(r"\b(put|pass) you"), (" you",)),  # the parse factors out "p": "ut" is too short
        (re.compile(r"ab-"), ("ab-",)),
        (re.compile(rb"refund", re.LOCALE | re.IGNORECASE), None),
    ],
)
def test_required_words_of_hand_written_patterns(pattern, words):
    assert reading.required_words(pattern) == words


def test_a_gate_that_ignores_case_passes_every_non_ascii_text():
    # The Kelvin sign matches k when case is ignored, so a non-ASCII text is always searched.
    assert reading._may_match(("kid",), True, "\u212aid", None)
    assert not reading._may_match(("kid",), True, "son", "son")
    assert not reading._may_match(("Kid",), False, "kid", "kid") and reading._may_match(("Kid",), False, "Kid\u212a", None)
    assert re.compile(r"kid", re.I).search("\u212aid")


@lru_cache(maxsize=None)
def audit_trajectories(episodes: int) -> tuple:
    """Episodes of every fair baseline and audit policy of every RL-ADA id (calls that fail, time out,
    hang up, call tools with bad arguments, ...), as compare_revisions.py fingerprints them (played once per size)."""
    from dialogue_gym.evaluation import evaluate
    from envs_registry import REGISTRY, resolve

    trajectories = []
    for entry in REGISTRY:
        if not entry.id.startswith("RLADA"):
            continue
        for audit in resolve(entry.audits)():
            players = [*dict.fromkeys((*audit.fair_order, audit.baseline)), *(policy.make() for policy in audit.policies)]
            for agent in players:
                trajectories += evaluate(audit.env_id, agent, episodes, 3, learner=audit.learner, env_kwargs=audit.env_kwargs)
    return tuple(trajectories)


def test_the_judge_reading_the_games_result_texts_gives_the_verdict_of_the_trajectory_alone():
    # The game hands the judge the JSON of each successful result it wrote for the agent; the judge
    # judging the trajectory alone serialises them itself. Every recorded verdict must be that one.
    trajectories = audit_trajectories(4)
    judge = RuleJudge(DOMAIN)
    for trajectory in trajectories:
        assert judge.judge(trajectory).to_dict() == trajectory.meta["verdict"], trajectory.meta["verdict"]
    calls = [turn.parsed["tool_outcome"] for trajectory in trajectories for turn in trajectory.turns if turn.parsed.get("tool_outcome")]
    assert sum(call["ok"] for call in calls) > 100 and sum(not call["ok"] for call in calls) > 20


def test_the_game_keeps_the_json_of_exactly_its_successful_results():
    game = RladaGame()
    results = 0
    for episode in range(30):
        game.reset(seed=episode, options=game.evaluation_options(episode, 0))
        policies = {"agent": KeywordRouterAgent(DOMAIN), "customer": ScriptedCustomer(DOMAIN)}
        memories = {role: policy.start(game.role_profile(role), episode) for role, policy in policies.items()}
        while not game.done:
            role = game.current_role
            game.step(policies[role].act(game.observe(role), game.info(role), memories[role]))
        successes = {
            index: json.dumps(turn.parsed["tool_outcome"]["result"])
            for index, turn in enumerate(game.turns) if (turn.parsed.get("tool_outcome") or {}).get("ok")
        }
        assert game._shown_results == successes
        messages = [message["content"] for message in game._agent_messages if message["role"] == "tool"]
        assert all(any(shown in message for message in messages) for shown in successes.values())
        results += len(successes)
    assert results > 30


def test_the_judge_reads_the_result_texts_it_is_handed():
    # Handed texts are read in place of the results (so the game's must be the results' own).
    trajectory = next(t for t in audit_trajectories(2) if t.meta["verdict"]["explained"])
    judge = RuleJudge(DOMAIN)
    index = max(i for i, turn in enumerate(trajectory.turns) if (turn.parsed.get("tool_outcome") or {}).get("ok"))
    assert judge.judge(trajectory, {index: "{}"}).explained is False
    assert judge.judge(trajectory, {index + 1: "{}"}).to_dict() == judge.judge(trajectory).to_dict()


@pytest.mark.parametrize(
    "outcome",
    [
        ToolOutcome("lookup_account", {"account_id": "ACC-1"}, True, True, {"balance": 1e-05, "n": -0.0, "x": float("nan"), "s": "caf\u00e9 \"\\\n", "l": [1, 2.5, True, None, {}]}, None),
        ToolOutcome("t\u00e9\"st", {}, True, True, {}, None),
        ToolOutcome("dispute_charge", {"amount": 5}, True, False, None, {"code": "no_charge", "message": "No charge of $5.00."}),
        ToolOutcome("nope", {}, False, False, None, {"code": "unknown_tool", "message": "There is no tool 'nope'."}),
    ],
)
def test_the_tool_message_json_is_the_message_serialised(outcome):
    message, shown = outcome.message_json()
    assert message == json.dumps(outcome.message())
    assert shown == (json.dumps(outcome.result) if outcome.ok else None)


def test_every_scripted_tool_message_is_its_message_serialised():
    for trajectory in audit_trajectories(2):
        for turn in trajectory.turns:
            call = turn.parsed.get("tool_outcome")
            if call is not None:
                outcome = ToolOutcome(call["tool"], call["args"], call["schema_ok"], call["ok"], call["result"], call["error"])
                assert outcome.message_json() == (json.dumps(outcome.message()), json.dumps(call["result"]) if call["ok"] else None)


def test_the_memoised_names_intent_is_the_plain_check():
    tools = DOMAIN.tool_names
    for intent in DOMAIN.intents[::7]:
        for text in TEXTS:
            expected = _names_intent.__wrapped__(text, intent.name, intent.phrase, tools)
            assert names_intent(text, intent, tools) == expected, (intent.name, text[:80])
            assert names_intent(text, intent, list(tools)) == expected
    intent = DOMAIN.intent("transaction_charged_twice")
    assert names_intent("Was my transaction charged twice?", intent, tools)
    assert names_intent("please transfer to human", intent, tools)
    assert not names_intent("I see the same coffee twice on my statement", intent, tools)


def test_the_domain_keeps_its_tool_names_in_order():
    assert DOMAIN.tool_names == tuple(tool.name for tool in DOMAIN.tools)
    assert DOMAIN.tool_names is DOMAIN.tool_names


def test_the_kept_tool_catalogue_is_the_domain_catalogue():
    lines = [f"- {tool.name}: {tool.description} Arguments: {json.dumps(tool.parameters, separators=(',', ':'))}" for tool in DOMAIN.tools]
    assert tool_catalogue(DOMAIN) == "\n".join(lines)


def test_the_written_out_draws_are_random_randoms_draws():
    # generate_bank draws through _below, _pick, _two_of and a + (b - a) * random() what it drew with
    # rng.randrange / randint, choice, sample(range(n), 2) and uniform; each pair from one seed, the
    # generators left in the same state.
    for seed in range(300):
        sizes = random.Random(-seed).choices(range(1, 20000), k=30)
        written, plain = random.Random(seed), random.Random(seed)
        bits = written.getrandbits
        for size in sizes:
            options = range(size)
            assert bank_module._below(bits, size) == plain.randrange(size)
            assert 1 + bank_module._below(bits, 6) == plain.randint(1, 6)
            assert bank_module._pick(bits, options) == plain.choice(options)
            assert bank_module._pick(bits, BACKGROUND_DAYS_AGO) == plain.choice(BACKGROUND_DAYS_AGO)
            if size > 37:
                assert list(bank_module._two_of(bits, size)) == plain.sample(range(size), 2)
                assert [1000 + n for n in bank_module._two_of(bits, size)] == plain.sample(range(1000, 1000 + size), 2)
            assert 4.5 + (180.0 - 4.5) * written.random() == plain.uniform(4.5, 180.0)
            assert 600 + (4000 - 600) * written.random() == plain.uniform(600, 4000)
        assert written.getstate() == plain.getstate()
    with pytest.raises(IndexError):
        bank_module._pick(bits, [])


def test_two_of_redraws_until_the_draws_differ_as_sample_does():
    # A clash twice in a row (a 1e-8 chance from a real generator) played from scripted bits: _two_of
    # against random.Random.sample drawing the same bits.
    class Scripted(random.Random):
        def __init__(self, draws):
            super().__init__(0)
            self.draws = list(draws)

        def getrandbits(self, k):
            return self.draws.pop(0)

    for draws in ([5, 7], [5, 5, 7], [5, 5, 5, 7], [9999, 12000, 9999, 9999, 0]):
        assert list(bank_module._two_of(Scripted(draws).getrandbits, 10000)) == Scripted(draws).sample(range(10000), 2)


def test_the_banks_are_the_ones_drawn_before():
    # The digest of these banks and facts as the generator drew them with random.Random's methods.
    digest = hashlib.sha256()
    for index, intent in enumerate(DOMAIN.intents):
        for seed in (index, 10**9 + 7 * index, 2**61 + index):
            bank, facts = generate_bank(seed, intent, DOMAIN)
            digest.update(json.dumps([asdict(bank), facts], sort_keys=True).encode())
    assert digest.hexdigest() == "f8f14969c9564fd34b3c7ffc3a5b5d1a55275f917f6dc9416b65c1d5384f5ef4"


def test_no_reader_keeps_a_text_over_the_memo_limit():
    long_text = "I was charged twice at Netflix. " * (MAX_CACHED_TEXT_CHARS // 30)
    assert len(long_text) > MAX_CACHED_TEXT_CHARS
    before = read_customer_output.cache_info().currsize, _names_intent.cache_info().currsize
    read_customer_output(long_text, DOMAIN, 2, 400)
    names_intent(long_text, DOMAIN.intents[0], DOMAIN.tool_names)
    assert (read_customer_output.cache_info().currsize, _names_intent.cache_info().currsize) == before
    assert read_customer_output(long_text, DOMAIN, 2, 400).utterance.startswith("I was charged twice at Netflix.")


@pytest.mark.parametrize(("env_id", "learner", "agent"), [("RLADA-Banking-v0", "agent", "random"), ("RLADA-Customer-v0", "customer", "direct")])
def test_the_per_role_terms_in_info_are_the_filtered_reward_terms(env_id, learner, agent):
    # info() hands each role its terms from the per-role record add_reward keeps; the plain code
    # filtered the game's "<role>/<term>" keys. Checked after every move (invalid actions, hang-ups,
    # judged endings: each path that credits a term) and at the end, in the order the terms came.
    evaluator = Evaluator(env_id, agent, learner=learner)
    game = evaluator.environment.game.spawn()
    checked = set()
    for episode in range(40):
        game.reset(seed=episode, options=game.evaluation_options(episode, 0))
        memories = evaluator.driver.start(game)
        while True:
            for role in game.roles:
                plain = {key.split("/", 1)[1]: value for key, value in game.reward_terms.items() if key.startswith(f"{role}/")}
                assert list(game.info(role)["reward_terms"].items()) == list(plain.items())
                checked.update(f"{role}/{term}" for term in plain)
            if game.done:
                break
            role = game.current_role
            policy = evaluator.driver.policies[role]
            game.step(policy.act(game.observe(role), game.info(role), memories[role]))
    assert {"agent/judge", "customer/realism"} <= checked
