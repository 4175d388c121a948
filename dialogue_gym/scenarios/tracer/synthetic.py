"""Generator of the SYNTHETIC reference sample shipped as ``data/synthetic_sessions.jsonl``.

    python -m dialogue_gym.scenarios.tracer.synthetic [--groups 40] [--per-group 10] [--seed 0] [--out FILE]

No real data: merchants and personas come from ``data/world.json``. Groups are (merchant, personality,
need) triples, as the paper groups sessions of one merchant with similar users and initial needs. Each
session is a real episode of :class:`~dialogue_gym.scenarios.tracer.game.TracerGame` (the same rules
as the envs) between the ``sop`` assistant and a *ground-truth* user: the packaged intent-dynamics
weights plus effects the learnable features cannot see (a per-merchant offset on conversion and
dropout from ``world.json``'s ``hidden`` field, and a per-group random offset), so a simulator trained
on the sample has a realistic gap to close and cannot fit it exactly. Like the paper's cleaning, sessions
with fewer than 3 user turns are discarded and redrawn. Every record says ``"synthetic": true``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
from pathlib import Path
from typing import Any

import numpy as np

from dialogue_gym.envs.driver import CounterpartDriver
from dialogue_gym.scenarios.tracer.assistants import SopAssistant
from dialogue_gym.scenarios.tracer.data import (
    CONVERSION_LEVEL,
    DEFAULT_SESSIONS_FILE,
    LEVELS,
    MIN_USER_TURNS,
    ReferenceSession,
    ReferenceSet,
    SessionTurn,
    load_world,
)
from dialogue_gym.scenarios.tracer.dynamics import IntentDynamics
from dialogue_gym.scenarios.tracer.game import TracerGame
from dialogue_gym.scenarios.tracer.users import IntentDynamicsUser
from dialogue_gym.seeding import mix_seed
from dialogue_gym.types import Outcome

GROUP_EFFECT_SCALE = 0.4
"""Standard deviation of the per-group logit offset on conversion (unobserved factors)."""
MERCHANT_FIELDS = ("id", "name", "industry", "greeting", "facts")


class GroundTruthUser(IntentDynamicsUser):
    """The packaged dynamics plus hidden merchant and group effects on levels 0 and 5.

    The generator's ground truth, not a player: it reads the episode's group, which no user knows,
    so it declares the privileged channel (its ``start`` gets the whole profile).
    """

    privileged = True

    def __init__(self, merchant_effects: dict[str, tuple[float, float]], group_effects: dict[str, float]):
        super().__init__(IntentDynamics.from_file())
        self.merchant_effects = merchant_effects
        self.group_effects = group_effects

    def logits(self, x: np.ndarray, memory: dict[str, Any]) -> np.ndarray:
        logits = super().logits(x, memory)
        profile = memory["profile"]
        conversion, dropout = self.merchant_effects.get(profile["merchant"]["id"], (0.0, 0.0))
        logits[CONVERSION_LEVEL] += conversion + self.group_effects.get(profile["group_id"], 0.0)
        logits[0] += dropout
        return logits


def _profile(rng: random.Random, personality: str, need: str, merchant: dict[str, Any]) -> dict[str, Any]:
    demographics = load_world().demographics
    profile = {key: rng.choice(options) for key, options in demographics.items()}
    profile.update(personality=personality, need=need, initial_intent=merchant["needs"][need])
    return profile


def _stub(session_id: str, group_id: str, profile: dict[str, Any], merchant: dict[str, Any]) -> ReferenceSession:
    """A start for the game: profile, merchant and opening (the reference turns are not used: no reward)."""
    turns = (SessionTurn("assistant", merchant["greeting"]), SessionTurn("user", "", 0, ""))
    return ReferenceSession(session_id, group_id, profile, merchant, turns, "dropout", synthetic=True)


def _record(stub: ReferenceSession, game: TracerGame) -> dict[str, Any]:
    turns = [stub.turns[0].to_dict()]
    for turn in game.trajectory().turns:
        if turn.role == "assistant":
            turns.append({"role": "assistant", "text": turn.text})
        else:
            turns.append(
                {"role": "user", "text": turn.text, "intent_level": turn.parsed["intent_level"], "rationale": turn.parsed["think"]}
            )
    outcome = "conversion" if game.outcome is Outcome.SUCCESS else "dropout"
    return {**stub.to_dict(), "turns": turns, "outcome": outcome}


def generate(groups: int = 40, per_group: int = 10, seed: int = 0) -> list[dict[str, Any]]:
    """``groups * per_group`` session records (JSON-ready), deterministic in ``seed``."""
    world = load_world()
    rng = random.Random(seed)
    triples = list(itertools.product(world.merchants, world.personalities, world.needs))
    if groups > len(triples):
        raise ValueError(f"groups={groups} exceeds the {len(triples)} (merchant, personality, need) combinations.")
    chosen = rng.sample(triples, groups)
    merchant_effects = {m["id"]: (m["hidden"]["conversion"], m["hidden"]["dropout"]) for m in world.merchants}
    group_effects = {f"syn-g{g:02d}": rng.gauss(0.0, GROUP_EFFECT_SCALE) for g in range(groups)}
    user = GroundTruthUser(merchant_effects, group_effects)
    driver = CounterpartDriver({"assistant": SopAssistant(), "user": user}, learner=None)
    records = []
    for g, (merchant, personality, need) in enumerate(chosen):
        public = {key: merchant[key] for key in MERCHANT_FIELDS}
        for s in range(per_group):
            for attempt in itertools.count():
                session_rng = random.Random(mix_seed(seed, g, s, attempt))
                stub = _stub(f"syn-g{g:02d}-s{s:02d}", f"syn-g{g:02d}", _profile(session_rng, personality, need, merchant), public)
                game = TracerGame(references=ReferenceSet("(generator)", (stub,)), user_reward="none")
                game.reset(seed=mix_seed(seed, g, s, attempt, 1), options={"session_id": stub.session_id})
                driver.advance([game], [driver.start(game)])
                # A first move the opening rule had to correct is no reference: draw the session again.
                corrected = "requested_intent_level" in game.turns[0].parsed
                if len(game.intents) >= MIN_USER_TURNS and not corrected:
                    records.append(_record(stub, game))
                    break
    return records


def write(records: list[dict[str, Any]], path: str | Path) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--groups", type=int, default=40)
    parser.add_argument("--per-group", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(DEFAULT_SESSIONS_FILE))
    args = parser.parse_args()
    records = generate(args.groups, args.per_group, args.seed)
    write(records, args.out)
    converted = sum(r["outcome"] == "conversion" for r in records)
    lengths = [sum(t["role"] == "user" for t in r["turns"]) for r in records]
    print(
        f"wrote {len(records)} SYNTHETIC sessions in {args.groups} groups to {args.out}: "
        f"conversion rate {converted / len(records):.3f}, user turns mean {np.mean(lengths):.2f} "
        f"(min {min(lengths)}, max {max(lengths)}), levels used {sorted({t['intent_level'] for r in records for t in r['turns'] if t['role'] == 'user'})} of 0-{LEVELS - 1}"
    )


if __name__ == "__main__":
    main()
