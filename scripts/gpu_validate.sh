#!/usr/bin/env bash
# Build, test, sanitize and benchmark sepconv1d on a GPU machine whose python already has a CUDA
# torch (>= 2.10). Python runs with -P, so the tests and the benchmark import the installed
# sepconv1d (an editable build, or a wheel installed beforehand), never a stale source tree.
# Logs, junit XML and benchmark JSON go to $OUT (default ./gpu-out).
#
#   scripts/gpu_validate.sh build test sanitize bench      # stages, in the order given
#   WHEEL=dist/sepconv1d-*.whl scripts/gpu_validate.sh install test sanitize bench
#
# Stages: build     pip install -e . for this GPU's arch (TORCH_CUDA_ARCH_LIST, default 9.0)
#         install   install the wheel named by $WHEEL instead (one built elsewhere, e.g. by
#                   scripts/build_wheel.sh on a machine without a GPU: no build time on this one)
#         test      the GPU half of the pytest suite (the CPU half runs in CI)
#         cputest   the whole suite, CPU cases included
#         sanitize  compute-sanitizer memcheck + racecheck over a focused GPU subset, racecheck of
#                   the warp-specialised separable kernel (scripts/separable_race.py), and both
#                   tools over the depthwise tensor-core, phase-row and rows kernels
#                   (scripts/depthwise_race.py)
#         bench     python -m sepconv1d.bench, JSON into $OUT
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
status=0

run() {  # run NAME CMD...: tee output to $OUT/NAME.log, remember failures
  local name=$1
  shift
  echo "=== $name: $*"
  local t0=$SECONDS
  "$@" 2>&1 | tee "$OUT/$name.log"
  local rc=${PIPESTATUS[0]}
  echo "=== $name: exit $rc in $((SECONDS - t0)) s"
  [ "$rc" -eq 0 ] || status=1
  return "$rc"
}

# Every test but the CPU-parametrized ones: a filter that names the GPU tests ("cuda or ...") misses
# the CUDA-only tests whose ids carry no device (test_short_rows_kernel, the phase rows).
GPU_TESTS="not cpu"
# pytest-xdist spreads the (CPU-bound) float64 references over cores when it is installed.
XDIST=()
# One intra-op thread per worker: many workers each spawning a full CPU thread pool oversubscribe
# the cores (the suite ran 5x slower that way on the H200 box).
if "$PY" -c 'import xdist' 2>/dev/null; then
  XDIST=(-n "${XDIST_WORKERS:-8}")
  export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
fi

for stage in "$@"; do
  case $stage in
    build)
      nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv || true
      "$PY" -c 'import sys, torch; print(sys.version); print(torch.__version__, torch.version.cuda)'
      export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0} MAX_JOBS=${MAX_JOBS:-16}
      run build "$PY" -m pip install --no-build-isolation --no-deps -e . || exit 1
      ;;
    install)
      [ -n "${WHEEL:-}" ] || { echo "install: set WHEEL to a built wheel" >&2; exit 2; }
      nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv || true
      run install "$PY" -m pip install --no-deps --force-reinstall --no-index "$WHEEL" || exit 1
      ;;
    test)
      run test "$PY" -P -m pytest tests -q -p no:cacheprovider "${XDIST[@]}" -k "$GPU_TESTS" \
        --junitxml="$OUT/junit-gpu.xml"
      ;;
    cputest)
      run cputest "$PY" -P -m pytest tests -q -p no:cacheprovider "${XDIST[@]}" --junitxml="$OUT/junit-all.xml"
      ;;
    sanitize)
      # No caching allocator: every tensor is its own allocation, so out-of-bounds accesses show.
      subset="cuda and (odd_channel or larger_shapes or only_requested or empty_batch or half_forward_kernels or tf32_forward_kernels)"
      PYTORCH_NO_CUDA_MEMORY_CACHING=1 run memcheck compute-sanitizer --tool memcheck --error-exitcode 9 \
        --print-limit 20 "$PY" -P -m pytest tests/test_depthwise.py tests/test_separable.py -q -x \
        -p no:cacheprovider -k "$subset"
      run racecheck compute-sanitizer --tool racecheck --error-exitcode 9 --print-limit 20 \
        "$PY" -P -m pytest tests/test_depthwise.py tests/test_separable.py -q -x -p no:cacheprovider \
        -k "cuda and (odd_channel or only_requested or (half_forward_kernels and bfloat16))"
      run racecheck_ws compute-sanitizer --tool racecheck --error-exitcode 9 --print-limit 20 \
        "$PY" -P scripts/separable_race.py
      PYTORCH_NO_CUDA_MEMORY_CACHING=1 run memcheck_dw compute-sanitizer --tool memcheck --error-exitcode 9 \
        --print-limit 20 "$PY" -P scripts/depthwise_race.py
      run racecheck_dw compute-sanitizer --tool racecheck --error-exitcode 9 --print-limit 20 \
        "$PY" -P scripts/depthwise_race.py
      ;;
    bench)
      run bench "$PY" -P -m sepconv1d.bench --budget-s "${BENCH_BUDGET_S:-200}" --out "$OUT/bench.json"
      ;;
    *)
      echo "unknown stage $stage" >&2
      exit 2
      ;;
  esac
done
exit $status
