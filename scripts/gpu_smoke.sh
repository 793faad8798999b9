#!/usr/bin/env bash
# GPU smoke test: the Megatron-core, vLLM and compiled-decoding tests on real GPUs (NCCL, no CPU shim), then
# the train <-> rollout switch benchmark, the torch engine's tokens/s (and, in full, its compiled calls over many
# releases for training), RL iterations' tokens/s per GPU (torch and Megatron trainers) and, in full, the torch
# trainer's update on heavy-tailed batches and partial against whole rollouts on the torch engine; prints the
# figures. Run it on a host with an NVIDIA GPU.
#
#   bash scripts/gpu_smoke.sh                  # installs through scripts/setup.sh (vllm on GPU hosts), then runs
#   bash scripts/gpu_smoke.sh --no-install     # use $PYTHON (default python3) as it is, e.g. a prepared image
#   bash scripts/gpu_smoke.sh --quick          # a short lease (under 9 minutes on one H200): each stage stops at
#                                              # its time limit, the decoding files' GPU tests only, the lean loop
#                                              # with grouped attention against stock SDPA, 2 RL iterations
#
# MIRRORLAB_GPU_SMOKE=1 tells the tests to use CUDA and NCCL and to leave out their CPU workarounds.
# Logs, JUnit XML and the benchmark's outputs go to $SMOKE_OUT (default test-artifacts/gpu-smoke).
set -euo pipefail
cd "$(dirname "$0")/.."

install=1
quick=0
for argument in "$@"; do
  case "$argument" in
    --no-install) install=0 ;;
    --quick) quick=1 ;;
    -h|--help) sed -n 2,15p "$0"; exit 0 ;;
    *) echo "gpu_smoke: unknown argument '$argument' (expected --no-install or --quick)" >&2; exit 64 ;;
  esac
done
# --quick: each stage stops after its seconds (timeout 0 = no limit) and reports what it finished
tests_seconds=0 engine_seconds=0 rl_seconds=0
engine_variants=compiled,lean-compiled,lean-compiled-stock,new-shapes,segments
rl_arguments=${SMOKE_RL_ARGS:-}
if [ "$quick" = 1 ]; then
  tests_seconds=${SMOKE_TESTS_SECONDS:-120} engine_seconds=200 rl_seconds=150
  engine_variants=lean-compiled,lean-compiled-stock
  rl_arguments=${SMOKE_RL_ARGS:---iterations 2}
fi

no_gpu() {
  echo "gpu_smoke: FAILED: no usable NVIDIA GPU: $1" >&2
  echo "gpu_smoke: run it on a GPU host (in a Mirrorlab session: the device tool); the CPU tests cover the rest" >&2
  exit 2
}
command -v nvidia-smi >/dev/null 2>&1 || no_gpu "nvidia-smi is not on PATH"
gpus=$(nvidia-smi -L 2>/dev/null) || no_gpu "nvidia-smi -L failed (no driver, or no device visible)"
[ -n "$gpus" ] || no_gpu "nvidia-smi lists no device"
echo "== GPUs"; echo "$gpus"

if [ "$install" = 1 ]; then
  bash scripts/setup.sh
  python=.venv/bin/python
else
  python=${PYTHON:-python3}
fi
"$python" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' \
  || no_gpu "$python's torch cannot use CUDA (a CPU build of torch?)"
"$python" -c 'import torch.distributed as d, sys; sys.exit(0 if d.is_nccl_available() else 1)' \
  || no_gpu "$python's torch has no NCCL"

out=${SMOKE_OUT:-test-artifacts/gpu-smoke}
mkdir -p "$out"
export MIRRORLAB_GPU_SMOKE=1 PYTHONUNBUFFERED=1 OMP_NUM_THREADS=${OMP_NUM_THREADS:-4}
export NCCL_DEBUG=${NCCL_DEBUG:-WARN}

# The test files that drive Megatron-core and vLLM (whichever exist in this checkout).
shopt -s nullglob
test_files=(tests/training/test_megatron_*.py tests/training/test_hybrid_*.py tests/training/test_vllm_*.py
            tests/training/test_compiled_decoding.py tests/training/test_lean_decoding.py
            tests/training/test_rollout_placement.py
            tests/training/test_loop_vllm.py)
[ ${#test_files[@]} -gt 0 ] || { echo "gpu_smoke: FAILED: no Megatron or vLLM test files found" >&2; exit 1; }

status=0
# A test stage stopped at its time limit gets SIGINT: pytest then reports and writes the JUnit XML of the tests it
# finished (a stop is no failure; a failed test is); one still running 30 s later (a thread or a call that does
# not return) is killed.
run_tests() {  # run_tests NAME PYTEST-ARGUMENTS...
  local name=$1 code=0
  shift
  timeout -s INT -k 30 "$tests_seconds" "$python" -m pytest "$@" -q -rs -p no:cacheprovider --junitxml "$out/$name.xml" \
    2>&1 | tee "$out/$name.log" || code=$?
  if [ "$code" = 124 ]; then echo "gpu_smoke: $name stopped at its ${tests_seconds}-second limit"
  elif [ "$code" != 0 ]; then status=1; fi
}
decoding_tests=()  # --quick: the decoding files' GPU tests first, on their own (the CPU ones compile on the CPU)
if [ "$quick" = 1 ]; then
  decoding_tests=(tests/training/test_compiled_decoding.py tests/training/test_lean_decoding.py)
  test_files=(tests/training/test_megatron_*.py tests/training/test_hybrid_*.py tests/training/test_vllm_*.py
              tests/training/test_rollout_placement.py tests/training/test_loop_vllm.py)
  echo "== GPU decoding tests: ${decoding_tests[*]}"
  run_tests tests_decoding "${decoding_tests[@]}" -k "gpu or knob_reaches"
fi
echo "== tests (MIRRORLAB_GPU_SMOKE=1): ${test_files[*]}"
run_tests tests "${test_files[@]}"

# Both release modes: restart (a fresh vLLM process each time) and sleep (vLLM's GPU-only sleep mode); without
# vLLM (a bare image) the benchmark cannot run, which the tests already reported as skips.
have_vllm=1
"$python" -c 'import vllm' >/dev/null 2>&1 || have_vllm=0
for release in restart sleep; do
  if [ "$have_vllm" = 0 ]; then
    echo "skipped: vllm is not installed" | tee "$out/hybrid_switch_$release.txt"
    continue
  fi
  echo "== train <-> rollout switch benchmark, hybrid_release $release"
  timeout "$rl_seconds" "$python" benchmarks/hybrid_switch.py --release "$release" 2>&1 \
    | tee "$out/hybrid_switch_$release.txt" || status=1
done

# The torch rollout engine alone as a run builds it (bf16, rows sized from free memory), Qwen2-0.5B's shapes.
echo "== torch rollout engine tokens/s"
timeout "$engine_seconds" "$python" benchmarks/torch_engine_throughput.py --variants "$engine_variants" --repeats 2 2>&1 \
  | tee "$out/torch_engine.txt" || status=1
if [ "$quick" = 0 ]; then  # its compiled calls over many releases for training: kept buffers against new ones
  "$python" benchmarks/torch_engine_throughput.py --variants cycles --new-tokens 64 2>&1 \
    | tee -a "$out/torch_engine.txt" || status=1
fi

# Generated tokens/s per GPU of whole RL iterations, torch and Megatron trainers, on Qwen2-0.5B's shapes
# (SMOKE_RL_ARGS adds arguments, e.g. "--iterations 2" on a short lease).
echo "== RL iteration throughput (torch and megatron trainers)"
# shellcheck disable=SC2086
timeout "$rl_seconds" "$python" benchmarks/rl_iteration_throughput.py --architecture qwen2-0.5b $rl_arguments 2>&1 \
  | tee "$out/rl_iteration.txt" || status=1

# The torch trainer's update on heavy-tailed batches at Qwen2-0.5B's shapes: padded, packed in one group, packed by
# width groups (stock SDPA pays a packed row's dense mask, so width groups matter most on long responses).
if [ "$quick" = 0 ]; then
  echo "== torch trainer update (padded, one group, width groups)"
  timeout 600 "$python" benchmarks/trainer_update.py --architecture qwen2-0.5b --max-tokens 2048 --batches 2 \
    --repeats 3 2>&1 | tee "$out/trainer_update.txt" || status=1
fi

# Partial against whole rollouts where a decoding step costs about the same for 3 rows as for 256 (the regime of
# the issue's anchors), on the torch engine (this image has no vLLM), decoding uncompiled: partial rounds change
# their row counts and context widths all the time, and compiling each new shape would fill a 20-iteration run.
if [ "$quick" = 0 ]; then
  echo "== partial rollouts (torch engine, rollout_compile=off)"
  timeout 600 "$python" benchmarks/partial_rollouts.py --engines torch --set rollout_compile=off 2>&1 \
    | tee "$out/partial_rollouts.txt" || status=1
fi

echo "== summary"
# A smoke run in which nothing ran (every test skipped: vllm or megatron-core missing) is a failure.
"$python" - "$out"/tests*.xml <<'PY' || status=1
import sys, xml.etree.ElementTree as tree
passed = failed = 0
for path in sys.argv[1:]:
    suite = tree.parse(path).getroot()
    suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
    counts = {name: int(suite.get(name, 0)) for name in ("tests", "failures", "errors", "skipped")}
    passed += counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"]
    failed += counts["failures"] + counts["errors"]
    print(f"{path}: {counts['tests'] - counts['failures'] - counts['errors'] - counts['skipped']} passed, "
          f"{counts['failures'] + counts['errors']} failed, {counts['skipped']} skipped")
if len(sys.argv) == 1:
    print("tests: no JUnit report (a stage stopped at its time limit before pytest wrote one: see tests*.log)")
sys.exit(0 if passed > 0 and not failed else 1)
PY
for release in restart sleep; do echo "-- $release"; cat "$out/hybrid_switch_$release.txt"; done
echo "-- torch engine"; cat "$out/torch_engine.txt"
echo "-- RL iterations"; cat "$out/rl_iteration.txt"
[ "$quick" = 1 ] || { echo "-- trainer update"; cat "$out/trainer_update.txt"; }
[ "$quick" = 1 ] || { echo "-- partial rollouts"; cat "$out/partial_rollouts.txt"; }
if [ "$status" = 0 ]; then echo "gpu_smoke: OK"; else echo "gpu_smoke: FAILED (logs in $out)" >&2; fi
exit "$status"
