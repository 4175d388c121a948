"""Every constant of the project specification (shared/SPEC.md) pinned to the code's default, one place for all of them.

A changed default fails here with a message naming the SPEC section (``"SPEC §1: T_max ..."``), so a
mutation of a config default, a rule constant or a trainer setting cannot pass the suite silently.
Where a default lives in more than one place (the game's config, the trainer's config, a pure
function's keyword default), each place is pinned: the trainer passes its own value to the function,
so a drift between them is a real bug. Behavioural checks sit beside the constants where the SPEC
states a rule at a boundary (``0.4 <= CR <= 0.6`` is ideal, cooperation >= 3 to act, the 15th turn
times out) because the constant alone would not catch a flipped comparison.

Values the SPEC marks as examples or leaves to the paper are pinned to the paper's value and say so.
"""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest

from dialogue_gym.backends.openai_compat import OpenAIBackend
from dialogue_gym.curriculum.profile_controller import MODES, ProfileController
from dialogue_gym.rewards import rlada as rlada_rewards
from dialogue_gym.rewards import tracer as tracer_rewards
from dialogue_gym.scenarios.rlada.data import load_domain
from dialogue_gym.scenarios.rlada.game import RladaConfig
from dialogue_gym.scenarios.rlada.parsing import ACTION_TYPES
from dialogue_gym.scenarios.sead import state as sead_state
from dialogue_gym.scenarios.sead.data import load_behaviors
from dialogue_gym.scenarios.sead.game import MIN_COOPERATION_TO_ACT, SeadConfig, SeadGame
from dialogue_gym.scenarios.sead.parsing import render_user_output
from dialogue_gym.scenarios.sead.scripted_user import UserDynamics
from dialogue_gym.scenarios.tracer import data as tracer_data
from dialogue_gym.scenarios.tracer.game import TracerConfig
from dialogue_gym.types import Outcome, Trajectory
from trainers.grpo.lm import GRPOConfig
from trainers.rlada.arena import StoppingRule, match_plan
from trainers.rlada.config import RladaTrainConfig
from trainers.sead.config import PRESETS as SEAD_PRESETS
from trainers.sead.config import SeadTrainConfig
from trainers.tracer.config import TracerTrainConfig


def default(function, name):
    """The keyword default of ``function``'s parameter ``name`` (what a caller that omits it gets)."""
    return inspect.signature(function).parameters[name].default


SEAD_CATEGORIES = (
    "Identity_Verification", "Trust_and_Skepticism", "Cost_Concerns", "Rule_Understanding", "Suitability_Doubts",
    "Information_Confirmation", "Operational_Concerns", "Communication_and_Comprehension", "Comparison_and_Verification",
    "Testing_and_Exploration", "Historical_Experience", "Boundary_Testing", "Progress_Expediting", "Detail_Fixation",
)
RLADA_TOOLS = ("lookup_account", "get_transactions", "dispute_charge", "check_card_status", "transfer_funds", "transfer_to_human")

# (SPEC section, what, how to read it from the code, the SPEC's value)
CONSTANTS = [
    # -- §1 SEAD ----------------------------------------------------------------------------------
    ("§1", "T_max (SeadConfig.max_agent_turns)", lambda: SeadConfig().max_agent_turns, 15),
    ("§1", "T_max (SeadTrainConfig.max_agent_turns)", lambda: SeadTrainConfig().max_agent_turns, 15),
    ("§1", "state dims (c, e, tr) = 5 x 4 x 6", lambda: sead_state.STATE_DIMS, (5, 4, 6)),
    ("§1", "state names", lambda: sead_state.STATE_NAMES, ("cooperation", "emotion", "trust")),
    ("§1", "120 initial states", lambda: len(sead_state.ALL_STATES), 120),
    ("§1", "1-3 behaviors per profile (MAX_BEHAVIORS)", lambda: sead_state.MAX_BEHAVIORS, 3),
    ("§1", "cooperation >= 3 to do the operation", lambda: MIN_COOPERATION_TO_ACT, 3),
    ("§1", "reward R = 1[success] (SeadConfig.success_reward)", lambda: SeadConfig().success_reward, 1.0),
    ("§1", "behavior library categories", lambda: tuple(sorted({b.category for b in load_behaviors().behaviors})), tuple(sorted(SEAD_CATEGORIES))),
    ("§1", "unresolved behavior for more than 3 rounds hangs up (UserDynamics.patience_rounds)", lambda: UserDynamics().patience_rounds, 3),
    # -- §1 Profile Controller --------------------------------------------------------------------
    ("§1 Profile Controller", "ideal band", lambda: default(ProfileController, "band"), (0.4, 0.6)),
    ("§1 Profile Controller", "target CR of w(s) = 1 - |CR(s) - 0.5|", lambda: default(ProfileController, "target"), 0.5),
    ("§1 Profile Controller", "N_max (ProfileController)", lambda: default(ProfileController, "n_max"), 200),
    ("§1 Profile Controller", "N_max (SeadTrainConfig)", lambda: SeadTrainConfig().n_max, 200),
    ("§1 Profile Controller", "batch B (ProfileController)", lambda: default(ProfileController, "batch_size"), 60),
    ("§1 Profile Controller", "smoothing off by default (ProfileController)", lambda: default(ProfileController, "smoothing"), None),
    ("§1 Profile Controller", "smoothing off by default (SeadTrainConfig)", lambda: SeadTrainConfig().smoothing, None),
    ("§1 Profile Controller", "Beta prior centred at 0.5", lambda: default(ProfileController, "prior"), (1.0, 1.0)),
    ("§1 Profile Controller", "default mode full", lambda: default(ProfileController, "mode"), "full"),
    ("§1 Profile Controller", "ablation modes (Table 3)", lambda: {"full", "uniform", "unstructured"} <= set(MODES), True),
    # -- §1 GRPO ----------------------------------------------------------------------------------
    ("§1 GRPO", "batch-mean baseline (SeadTrainConfig.advantage)", lambda: SeadTrainConfig().advantage, "batch_mean"),
    ("§1 GRPO", "group size 60 (SeadTrainConfig.batch_size)", lambda: SeadTrainConfig().batch_size, 60),
    ("§1 GRPO", "lr 1e-6 (GRPOConfig.learning_rate)", lambda: GRPOConfig().learning_rate, 1e-6),
    ("§1 GRPO", "lr 1e-6 (SEAD gpu-lm preset)", lambda: SEAD_PRESETS["gpu-lm"]["learning_rate"], 1e-6),
    ("§1 GRPO", "group size 60 (SEAD gpu-lm preset)", lambda: SEAD_PRESETS["gpu-lm"]["batch_size"], 60),
    ("§1 GRPO", "KL 0.001 (GRPOConfig.kl_coef)", lambda: GRPOConfig().kl_coef, 0.001),
    ("§1 GRPO", "KL 0.001 (SeadTrainConfig.kl_coef)", lambda: SeadTrainConfig().kl_coef, 0.001),
    ("§1 GRPO", "rollout temperature 1.2 (GRPOConfig.temperature)", lambda: GRPOConfig().temperature, 1.2),
    ("§1 GRPO", "rollout temperature 1.2 (SeadTrainConfig.temperature)", lambda: SeadTrainConfig().temperature, 1.2),
    ("§1 GRPO", "user model temperature 0.9 / top_p 0.95", lambda: SeadTrainConfig().user_sampling, {"temperature": 0.9, "top_p": 0.95}),
    # -- §2 TRACER --------------------------------------------------------------------------------
    ("§2", "15 turns (TracerConfig.max_user_turns)", lambda: TracerConfig().max_user_turns, 15),
    ("§2", "15 turns (TracerTrainConfig.max_user_turns)", lambda: TracerTrainConfig().max_user_turns, 15),
    ("§2", "sessions of 3-15 turns", lambda: (tracer_data.MIN_USER_TURNS, tracer_data.MAX_USER_TURNS), (3, 15)),
    ("§2", "intent levels z in 0..5", lambda: (tracer_data.LEVELS, tracer_data.DROPOUT_LEVEL, tracer_data.CONVERSION_LEVEL), (6, 0, 5)),
    ("§2", "weights (l1, l2, l3) (rewards.tracer.DEFAULT_WEIGHTS)", lambda: tracer_rewards.DEFAULT_WEIGHTS, (0.2, 0.5, 0.3)),
    ("§2", "weights (l1, l2, l3) (tracer_reward default)", lambda: default(tracer_rewards.tracer_reward, "weights"), (0.2, 0.5, 0.3)),
    ("§2", "weights (l1, l2, l3) (TracerConfig.reward_weights)", lambda: tuple(TracerConfig().reward_weights), (0.2, 0.5, 0.3)),
    ("§2", "weights (l1, l2, l3) (TracerTrainConfig.reward_weights)", lambda: tuple(TracerTrainConfig().reward_weights), (0.2, 0.5, 0.3)),
    ("§2", "alpha = beta = 1 (trajectory_reward)", lambda: (default(tracer_rewards.trajectory_reward, "alpha"), default(tracer_rewards.trajectory_reward, "beta")), (1.0, 1.0)),
    ("§2", "alpha = beta = 1 (tracer_reward)", lambda: (default(tracer_rewards.tracer_reward, "alpha"), default(tracer_rewards.tracer_reward, "beta")), (1.0, 1.0)),
    ("§2", "alpha = beta = 1 (TracerConfig)", lambda: (TracerConfig().alpha, TracerConfig().beta), (1.0, 1.0)),
    ("§2", "alpha = beta = 1 (TracerTrainConfig)", lambda: (TracerTrainConfig().alpha, TracerTrainConfig().beta), (1.0, 1.0)),
    # SPEC: "eta = eta_flat (e.g. 0.5)"; the code follows the paper's 0.2 (reported as a SPEC/code difference).
    ("§2", "eta_flat, paper 0.2 (flatness)", lambda: default(tracer_rewards.flatness, "eta_flat"), 0.2),
    ("§2", "eta_flat, paper 0.2 (trajectory_reward)", lambda: default(tracer_rewards.trajectory_reward, "eta_flat"), 0.2),
    ("§2", "eta_flat, paper 0.2 (tracer_reward)", lambda: default(tracer_rewards.tracer_reward, "eta_flat"), 0.2),
    ("§2", "eta_flat, paper 0.2 (TracerConfig)", lambda: TracerConfig().eta_flat, 0.2),
    ("§2", "eta_flat, paper 0.2 (TracerTrainConfig)", lambda: TracerTrainConfig().eta_flat, 0.2),
    ("§2", "G = 8 rollouts per prompt (TracerTrainConfig.group_size)", lambda: TracerTrainConfig().group_size, 8),
    ("§2", "modulation l_adv, paper 0.2 (TracerTrainConfig)", lambda: TracerTrainConfig().l_adv, 0.2),
    ("§2", "modulation gamma, paper 0.5 (TracerTrainConfig)", lambda: TracerTrainConfig().gamma, 0.5),
    ("§2", "suffix rho, paper 0.4 (TracerTrainConfig)", lambda: TracerTrainConfig().rho, 0.4),
    ("§2", "suffix rho, paper 0.4 (TracerConfig)", lambda: TracerConfig().rho, 0.4),
    ("§2", "modulation l_adv, paper 0.2 (modulate_advantage)", lambda: default(tracer_rewards.modulate_advantage, "l_adv"), 0.2),
    ("§2", "modulation gamma, paper 0.5 (modulate_advantage)", lambda: default(tracer_rewards.modulate_advantage, "gamma"), 0.5),
    ("§2", "modulation l_adv, paper 0.2 (turn_advantages)", lambda: default(tracer_rewards.turn_advantages, "l_adv"), 0.2),
    ("§2", "modulation gamma, paper 0.5 (turn_advantages)", lambda: default(tracer_rewards.turn_advantages, "gamma"), 0.5),
    # -- §3 RL-ADA --------------------------------------------------------------------------------
    ("§3", "the six tools", lambda: load_domain().tool_names, RLADA_TOOLS),
    ("§3", "action types speak | tool_call | end_call", lambda: ACTION_TYPES, ("speak", "tool_call", "end_call")),
    ("§3", "78 intents", lambda: len(load_domain().intents), 78),
    ("§3", "38 intents to transfer_to_human", lambda: sum(i.tool == "transfer_to_human" for i in load_domain().intents), 38),
    ("§3", "identity deduction -1.2 (AgentWeights)", lambda: rlada_rewards.AgentWeights().identity_deduction, -1.2),
    ("§3", "identity deduction -1.2 (RladaConfig)", lambda: RladaConfig().identity_deduction, -1.2),
    ("§3", "domain-tool deduction -1.8 (AgentWeights)", lambda: rlada_rewards.AgentWeights().domain_tool_deduction, -1.8),
    ("§3", "domain-tool deduction -1.8 (RladaConfig)", lambda: RladaConfig().domain_tool_deduction, -1.8),
    ("§3", "strict PASS reward >= 2.0 (PASS_THRESHOLD)", lambda: rlada_rewards.PASS_THRESHOLD, 2.0),
    ("§3", "strict PASS reward >= 2.0 (strict_pass default)", lambda: default(rlada_rewards.strict_pass, "threshold"), 2.0),
    ("§3", "strict PASS reward >= 2.0 (RladaConfig.pass_threshold)", lambda: RladaConfig().pass_threshold, 2.0),
    ("§3", "customer speaks 1-2 sentences", lambda: RladaConfig().customer_max_sentences, 2),
    ("§3", "arena: 10 scenarios", lambda: len(load_domain().arena), 10),
    ("§3", "arena: 18 episodes each (RladaTrainConfig)", lambda: RladaTrainConfig().episodes_per_scenario, 18),
    ("§3", "arena: 180 episodes per match", lambda: len(match_plan(load_domain(), RladaTrainConfig().episodes_per_scenario, 0, 0)), 180),
    ("§3", "held-out set: 12 fixed scenarios", lambda: len(load_domain().heldout), 12),
    ("§3", "isolation gym 70:30 failures:successes", lambda: RladaTrainConfig().failure_fraction, 0.7),
    ("§3", "stopping: at least 3 matches (RladaTrainConfig)", lambda: RladaTrainConfig().min_matches, 3),
    ("§3", "stopping: win rate 0.60 (RladaTrainConfig)", lambda: RladaTrainConfig().win_threshold, 0.6),
    ("§3", "stopping: 2 consecutive matches (RladaTrainConfig)", lambda: RladaTrainConfig().patience, 2),
    ("§3", "stopping: last change <= 0.05 (RladaTrainConfig)", lambda: RladaTrainConfig().stability_epsilon, 0.05),
    ("§3", "stopping: or 8 matches (RladaTrainConfig)", lambda: RladaTrainConfig().max_matches, 8),
    ("§3", "stopping rule defaults (StoppingRule)", lambda: (lambda r: (r.min_matches, r.max_matches, r.threshold, r.patience, r.epsilon))(StoppingRule()), (3, 8, 0.6, 2, 0.05)),
    # -- backends (DESIGN "Speed and scale"; the OpenAI-compatible backend's documented defaults) ---
    ("backends", "OpenAIBackend max_retries", lambda: default(OpenAIBackend.__init__, "max_retries"), 3),
    ("backends", "OpenAIBackend backoff_base", lambda: default(OpenAIBackend.__init__, "backoff_base"), 0.5),
    ("backends", "OpenAIBackend backoff_max", lambda: default(OpenAIBackend.__init__, "backoff_max"), 20.0),
    ("backends", "OpenAIBackend timeout (seconds per attempt)", lambda: default(OpenAIBackend.__init__, "timeout"), 60.0),
]


@pytest.mark.parametrize("section, what, read, expected", CONSTANTS, ids=[f"{c[0]} {c[1]}" for c in CONSTANTS])
def test_spec_constant(section, what, read, expected):
    actual = read()
    assert actual == expected and type(actual) is type(expected), f"SPEC {section}: {what}: expected {expected!r}, got {actual!r}"


def test_every_constant_is_listed_once():
    names = [(section, what) for section, what, _, _ in CONSTANTS]
    assert len(names) == len(set(names))


# -- §1 SEAD rules at their boundaries -------------------------------------------------------------
def _sead_game(state=(2, 2, 2)):
    game = SeadGame(SeadConfig())
    game.reset(seed=0, options={"profile": {"state": list(state), "behaviors": [load_behaviors().ids[0]]}})
    return game


@pytest.mark.parametrize("cooperation, completes", [(2, False), (3, True), (4, True)])
def test_the_user_completes_only_with_cooperation_at_least_3(cooperation, completes):
    game = _sead_game()
    game.step("Could you open the back-office app for me, please?")
    result = game.step(render_user_output("Done.", (cooperation, 2, 3), 1))
    assert (game.outcome is Outcome.SUCCESS) is completes, f"SPEC §1: cooperation >= 3 to act (cooperation {cooperation})"
    assert result.rewards["agent"] == (1.0 if completes else 0.0), "SPEC §1: R = 1[success]"


def test_the_call_times_out_at_the_15th_agent_turn():
    game = _sead_game()
    for turn in range(1, 16):
        assert game.outcome is None, f"SPEC §1: T_max = 15 (ended after {turn - 1} agent turns)"
        game.step(f"Let me tell you about point number {turn} of the offer.")
        game.step(render_user_output("Go on.", (2, 2, 2), 0))
    assert game.outcome is Outcome.TIMEOUT and game.agent_turns == 15, "SPEC §1: T_max = 15"
    assert game.returns["agent"] == 0.0, "SPEC §1: a timeout is a failure (R = 0)"


# -- §1 Profile Controller: band edges, weights, N_max, batch ----------------------------------------
def _episodes(state, successes, total):
    profile = {"state": list(state), "behaviors": []}
    return [Trajectory("SEAD-Outbound-v0", k, profile, outcome=Outcome.SUCCESS if k < successes else Outcome.HANGUP) for k in range(total)]


# valid states (no consistency rule rejects them), one per completion rate below
STATES = {0.39: (2, 2, 1), 0.4: (2, 2, 2), 0.6: (2, 2, 3), 0.61: (2, 2, 4), 1.0: (3, 2, 3), 0.0: (1, 1, 1)}


@pytest.fixture
def controller():
    controller = ProfileController(seed=0)
    assert all(controller.rules.state_violation(sead_state.UserState(*s)) is None for s in (*STATES.values(), (2, 1, 2)))
    for rate, state in STATES.items():
        controller.update(_episodes(state, round(rate * 100), 100))
    return controller


def test_the_ideal_band_includes_both_edges(controller):
    labels = controller.categories()
    expected = {0.39: "too_hard", 0.4: "ideal", 0.6: "ideal", 0.61: "too_easy", 1.0: "too_easy", 0.0: "too_hard"}
    for rate, state in STATES.items():
        assert labels[sead_state.state_index(state)] == expected[rate], f"SPEC §1: 0.4 <= CR <= 0.6 is ideal (CR {rate})"
    assert labels[sead_state.state_index((2, 1, 2))] == "unseen"
    assert controller.ideal_fraction() == pytest.approx(2 / 6)


def test_weights_are_one_minus_the_distance_to_one_half_and_unseen_weighs_one(controller):
    weights = controller.weights()
    unseen = weights[sead_state.state_index((2, 1, 2))]
    # w(s) = 1 - |CR(s) - 0.5|: 0.39 -> 0.89, 0.4 -> 0.9, 0.6 -> 0.9, 0.61 -> 0.89, 1.0 -> 0.5, 0.0 -> 0.5; unseen 1.0
    hand = {0.39: 0.89, 0.4: 0.9, 0.6: 0.9, 0.61: 0.89, 1.0: 0.5, 0.0: 0.5}
    for rate, state in STATES.items():
        assert weights[sead_state.state_index(state)] / unseen == pytest.approx(hand[rate]), f"SPEC §1: w(s) = 1 - |CR - 0.5| (CR {rate})"
    assert weights.sum() == pytest.approx(1.0)


def test_cold_start_is_uniform_over_the_valid_states():
    weights = ProfileController(seed=0).weights()
    valid = weights[weights > 0]
    assert np.allclose(valid, 1 / valid.size), "SPEC §1: cold start uniform over the 120 states"
    assert valid.size >= 100, "SPEC §1: the consistency table only removes a few incoherent states"


def test_completion_rates_are_not_smoothed_by_default(controller):
    assert controller.completion_rates()[sead_state.state_index(STATES[0.4])] == 0.4, "SPEC §1: smoothing off by default"
    assert math.isnan(controller.completion_rates()[sead_state.state_index((2, 1, 2))])


def test_a_state_with_n_max_dialogues_is_no_longer_sampled():
    controller = ProfileController(seed=0)
    capped, open_ = sead_state.state_index((2, 2, 2)), sead_state.state_index((2, 2, 3))
    controller.update(_episodes((2, 2, 2), 50, 200) + _episodes((2, 2, 3), 50, 199))
    weights = controller.weights()
    assert weights[capped] == 0.0, "SPEC §1: N_max = 200 dialogues per state, then capped"
    assert weights[open_] > 0.0, "SPEC §1: a state with 199 dialogues is still sampled"


def test_a_batch_is_60_distinct_profiles():
    batch = ProfileController(seed=3).sample()
    assert len(batch) == 60, "SPEC §1: batch B = 60 profiles per iteration"
    assert len({(tuple(p["state"]), tuple(p["behaviors"])) for p in batch}) == 60, "SPEC §1: no duplicate profile in a batch"
    assert all(1 <= len(p["behaviors"]) <= 3 for p in batch), "SPEC §1: B is 1-3 behaviors"


def test_released_curriculum_draws_values_without_the_extremes():
    """SPEC §1: the released-code curriculum is a second mode whose valid values exclude the extremes by
    default (cooperation 1-3, emotion 1-2, trust 1-4); target 0.5, middle band |d| <= 0.1 (strict
    inequalities outside it), gains 2 and 0.1, unseen sr 0.5 (count taken as 1: decision)."""
    from dialogue_gym.curriculum import profile_controller

    assert "released" in MODES, "SPEC §1: a second curriculum mode, curriculum='released'"
    assert (profile_controller.RELEASED_DEADBAND, profile_controller.RELEASED_GAIN, profile_controller.RELEASED_EXPLORATION) == (0.1, 2.0, 0.1)
    controller = ProfileController(mode="released", seed=0)
    assert controller.target == 0.5 and controller.include_extremes is False, "SPEC §1: target 0.5, extremes excluded by default"
    batch = controller.sample()
    assert len(batch) == 60
    assert all(1 <= p["state"][0] <= 3 and 1 <= p["state"][1] <= 2 and 1 <= p["state"][2] <= 4 for p in batch)
    controller.update(_episodes((1, 1, 1), 1, 4) + _episodes((2, 2, 2), 0, 6))
    # CR_b = 0.1, d = -0.4 (too hard): w = 1 + 2 * 0.4 * sr; emotion sr(1) = 1/4 -> 1.2, sr(2) = 0 -> 1.0
    assert controller.value_weights()[1] == pytest.approx([0, 1.2 / 2.2, 1.0 / 2.2, 0]), "SPEC §1: d < -0.1: w = 1 + 2|d| sr(v)"
    controller.update(_episodes((1, 1, 1), 2, 5) + _episodes((2, 1, 2), 3, 5))
    # CR_b = 0.5, d = 0 (middle band): w = 1 + 0.1 / count; emotion value 1 drawn 10 times -> 1.01, unseen 2 -> 1.1
    assert controller.value_weights()[1] == pytest.approx([0, 1.01 / 2.11, 1.1 / 2.11, 0]), "SPEC §1: otherwise w = 1 + 0.1 / count(v)"
    controller.update(_episodes((1, 1, 1), 4, 10))  # CR_b 0.4: d = -0.1 is not < -0.1
    assert controller.value_weights()[1] == pytest.approx([0, 1.01 / 2.11, 1.1 / 2.11, 0]), "SPEC §1: 'd < -0.1' is strict"
