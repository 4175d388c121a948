"""Mutation testing on demand: change one operator or constant at a time and check a test fails.

A test suite that passes with ``<`` turned into ``<=``, a default of 15 turned into 16 or a ``-``
turned into ``+`` does not pin that formula. This script makes such single changes (mutants) in a
scratch copy of the working tree, runs the tests that cover the module against each one, and reports
the mutants no test killed. It is a developer tool, not part of CI: a full run is slow (one pytest
process per mutant), so run it on the module you changed.

Usage::

    python tools/mutation.py --list-targets
    python tools/mutation.py advantages            # a named target (module + its tests)
    python tools/mutation.py --files dialogue_gym/rewards/sead.py --tests tests/rewards
    python tools/mutation.py rewards --limit 40 --seed 1 --json mutants.json
    python tools/mutation.py --files dialogue_gym/rewards/tracer.py --tests tests/rewards --since main
                                                   # only the lines changed since a git revision
    python tools/mutation.py --files trainers/common/atomic.py --tests tests/trainers/test_atomic_edges.py --lines 29 41
                                                   # only the mutants on these lines (a run's survivors)

Mutants (``ast``-located, one source span replaced each time):

* comparisons ``<`` <-> ``<=``, ``>`` <-> ``>=``, ``==`` <-> ``!=``, ``is`` <-> ``is not``, ``in`` <-> ``not in``;
* arithmetic ``+`` <-> ``-``, ``*`` <-> ``/``, ``//`` -> ``/``, ``**`` -> ``*``; a unary ``-`` dropped;
* ``and`` <-> ``or``; ``not x`` -> ``x``;
* numbers: an int ``k`` -> ``k + 1``, a float ``x`` -> ``2 x`` (``0.0`` -> ``1.0``); ``True`` <-> ``False``.

Operator swaps score well on modules where real bugs survive (a wrong key, a missing copy, a seed
from the wrong source, swapped arguments, a shifted mask), so each module also has *plausible-bug*
mutants written by hand in ``tools/mutation_plausible.json``: ``{"file", "old", "new", "bug"}``, the
snippet ``old`` (found exactly once in the file) replaced by ``new``, described ``plausible: <bug>``.
They run with the operator mutants of the same files (``--kind`` picks one kind) and the summary gives
each kind's kill rate per file. An entry whose ``old`` no longer occurs exactly once is an error, so the
list cannot go stale silently.

Strings, docstrings and annotations are never mutated by the operator swaps. A mutant judged *equivalent* (no test could
tell it apart, e.g. how many bad values an error message quotes) is listed with its reason in
``tools/mutation_equivalent.json`` (file, the source line's code, the mutation; a line's second
twin of one mutation is ``... (#2 on the line)``) and not run, so the source needs no markers; a line
carrying ``# pragma: no mutate`` is skipped too. A mutant is *killed* when the tests fail or run
past ``--timeout``, *survived* when they pass. The kill rate is killed / (killed + survived) over the
non-equivalent mutants; survivors are listed with their line so they can be judged (a real gap in
the tests, or an equivalent mutant to add to the list).
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRAGMA = "pragma: no mutate"
EQUIVALENT_FILE = Path(__file__).with_name("mutation_equivalent.json")
PLAUSIBLE_FILE = Path(__file__).with_name("mutation_plausible.json")
PLAUSIBLE = "plausible: "
"""The prefix of a hand-written mutant's description: what tells the two kinds apart in reports."""
HYPOTHESIS_SEED = ("--hypothesis-seed=0",) if importlib.util.find_spec("hypothesis") else ()
"""Property tests draw the same examples for every mutant, so a kill does not depend on the draw."""

TARGETS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "advantages": (
        ("dialogue_gym/rewards/advantages.py", "trainers/grpo/policy.py"),
        ("tests/rewards/test_advantages.py", "tests/rewards/test_advantage_formulas.py", "tests/trainers/test_sead_advantage_wiring.py",
         "tests/rewards/test_tracer_rewards.py"),
    ),
    "grpo": (
        ("trainers/grpo/lm.py", "trainers/grpo/policy.py", "trainers/grpo/strategy.py"),
        ("tests/trainers/test_grpo_loss.py", "tests/trainers/test_grpo_lm.py", "tests/trainers/test_strategy_and_trl.py",
         "tests/trainers/test_sead_advantage_wiring.py", "tests/trainers/test_tracer_advantage_wiring.py",
         "tests/rewards/test_advantage_formulas.py", "tests/test_spec_constants.py"),
    ),
    "rewards": (
        ("dialogue_gym/rewards/advantages.py", "dialogue_gym/rewards/sead.py", "dialogue_gym/rewards/tracer.py", "dialogue_gym/rewards/rlada.py"),
        ("tests/rewards", "tests/test_spec_constants.py", "tests/trainers/test_tracer_advantage_wiring.py",
         "tests/scenarios/rlada/test_rlada_wiring.py", "tests/scenarios/rlada/test_rlada_game.py"),
    ),
    "metrics": (
        ("dialogue_gym/metrics/dtw.py", "dialogue_gym/metrics/tracer.py", "dialogue_gym/metrics/sead.py",
         "dialogue_gym/metrics/rlada.py", "dialogue_gym/metrics/dmbench.py", "dialogue_gym/metrics/core.py",
         "dialogue_gym/metrics/embedders.py", "dialogue_gym/metrics/episodes.py"),
        ("tests/metrics",),
    ),
    "curriculum": (
        ("dialogue_gym/curriculum/profile_controller.py", "dialogue_gym/curriculum/wrappers.py"),
        ("tests/curriculum", "tests/test_spec_constants.py"),
    ),
    "rlada": (
        ("dialogue_gym/scenarios/rlada/judge.py", "dialogue_gym/scenarios/rlada/tools.py", "trainers/rlada/arena.py"),
        ("tests/scenarios/rlada", "tests/trainers/test_rlada_arena.py", "tests/trainers/test_rlada_stop_rule_boundaries.py",
         "tests/trainers/test_rlada_gym_starts.py", "tests/test_spec_constants.py"),
    ),
    "sealing": (
        ("dialogue_gym/sealing.py", "dialogue_gym/seeding.py", "dialogue_gym/probes.py"),
        ("tests/test_sealing.py", "tests/test_sealing_behaviours.py", "tests/test_cli_sealed.py", "tests/test_probes.py",
         "tests/test_probes_edges.py", "tests/test_probes_units.py", "tests/envs/test_handed_data.py"),
    ),
    "sealed_runs": (
        ("dialogue_gym/evaluation.py", "dialogue_gym/envs/driver.py"),
        ("tests/test_sealing.py", "tests/test_sealing_behaviours.py"),
    ),
    "agents": (
        ("dialogue_gym/agents/protocol.py", "dialogue_gym/agents/process.py", "dialogue_gym/agents/runner.py",
         "dialogue_gym/agents/launch.py", "dialogue_gym/verify.py", "dialogue_gym/integrity.py"),
        ("tests/agents", "tests/test_isolation.py"),
    ),
    "results": (
        ("dialogue_gym/results.py", "dialogue_gym/inputs.py", "dialogue_gym/reporting.py"),
        ("tests/test_results.py", "tests/test_results_behaviours.py", "tests/test_reporting.py", "tests/test_inputs.py", "tests/test_inputs_edges.py",
         "tests/test_inputs_unreadable.py", "tests/test_cli_inputs.py", "tests/metrics/test_reproducible.py", "tests/test_results_edges.py"),
    ),
    "viewer": (
        ("dialogue_gym/viewer.py",),
        ("tests/test_viewer.py", "tests/test_viewer_inputs.py", "tests/test_viewer_units.py"),
    ),
    "openenv": (
        ("dialogue_gym/integrations/openenv.py", "dialogue_gym/integrations/openenv_server.py"),
        ("tests/integrations/test_openenv.py", "tests/integrations/test_openenv_sealed.py", "tests/integrations/test_openenv_server.py",
         "tests/integrations/test_openenv_guard.py", "tests/integrations/test_openenv_client_units.py", "tests/integrations/test_openenv_server_units.py"),
    ),
    "run_folders": (
        ("trainers/common/atomic.py", "trainers/common/rundir.py", "trainers/common/dagger.py", "trainers/common/threads.py"),
        ("tests/trainers/test_rundir_edges.py", "tests/trainers/test_rundir_torn_tail.py", "tests/trainers/test_atomic_writes.py",
         "tests/trainers/test_atomic_edges.py", "tests/trainers/test_run_folder_repair.py", "tests/trainers/test_rundir.py", "tests/trainers/test_threads.py",
         "tests/trainers/test_dagger_share.py", "tests/trainers/test_dagger_labels.py", "tests/trainers/test_sead_lm_pipeline.py"),
    ),
    "audit": (
        ("dialogue_gym/audit.py",),
        ("tests/test_audit_ties.py", "tests/test_audit.py", "tests/test_cli.py", "tests/test_audit_mutants.py"),  # test_cli: the saved audit
    ),
    "trl": (
        ("dialogue_gym/integrations/trl.py", "dialogue_gym/integrations/common.py"),
        ("tests/integrations/test_trl_budget.py", "tests/integrations/test_common.py", "tests/integrations/test_trl.py",
         "tests/integrations/test_trl_mutants.py"),
    ),
    "health": (
        ("dialogue_gym/health.py",),
        ("tests/test_results_behaviours.py", "tests/test_health.py"),
    ),
    "fidelity": (
        ("dialogue_gym/fidelity.py",),
        ("tests/test_fidelity_behaviours.py", "tests/test_fidelity.py"),
    ),
    "handed_data": (
        ("dialogue_gym/readonly.py",),
        ("tests/envs/test_handed_data.py",),
    ),
    # The scenario families: each game's rules (state, parsing, the scripted users) with the tests that play them.
    "sead_game": (
        ("dialogue_gym/scenarios/sead/game.py", "dialogue_gym/scenarios/sead/state.py", "dialogue_gym/scenarios/sead/scripted_user.py",
         "dialogue_gym/scenarios/sead/parsing.py"),
        ("tests/scenarios/sead/test_sead_game_mutants.py", "tests/scenarios/sead/test_game.py", "tests/scenarios/sead/test_parsing.py",
         "tests/scenarios/sead/test_sead_fast_paths.py",
         "tests/scenarios/sead/test_scripted_user.py", "tests/scenarios/sead/test_sead_hostile_output.py", "tests/envs/test_determinism.py",
         "tests/test_spec_constants.py"),
    ),
    "sead": (
        ("dialogue_gym/scenarios/sead/acts.py", "dialogue_gym/scenarios/sead/agents.py", "dialogue_gym/scenarios/sead/audit.py",
         "dialogue_gym/scenarios/sead/data.py", "dialogue_gym/scenarios/sead/health.py", "dialogue_gym/scenarios/sead/policies.py",
         "dialogue_gym/scenarios/sead/prompts.py"),
        ("tests/scenarios/sead", "tests/simulators/test_cacheable_prompts.py", "tests/test_spec_constants.py"),
    ),
    "tracer_game": (
        ("dialogue_gym/scenarios/tracer/game.py", "dialogue_gym/scenarios/tracer/dynamics.py", "dialogue_gym/scenarios/tracer/users.py",
         "dialogue_gym/scenarios/tracer/judges.py"),
        ("tests/scenarios/tracer/test_tracer_game_mutants.py", "tests/scenarios/tracer/test_tracer_game.py",
         "tests/scenarios/tracer/test_tracer_dynamics.py", "tests/scenarios/tracer/test_tracer_judge.py",
         "tests/scenarios/tracer/test_tracer_hostile_output.py", "tests/scenarios/tracer/test_tracer_policies.py",
         "tests/envs/test_tracer_envs.py", "tests/metrics/test_dmbench_metrics.py", "tests/test_spec_constants.py"),
    ),
    "tracer": (
        ("dialogue_gym/scenarios/tracer/acts.py", "dialogue_gym/scenarios/tracer/assistants.py", "dialogue_gym/scenarios/tracer/audit.py",
         "dialogue_gym/scenarios/tracer/data.py", "dialogue_gym/scenarios/tracer/health.py", "dialogue_gym/scenarios/tracer/parsing.py",
         "dialogue_gym/scenarios/tracer/policies.py", "dialogue_gym/scenarios/tracer/prompts.py", "dialogue_gym/scenarios/tracer/synthetic.py"),
        ("tests/scenarios/tracer", "tests/envs/test_tracer_envs.py", "tests/test_hostile_patterns.py", "tests/test_spec_constants.py"),
    ),
    "rlada_game": (
        ("dialogue_gym/scenarios/rlada/game.py", "dialogue_gym/scenarios/rlada/customers.py", "dialogue_gym/scenarios/rlada/bank.py",
         "dialogue_gym/scenarios/rlada/parsing.py"),
        ("tests/scenarios/rlada/test_rlada_game_mutants.py", "tests/scenarios/rlada/test_rlada_game.py", "tests/scenarios/rlada/test_rlada_customers.py",
         "tests/scenarios/rlada/test_rlada_tools.py", "tests/scenarios/rlada/test_rlada_tool_edges.py", "tests/scenarios/rlada/test_rlada_parsing.py",
         "tests/scenarios/rlada/test_rlada_hostile.py", "tests/scenarios/rlada/test_rlada_truthfulness.py",
         "tests/scenarios/rlada/test_rlada_contextual_customer.py", "tests/scenarios/rlada/test_rlada_judge_edges.py",
         "tests/scenarios/rlada/test_rlada_fast_paths.py", "tests/envs/test_rlada_determinism.py", "tests/test_spec_constants.py"),
    ),
    "rlada_scenario": (
        ("dialogue_gym/scenarios/rlada/agents.py", "dialogue_gym/scenarios/rlada/audit.py", "dialogue_gym/scenarios/rlada/cues.py",
         "dialogue_gym/scenarios/rlada/data.py", "dialogue_gym/scenarios/rlada/planner.py", "dialogue_gym/scenarios/rlada/policies.py",
         "dialogue_gym/scenarios/rlada/prompts.py", "dialogue_gym/scenarios/rlada/reading.py"),
        ("tests/scenarios/rlada", "tests/envs/test_rlada_determinism.py", "tests/metrics/test_rlada_metrics.py"),
    ),
    "scenario_core": (
        ("dialogue_gym/game.py", "dialogue_gym/types.py", "dialogue_gym/spaces.py", "dialogue_gym/errors.py",
         "dialogue_gym/scenarios/common.py", "dialogue_gym/scenarios/understanding.py"),
        ("tests/test_game_base.py", "tests/test_types.py", "tests/scenarios/test_scenario_common.py", "tests/scenarios/test_common_fast_paths.py",
         "tests/test_hostile_patterns.py",
         "tests/envs/test_privileged_channel.py", "tests/envs/test_vector_observations.py", "tests/scenarios/sead/test_sead_acts.py",
         "tests/scenarios/tracer/test_tracer_acts.py", "tests/scenarios/sead/test_game.py", "tests/test_game_base_mutants.py",
         "tests/test_types_mutants.py", "tests/test_spaces_mutants.py", "tests/test_errors_mutants.py",
         "tests/scenarios/test_scenario_common_mutants.py", "tests/scenarios/test_understanding_mutants.py"),
    ),
    # Environments: the Gymnasium/PettingZoo views over a game, and the registered env ids.
    "envs": (
        ("dialogue_gym/envs/vector.py", "dialogue_gym/envs/single.py", "dialogue_gym/envs/multiagent.py", "dialogue_gym/envs/scenario.py",
         "dialogue_gym/envs/rendering.py", "dialogue_gym/envs/pipeline.py"),
        ("tests/envs/test_envs_mutants.py", "tests/envs/test_vector_construction.py", "tests/envs/test_vector_observations.py",
         "tests/envs/test_vector_actions.py", "tests/envs/test_vector_retention.py", "tests/envs/test_failed_reset.py",
         "tests/envs/test_reset_never_ends.py", "tests/envs/test_conformance.py", "tests/envs/test_determinism_all_views.py",
         "tests/envs/test_pipeline.py", "tests/envs/test_pipeline_worker.py", "tests/envs/test_privileged_channel.py", "tests/envs/test_hostile_reset_options.py"),
    ),
    "env_ids": (
        ("dialogue_gym/envs/sead_outbound_v0.py", "dialogue_gym/envs/tracer_usersim_v0.py", "dialogue_gym/envs/dmbench_assistant_v0.py",
         "dialogue_gym/envs/rlada_banking_v0.py", "dialogue_gym/envs/rlada_banking_v1.py", "dialogue_gym/envs/rlada_customer_v0.py"),
        ("tests/envs/test_conformance.py", "tests/envs/test_determinism.py", "tests/envs/test_determinism_all_views.py",
         "tests/envs/test_tracer_envs.py", "tests/envs/test_rlada_determinism.py", "tests/envs/test_hostile_reset_options.py",
         "tests/envs/test_privileged_channel.py", "tests/scenarios/rlada/test_rlada_banking_v1.py",
         "tests/scenarios/sead/test_sead_hostile_output.py", "tests/scenarios/tracer/test_tracer_hostile_output.py",
         "tests/envs/test_env_ids_mutants.py"),
    ),
    "simulators": (
        ("dialogue_gym/simulators/base.py", "dialogue_gym/simulators/llm.py", "dialogue_gym/simulators/named.py"),
        ("tests/simulators", "tests/envs/test_privileged_channel.py", "tests/test_fault_tolerance.py", "tests/scenarios/tracer/test_tracer_policies.py",
         "tests/test_sealing.py"),
    ),
    # Model backends: the shared plumbing, the OpenAI-compatible client, and the local-model backends.
    "backends": (
        ("dialogue_gym/backends/base.py", "dialogue_gym/backends/cache.py", "dialogue_gym/backends/canned.py", "dialogue_gym/backends/kv_buffers.py",
         "dialogue_gym/backends/prefix_cache.py", "dialogue_gym/backends/sampling.py", "dialogue_gym/backends/tiny.py"),
        ("tests/backends/test_cache.py", "tests/backends/test_cache_corrupt_file.py", "tests/backends/test_canned_backend.py",
         "tests/backends/test_latency_backend.py", "tests/backends/test_make_backend.py", "tests/backends/test_kv_buffers.py",
         "tests/backends/test_prefix_cache.py", "tests/backends/test_vllm_backend.py", "tests/backends/test_openai_backend.py",
         "tests/test_evaluation_batching.py", "tests/trainers/test_common_sft.py", "tests/backends/test_backends_mutants.py"),
    ),
    "openai": (
        ("dialogue_gym/backends/openai_compat.py",),
        ("tests/backends/test_openai_backend.py", "tests/backends/test_openai_fault_tolerance.py", "tests/backends/test_openai_hostile_server.py",
         "tests/backends/test_openai_redaction.py", "tests/backends/test_openai_retry_after.py", "tests/test_spec_constants.py",
         "tests/backends/test_openai_mutants.py"),
    ),
    "local_models": (
        ("dialogue_gym/backends/transformers_backend.py", "dialogue_gym/backends/row_sampler.py", "dialogue_gym/backends/vllm_backend.py"),
        ("tests/backends/test_transformers_backend_mutants.py", "tests/backends/test_transformers_backend.py", "tests/backends/test_row_sampler.py",
         "tests/backends/test_vllm_backend.py", "tests/backends/test_vllm_mutants.py"),
    ),
    # Training-library integrations, distributed rollouts and the command line. verl_loop's tests skip where verl is
    # not installed: run its mutants with the python of verl's own environment (tests/integrations/test_verl_loop.py).
    "integrations": (
        ("dialogue_gym/integrations/datasets.py", "dialogue_gym/integrations/skyrl.py", "dialogue_gym/integrations/verifiers.py",
         "dialogue_gym/integrations/verl.py", "dialogue_gym/integrations/verl_loop.py"),
        ("tests/integrations/test_datasets.py", "tests/integrations/test_skyrl.py", "tests/integrations/test_verifiers.py",
         "tests/integrations/test_verl.py", "tests/integrations/test_verl_loop.py", "tests/integrations/test_datasets_mutants.py",
         "tests/integrations/test_skyrl_mutants.py", "tests/integrations/test_verifiers_mutants.py", "tests/integrations/test_verl_mutants.py",
         "tests/integrations/test_verl_loop_mutants.py"),
    ),
    "distributed": (
        ("dialogue_gym/distributed/ray_rollouts.py",),
        # The fast stand-in tests first: most mutants die there in seconds, before Ray starts.
        ("tests/distributed/test_ray_rollouts_mutants.py", "tests/distributed"),
    ),
    "cli": (
        ("dialogue_gym/cli.py",),
        ("tests/test_cli.py", "tests/test_cli_help.py", "tests/test_cli_inputs.py", "tests/test_cli_sealed.py", "tests/test_rlada_cli.py",
         "tests/test_cli_mutants.py"),
    ),
    # The trainers: shared pieces, the decision-point GRPO, and each scenario's trainer.
    "trainers_common": (
        ("trainers/common/baselines.py", "trainers/common/cli.py", "trainers/common/play.py", "trainers/common/sft.py",
         "trainers/common/stats.py", "trainers/common/sweep.py"),
        ("tests/trainers/test_common_mutants.py", "tests/agents/test_play_mutants.py", "tests/trainers/test_common_cli_mutants.py",
         "tests/trainers/test_common_sft_mutants.py", "tests/trainers/test_common_sft.py", "tests/trainers/test_sft_agreement.py", "tests/trainers/test_dagger_learning_rate.py",
         "tests/trainers/test_trainer_cli_help.py", "tests/trainers/test_sweeps.py", "tests/trainers/test_sead_ablation.py",
         "tests/agents/test_agent_rollouts.py", "tests/test_audit_ties.py", "tests/trainers/test_sead_lm_pipeline.py"),
    ),
    "decision_point": (
        ("trainers/grpo/decision_point.py",),
        ("tests/trainers/test_decision_point.py", "tests/trainers/test_decision_point_over_greedy.py", "tests/trainers/test_grpo_trivial_reward.py"),
    ),
    "sead_trainer": (
        ("trainers/sead/__main__.py", "trainers/sead/ablate.py", "trainers/sead/config.py", "trainers/sead/joint_user.py",
         "trainers/sead/plots.py", "trainers/sead/seeds.py", "trainers/sead/strategy_plus.py", "trainers/sead/train.py",
         "trainers/sead/trl_rollout.py"),
        ("tests/trainers/test_sead_config_mutants.py", "tests/trainers/test_sead_strategy_plus_mutants.py", "tests/trainers/test_sead_train_mutants.py",
         "tests/trainers/test_sead_train_loop_mutants.py", "tests/trainers/test_sead_seeds_mutants.py", "tests/trainers/test_sead_presets_mutants.py",
         "tests/trainers/test_sead_joint_user_mutants.py", "tests/trainers/test_sead_ablate_mutants.py", "tests/trainers/test_sead_plots_mutants.py",
         "tests/trainers/test_sead_trl_rollout_mutants.py", "tests/trainers/test_preset_reproduction_mutants.py",
         "tests/trainers/test_sead_trainer.py", "tests/trainers/test_sead_joint_user.py", "tests/trainers/test_sead_strategy_plus.py",
         "tests/trainers/test_sead_ablation.py", "tests/trainers/test_sead_advantage_wiring.py", "tests/trainers/test_strategy_and_trl.py",
         "tests/trainers/test_trl_env_mask.py", "tests/trainers/test_trainer_cli.py", "tests/trainers/test_dagger_learning_rate.py",
         "tests/trainers/test_sead_lora_sft.py", "tests/trainers/test_decision_point_over_greedy.py",
         "tests/trainers/test_sead_lm_pipeline.py", "tests/test_spec_constants.py", "tests/trainers/test_presets_documented.py"),
    ),
    "tracer_trainer": (
        ("trainers/tracer/__main__.py", "trainers/tracer/config.py", "trainers/tracer/policy.py", "trainers/tracer/sft.py",
         "trainers/tracer/sweep.py", "trainers/tracer/train.py"),
        ("tests/trainers/test_tracer_config_mutants.py", "tests/trainers/test_tracer_policy_mutants.py", "tests/trainers/test_sweep_settings_mutants.py",
         "tests/trainers/test_tracer_sft_mutants.py", "tests/trainers/test_tracer_train_mutants.py", "tests/trainers/test_trainer_main_mutants.py",
         "tests/trainers/test_preset_reproduction_mutants.py",
         "tests/trainers/test_tracer_trainer.py", "tests/trainers/test_tracer_advantage_wiring.py", "tests/trainers/test_sweeps.py",
         "tests/trainers/test_lm_scratch_presets.py", "tests/test_spec_constants.py", "tests/trainers/test_presets_documented.py"),
    ),
    "rlada_trainer": (
        ("trainers/rlada/__main__.py", "trainers/rlada/config.py", "trainers/rlada/id_copy.py", "trainers/rlada/plots.py", "trainers/rlada/sft.py",
         "trainers/rlada/strategy.py", "trainers/rlada/sweep.py", "trainers/rlada/train.py"),
        ("tests/trainers/test_rlada_config_mutants.py", "tests/trainers/test_rlada_strategy_mutants.py", "tests/trainers/test_sweep_settings_mutants.py",
         "tests/trainers/test_rlada_sft_mutants.py", "tests/trainers/test_rlada_train_mutants.py", "tests/trainers/test_trainer_main_mutants.py",
         "tests/trainers/test_rlada_plots_mutants.py", "tests/trainers/test_rlada_copy_warmup.py", "tests/test_docs_trained.py",
         "tests/trainers/test_preset_reproduction_mutants.py",
         "tests/trainers/test_rlada_trainer.py", "tests/trainers/test_rlada_stop_rule_boundaries.py", "tests/trainers/test_sweeps.py",
         "tests/trainers/test_lm_scratch_presets.py", "tests/trainers/test_lm_run_folder_sweep.py", "tests/test_spec_constants.py",
         "tests/trainers/test_presets_documented.py"),
    ),
}
"""Named targets: (the modules to mutate, the tests that must catch a mutant in them). ``sealed_runs`` holds
the sealing lines of the evaluator and the driver: run it with ``--kind plausible`` (the evaluator's
operator mutants belong to its own tests)."""

_COMPARE = {ast.Lt: "<=", ast.LtE: "<", ast.Gt: ">=", ast.GtE: ">", ast.Eq: "!=", ast.NotEq: "==",
            ast.Is: "is not", ast.IsNot: "is", ast.In: "not in", ast.NotIn: "in"}
_BINARY = {ast.Add: "-", ast.Sub: "+", ast.Mult: "/", ast.Div: "*", ast.FloorDiv: "/", ast.Pow: "*"}
_BOOL = {ast.And: "or", ast.Or: "and"}


@dataclass(frozen=True)
class Mutant:
    file: str
    line: int
    code: str
    """The mutated line as written (stripped): what ``mutation_equivalent.json`` matches, so entries survive edits elsewhere."""
    description: str
    start: int
    """Character offsets into the file's text of the span replaced by ``replacement``."""
    end: int
    replacement: str


def _offsets(text: str) -> list[int]:
    """Offset of the first character of every line (1-based line numbers index it directly)."""
    starts = [0, 0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    return starts


def _skipped_nodes(tree: ast.AST) -> set[int]:
    """ids of nodes never mutated: docstrings and annotations (they are not behaviour)."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            skipped.add(id(body[0].value))
        for annotation in (getattr(node, "annotation", None), getattr(node, "returns", None)):
            if annotation is not None:
                skipped.update(id(n) for n in ast.walk(annotation))
    return skipped


def _operator_span(text: str, starts: list[int], left: ast.AST, right: ast.AST, symbols: tuple[str, ...]) -> tuple[int, int] | None:
    """Where the operator between ``left`` and ``right`` sits (the first of ``symbols`` found between them)."""
    begin = starts[left.end_lineno] + left.end_col_offset
    finish = starts[right.lineno] + right.col_offset
    between = text[begin:finish]
    for symbol in sorted(symbols, key=len, reverse=True):
        position = between.find(symbol)
        if position >= 0:
            return begin + position, begin + position + len(symbol)
    return None


_SYMBOLS = {ast.Lt: ("<",), ast.LtE: ("<=",), ast.Gt: (">",), ast.GtE: (">=",), ast.Eq: ("==",), ast.NotEq: ("!=",),
            ast.Is: ("is not", "is"), ast.IsNot: ("is not",), ast.In: ("not in", "in"), ast.NotIn: ("not in",),
            ast.Add: ("+",), ast.Sub: ("-",), ast.Mult: ("*",), ast.Div: ("/",), ast.FloorDiv: ("//",), ast.Pow: ("**",),
            ast.And: ("and",), ast.Or: ("or",)}


def mutants_of(path: Path, relative: str) -> list[Mutant]:
    """Every mutant of one file, in source order."""
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    starts = _offsets(text)
    lines = text.splitlines()
    skipped = _skipped_nodes(tree)
    found: list[Mutant] = []

    def add(node: ast.AST, span: tuple[int, int] | None, replacement: str, description: str) -> None:
        if span is None or PRAGMA in lines[node.lineno - 1]:
            return
        found.append(Mutant(relative, node.lineno, lines[node.lineno - 1].strip(), description, span[0], span[1], replacement))

    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            for op, left, right in zip(node.ops, operands, operands[1:]):
                if type(op) in _COMPARE:
                    span = _operator_span(text, starts, left, right, _SYMBOLS[type(op)])
                    add(node, span, _COMPARE[type(op)], f"{text[span[0]:span[1]] if span else '?'} -> {_COMPARE[type(op)]}")
        elif isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            span = _operator_span(text, starts, node.left, node.right, _SYMBOLS[type(node.op)])
            add(node, span, _BINARY[type(node.op)], f"{text[span[0]:span[1]] if span else '?'} -> {_BINARY[type(node.op)]}")
        elif isinstance(node, ast.BoolOp):
            for left, right in zip(node.values, node.values[1:]):
                span = _operator_span(text, starts, left, right, _SYMBOLS[type(node.op)])
                add(node, span, _BOOL[type(node.op)], f"{text[span[0]:span[1]] if span else '?'} -> {_BOOL[type(node.op)]}")
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.Not)):
            begin = starts[node.lineno] + node.col_offset
            operand = starts[node.operand.lineno] + node.operand.col_offset
            add(node, (begin, operand), "", f"drop unary {'-' if isinstance(node.op, ast.USub) else 'not'}")
        elif isinstance(node, ast.Constant) and not isinstance(node.value, str):
            span = (starts[node.lineno] + node.col_offset, starts[node.end_lineno] + node.end_col_offset)
            value = node.value
            if isinstance(value, bool):
                add(node, span, str(not value), f"{value} -> {not value}")
            elif isinstance(value, int):
                add(node, span, str(value + 1), f"{value} -> {value + 1}")
            elif isinstance(value, float):
                mutated = repr(value * 2) if value else "1.0"
                add(node, span, mutated, f"{value!r} -> {mutated}")
    return _numbered(sorted(found, key=lambda m: (m.line, m.start)))


def _numbered(mutants: list[Mutant]) -> list[Mutant]:
    """The mutants with the second and later of a line's twins (same line, same mutation: the two ``0``
    of ``0 if c < 0 else c``) described as ``0 -> 1 (#2 on the line)``, so ``mutation_equivalent.json``
    can list one twin without hiding the other."""
    seen: dict[tuple[int, str], int] = {}
    numbered = []
    for mutant in mutants:
        key = (mutant.line, mutant.description)
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > 1:
            mutant = replace(mutant, description=f"{mutant.description} (#{seen[key]} on the line)")
        numbered.append(mutant)
    return numbered


def load_equivalent(path: Path) -> set[tuple[str, str, str]]:
    """``(file, code, mutation)`` of every mutant judged equivalent; each entry must give its ``reason``."""
    if not path.exists():
        return set()
    entries = json.loads(path.read_text(encoding="utf-8"))
    for position, entry in enumerate(entries):
        missing = {"file", "code", "mutation", "reason"} - set(entry)
        if missing:
            raise SystemExit(f"{path}: entry {position} lacks {sorted(missing)}; every equivalent mutant needs file, code, mutation and reason")
    return {(entry["file"], entry["code"], entry["mutation"]) for entry in entries}


def plausible_mutants(path: Path, root: Path, files: tuple[str, ...] | None = None) -> list[Mutant]:
    """The hand-written mutants of ``path`` (of the modules in ``files``, or all), each a checked edit:
    its ``old`` snippet occurs exactly once in its file, and ``new`` differs from it and still parses."""
    if not path.exists():
        return []
    entries = json.loads(path.read_text(encoding="utf-8"))
    found: list[Mutant] = []
    texts: dict[str, str] = {}
    for position, entry in enumerate(entries):
        missing = {"file", "old", "new", "bug"} - set(entry)
        if missing:
            raise SystemExit(f"{path}: entry {position} lacks {sorted(missing)}; every plausible mutant needs file, old, new and bug")
        if files is not None and entry["file"] not in files:
            continue
        if entry["file"] not in texts:
            texts[entry["file"]] = (root / entry["file"]).read_text(encoding="utf-8")
        text = texts[entry["file"]]
        count = text.count(entry["old"])
        if count != 1 or entry["old"] == entry["new"]:
            where = "is the same as its new text" if count == 1 else f"occurs {count} times in the file (it must occur once)"
            raise SystemExit(f"{path}: entry {position} ({entry['bug']!r}) is stale: its old text {where}; update or drop the entry")
        start = text.index(entry["old"])
        mutated = text[:start] + entry["new"] + text[start + len(entry["old"]) :]
        try:
            ast.parse(mutated)
        except SyntaxError as error:
            raise SystemExit(f"{path}: entry {position} ({entry['bug']!r}) does not parse once applied: {error}; fix its new text") from None
        line = text.count("\n", 0, start) + 1
        found.append(Mutant(entry["file"], line, text.splitlines()[line - 1].strip(), PLAUSIBLE + entry["bug"],
                            start, start + len(entry["old"]), entry["new"]))
    return found


def kill_rates(results: list[dict[str, object]]) -> list[str]:
    """One line per file and kind of mutant: killed of run, and the rate."""
    lines = []
    for file in sorted({str(r["file"]) for r in results}):
        for kind in ("operator", "plausible"):
            chosen = [r for r in results if r["file"] == file and str(r["description"]).startswith(PLAUSIBLE) == (kind == "plausible")]
            if chosen:
                killed = sum(r["result"] == "killed" for r in chosen)
                lines.append(f"  {file}: {kind} {killed} of {len(chosen)} killed ({killed / len(chosen):.1%})")
    return lines


_HUNK = re.compile(r"^@@ -\S+ \+(\d+)(?:,(\d+))? @@", re.MULTILINE)


def hunk_lines(diff: str) -> set[int]:
    """The new-side line numbers a ``git diff -U0`` adds or changes (``+start,count``; no count is one
    line, a count of 0 is a pure deletion)."""
    lines: set[int] = set()
    for match in _HUNK.finditer(diff):
        start, count = int(match[1]), int(match[2]) if match[2] is not None else 1
        lines.update(range(start, start + count))
    return lines


def changed_lines(relative: str, revision: str) -> set[int]:
    """The lines of ``relative`` in the working tree that differ from ``revision``."""
    diff = subprocess.run(["git", "diff", "-U0", revision, "--", relative], cwd=ROOT, capture_output=True, text=True)
    if diff.returncode != 0:
        raise SystemExit(f"git diff {revision} -- {relative} failed: {diff.stderr.strip()}; give --since a revision git knows")
    return hunk_lines(diff.stdout)


def scratch_copy(destination: Path) -> None:
    """The working tree as git sees it (tracked and untracked, not ignored) copied to ``destination``,
    committed there as a git repository of its own: code that reads its checkout (the results'
    revision and ``git_dirty``) runs as it does in the real one, so its mutants can be killed, and
    nothing the tests do in the copy touches the real repository."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    identity = ("-c", "user.name=mutation", "-c", "user.email=mutation@localhost", "-c", "commit.gpgsign=false")
    for command in (("init", "-q"), ("add", "-A"), ("commit", "-q", "-m", "scratch copy")):
        subprocess.run(["git", *identity, *command], cwd=destination, capture_output=True, check=True)


def run_tests(copy: Path, tests: tuple[str, ...], timeout: float) -> str:
    """``passed``, ``failed`` or ``timeout`` for the tests in the scratch copy (its package first on the path)."""
    environment = {**os.environ, "PYTHONPATH": str(copy), "PYTHONDONTWRITEBYTECODE": "1"}
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "--no-header", *HYPOTHESIS_SEED, *tests]
    try:
        result = subprocess.run(command, cwd=copy, env=environment, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout"
    if result.returncode == 5:
        raise SystemExit(f"no tests collected from {tests}; check --tests")
    return "passed" if result.returncode == 0 else "failed"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Mutation testing on demand (see the module docstring).")
    parser.add_argument("target", nargs="?", help=f"a named target: {', '.join(TARGETS)}")
    parser.add_argument("--files", nargs="+", help="modules to mutate (paths from the repository root)")
    parser.add_argument("--tests", nargs="+", help="tests that must kill the mutants (paths from the repository root)")
    parser.add_argument("--limit", type=int, default=0, help="run a random sample of this many operator mutants (0: all); plausible ones all run")
    parser.add_argument("--seed", type=int, default=0, help="seed of the sample")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per test run before the mutant counts as killed")
    parser.add_argument("--json", help="also write every mutant's result to this file")
    parser.add_argument("--equivalent", default=str(EQUIVALENT_FILE), help="the list of mutants judged equivalent (not run)")
    parser.add_argument("--plausible", default=str(PLAUSIBLE_FILE), help="the hand-written plausible-bug mutants")
    parser.add_argument("--kind", choices=("all", "operator", "plausible"), default="all",
                        help="which mutants: operator swaps, hand-written plausible bugs, or both (default: all)")
    parser.add_argument("--since", help="only mutants on lines changed since this git revision (e.g. main, HEAD~3)")
    parser.add_argument("--lines", nargs="+", type=int, help="only mutants on these line numbers (to rerun a run's survivors against new tests)")
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    parser.add_argument("--list-targets", action="store_true", help="list the named targets and exit")
    args = parser.parse_args(argv)

    if args.list_targets:
        for name, (files, tests) in TARGETS.items():
            print(f"{name}:\n  mutate {' '.join(files)}\n  tests  {' '.join(tests)}")
        return 0
    if args.target:
        if args.target not in TARGETS:
            parser.error(f"unknown target {args.target!r}; use one of {list(TARGETS)} or --files/--tests")
        files, tests = TARGETS[args.target]
        files, tests = tuple(args.files or files), tuple(args.tests or tests)
    elif args.files and args.tests:
        files, tests = tuple(args.files), tuple(args.tests)
    else:
        parser.error("give a named target, or both --files and --tests")

    equivalent = load_equivalent(Path(args.equivalent))
    everything = [m for name in files for m in mutants_of(ROOT / name, name)] if args.kind != "plausible" else []
    if args.kind != "operator":
        everything += plausible_mutants(Path(args.plausible), ROOT, files)
    if args.since:
        changed = {name: changed_lines(name, args.since) for name in files}
        everything = [m for m in everything if m.line in changed[m.file]]
    if args.lines:
        everything = [m for m in everything if m.line in set(args.lines)]
    mutants = [m for m in everything if (m.file, m.code, m.description) not in equivalent]
    skipped = len(everything) - len(mutants)
    operators = [m for m in mutants if not m.description.startswith(PLAUSIBLE)]
    if args.limit and args.limit < len(operators):
        # the hand-written mutants are few and each was written for a bug: all run; the swaps are sampled
        sample = random.Random(args.seed).sample(operators, args.limit)
        print(f"sampled {args.limit} of {len(operators)} operator mutants (seed {args.seed})")
        mutants = sorted([*sample, *(m for m in mutants if m.description.startswith(PLAUSIBLE))], key=lambda m: (m.file, m.line, m.start))
    if args.list:
        for mutant in mutants:
            print(f"{mutant.file}:{mutant.line}: {mutant.description}")
        print(f"{len(mutants)} mutants ({skipped} more judged equivalent)")
        return 0

    results: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory(prefix="mutation-") as scratch:
        copy = Path(scratch)
        scratch_copy(copy)
        baseline = run_tests(copy, tests, args.timeout)
        if baseline == "timeout":
            raise SystemExit(f"the tests {tests} ran past --timeout {args.timeout:g} s without any mutation; raise --timeout (a loaded machine is slower)")
        if baseline != "passed":
            raise SystemExit(f"the tests {tests} fail without any mutation; fix them first")
        originals = {name: (copy / name).read_text(encoding="utf-8") for name in files}
        for number, mutant in enumerate(mutants, 1):
            original = originals[mutant.file]
            (copy / mutant.file).write_text(original[: mutant.start] + mutant.replacement + original[mutant.end :], encoding="utf-8")
            started = time.monotonic()
            try:
                outcome = run_tests(copy, tests, args.timeout)
            finally:
                (copy / mutant.file).write_text(original, encoding="utf-8")
            verdict = "survived" if outcome == "passed" else "killed"
            results.append({**asdict(mutant), "result": verdict, "tests": outcome, "seconds": round(time.monotonic() - started, 2)})
            print(f"[{number}/{len(mutants)}] {verdict:8} {mutant.file}:{mutant.line}: {mutant.description}", flush=True)

    killed = sum(r["result"] == "killed" for r in results)
    survivors = [r for r in results if r["result"] == "survived"]
    rate = killed / len(results) if results else float("nan")
    print(f"\n{killed} of {len(results)} mutants killed ({rate:.1%}); {skipped} judged equivalent and not run; {len(survivors)} survived.")
    print("\n".join(["Per file and kind:", *kill_rates(results)]) if results else "No mutant was run.")
    print("Survivors:" if survivors else "No survivor.")
    for survivor in survivors:
        print(f"  {survivor['file']}:{survivor['line']}: {survivor['description']}")
    if args.json:
        Path(args.json).write_text(json.dumps({"files": files, "tests": tests, "kill_rate": rate, "mutants": results}, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
