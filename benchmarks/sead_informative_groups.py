"""Which decision-point groups carry a GRPO signal, measured before training (no updates; issue 41 item 2).

On ``--points`` decision points cut from the checkpoint's own greedy dialogues (training starts, the
trainer's ``prefix: lm``), each continuation and rollout temperature plays G copies of every point
(``trainers.grpo.decision_point.play_groups``, seed 1234) and reports, per G:

    informative    share of groups whose G rewards differ (the others give every copy advantage 0)
    noise          share of groups where one sampled turn (token for token) got different rewards: the
                   continuation, not the turn, made the difference
    pooled         share informative once each copy's reward is pooled with the copies that said the
                   same turn (``pooled_rewards``, the trainer's ``--pool-same-turn``)
    distinct       mean number of distinct sampled turns per group
    2+ distinct    share of points whose G samples hold at least 2 distinct turns (a filter that needs
                   sampling only), and the share informative among them

With ``--greedy-copy`` copy 0 of every group decodes its turn greedily (the trainer's ``greedy_copy``) and
two more columns count the groups where a sampled turn beat the greedy one (``beaten``: the signal that can
move the argmax) and where the greedy turn beat a sampled one (``beats``).

G = 8 is the first 8 copies of a 16-copy group (``--prefix-groups`` names other such G). The SEAD reward is terminal only (SPEC: R = 1[success]),
so there is no per-turn term to densify it with. One torch thread; the load is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any, Sequence

SETTINGS = "adaptive:1:16,adaptive:1.5:16,adaptive:2:16,lm:1:8,lm:1.5:8,lm:2:8"


def shares(groups: list[list[Any]]) -> dict[str, Any]:
    from trainers.grpo.decision_point import pooled_rewards

    reward = lambda t: t.rewards.get("agent", 0.0)  # noqa: E731
    said = lambda t: tuple(t.meta["learner_record"]["completion_ids"])  # noqa: E731
    informative = [len({reward(t) for t in g}) > 1 for g in groups]
    distinct = [len({said(t) for t in g}) for g in groups]
    noisy = 0
    for g in groups:
        by_turn: dict[tuple[int, ...], set[float]] = {}
        for t in g:
            by_turn.setdefault(said(t), set()).add(reward(t))
        noisy += any(len(v) > 1 for v in by_turn.values())
    pooled = [len(set(pooled_rewards([reward(t) for t in g], [said(t) for t in g]))) > 1 for g in groups]
    kept = [i for i, d in enumerate(distinct) if d >= 2]
    greedy = {}
    if groups and groups[0][0].meta["decision_point"].get("greedy"):
        greedy = {"greedy_beaten": sum(max(map(reward, g)) > reward(g[0]) for g in groups) / len(groups),
                  "greedy_beats": sum(min(map(reward, g)) < reward(g[0]) for g in groups) / len(groups)}
    return {**greedy,
        "informative": sum(informative) / len(groups),
        "same_turn_different_rewards": noisy / len(groups),
        "informative_pooled": sum(pooled) / len(groups),
        "distinct_turns_mean": sum(distinct) / len(groups),
        "points_with_2plus_distinct": len(kept) / len(groups),
        "informative_among_2plus_distinct": sum(informative[i] for i in kept) / len(kept) if kept else None,
    }


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", required=True, help="a SEAD LM checkpoint folder (model and tokenizer)")
    parser.add_argument("--points", type=int, default=32)
    parser.add_argument("--settings", default=SETTINGS, help="comma-separated CONTINUATION:TEMPERATURE:G")
    parser.add_argument("--json", type=Path, help="also save the rows here")
    parser.add_argument("--greedy-copy", action="store_true", help="copy 0 of every group decodes greedily (the trainer's greedy_copy)")
    parser.add_argument("--max-new-tokens", type=int, default=24, help="tokens a turn may take: 24 fits the scratch model's whole-sentence tokens; a subword model such as SmolLM2 needs its preset's 96")
    parser.add_argument("--prefix-groups", default="8", help="comma-separated G: each setting is also read on its groups' first G copies (G below the setting's own)")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    from dialogue_gym.curriculum import ProfileController
    from dialogue_gym.scenarios.sead.game import SeadConfig, SeadGame
    from dialogue_gym.scenarios.sead.policies import make_policy
    from dialogue_gym.seeding import mix_seed
    from trainers.grpo.decision_point import DecisionPointSeat, draw_points, play_groups
    from trainers.grpo.lm import CausalLMPolicy, GRPOConfig

    def lm(temperature: float) -> CausalLMPolicy:
        return CausalLMPolicy(args.checkpoint, GRPOConfig(learning_rate=3e-4, kl_coef=0.0, temperature=temperature, max_new_tokens=args.max_new_tokens), seed=0)

    prefix_groups = [int(g) for g in args.prefix_groups.split(",")]
    settings = [(cont, float(t), int(g)) for cont, t, g in (s.split(":") for s in args.settings.split(","))]
    games = [SeadGame(SeadConfig(max_agent_turns=15)) for _ in range(args.points * max(g for _, _, g in settings))]
    user = make_policy("user", "scripted", games[0].library)
    profiles = ProfileController(mode="full", batch_size=args.points, n_max=200, seed=7).sample()
    starts = [(mix_seed(7, 0, e), {"profile": p}) for e, p in enumerate(profiles)]
    greedy = lm(1.0)
    greedy.greedy = True
    points = draw_points(games, {"agent": greedy, "user": user}, "agent", starts, random.Random(7))
    print(f"{args.points} decision points of {args.checkpoint}'s greedy dialogues (turns {sorted(p.turn for p in points)}); "
          f"load average before {os.getloadavg()[0]:.2f}")
    rows = []
    for cont, temperature, size in settings:
        started = time.perf_counter()
        policy = lm(temperature)
        continuation = policy if cont == "lm" else make_policy("agent", cont, games[0].library)
        trajectories = play_groups(games, DecisionPointSeat(policy, continuation), {"user": user}, "agent", points, size, 1234, args.greedy_copy)
        groups = [trajectories[i : i + size] for i in range(0, len(trajectories), size)]
        row = {"continuation": cont, "temperature": temperature, "G": size, "seconds": round(time.perf_counter() - started, 1),
               "load": round(os.getloadavg()[0], 2), "mean_reward": sum(t.rewards.get("agent", 0.0) for t in trajectories) / len(trajectories),
               "by_G": {str(k): shares([g[:k] for g in groups]) for k in sorted({size, *(g for g in prefix_groups if g < size)})}}
        rows.append(row)
    extra = " beaten | beats |" if args.greedy_copy else ""
    print("\n| continuation | T | G | informative | noise | pooled | distinct | 2+ distinct | informative of those | mean R | s (load) |" + extra)
    print("|---|---|---|---|---|---|---|---|---|---|---|" + "---|---|" * args.greedy_copy)
    for row in rows:
        for k, s in row["by_G"].items():
            among = "" if s["informative_among_2plus_distinct"] is None else f"{s['informative_among_2plus_distinct']:.2f}"
            print(f"| {row['continuation']} | {row['temperature']:g} | {k} | {s['informative']:.2f} | {s['same_turn_different_rewards']:.2f} | "
                  f"{s['informative_pooled']:.2f} | {s['distinct_turns_mean']:.2f} | {s['points_with_2plus_distinct']:.2f} | {among} | "
                  f"{row['mean_reward']:.3f} | {row['seconds']:.0f} ({row['load']:.1f}) |"
                  + (f" {s['greedy_beaten']:.2f} | {s['greedy_beats']:.2f} |" if args.greedy_copy else ""))
    result = {"checkpoint": args.checkpoint, "points": args.points, "greedy_copy": args.greedy_copy, "turns": [p.turn for p in points], "rows": rows}
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
    sys.exit(0)
