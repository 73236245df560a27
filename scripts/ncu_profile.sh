#!/usr/bin/env bash
# Nsight Compute reports for named cases of scripts/profile_cases.py (one text report per case).
# Clocks are left alone (--clock-control none). Reports go to $OUT (default ./gpu-out).
#
#   scripts/ncu_profile.sh dw_fwd_bf16_k3 sep_fwd_bf16
#   NCU_KERNEL='regex:sep_fwd_kernel' NCU_LAUNCHES=1 scripts/ncu_profile.sh sep_fwd_bf16
#
# NCU_SOURCE=1 also records per-instruction counters and writes them as $OUT/sass_<case>.csv
# (per SASS instruction) and $OUT/cuda_<case>.csv (per source line; the build has -lineinfo):
# executed instructions and stall samples, the way to find where a kernel spends its time.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
# Stall reasons per issued instruction, shared-memory wavefronts and bank conflicts, tensor-pipe use.
METRICS='regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio'
METRICS+=,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum
METRICS+=,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum
METRICS+=,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum
METRICS+=,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
METRICS+=,smsp__inst_executed.sum,dram__bytes.sum
for c in "$@"; do
  src=()
  if [ "${NCU_SOURCE:-0}" = 1 ]; then
    src=(--section SourceCounters --section WarpStateStats -f -o "$OUT/rep_$c")
  fi
  ncu "${src[@]}" --clock-control none -k "${NCU_KERNEL:-regex:dw_|sep_}" --launch-count "${NCU_LAUNCHES:-8}" \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section ComputeWorkloadAnalysis \
    --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats \
    --metrics "$METRICS" \
    "$PY" -P scripts/profile_cases.py --reps 1 "$c" >"$OUT/ncu_$c.txt" 2>&1
  echo "$c: exit $?"
  if [ "${NCU_SOURCE:-0}" = 1 ]; then
    ncu -i "$OUT/rep_$c.ncu-rep" --page source --csv --print-source sass >"$OUT/sass_$c.csv" 2>&1
    ncu -i "$OUT/rep_$c.ncu-rep" --page source --csv --print-source cuda >"$OUT/cuda_$c.csv" 2>&1
    ncu -i "$OUT/rep_$c.ncu-rep" --page details >"$OUT/ncu_$c.txt" 2>&1
    rm -f "$OUT/rep_$c.ncu-rep"
  fi
done
