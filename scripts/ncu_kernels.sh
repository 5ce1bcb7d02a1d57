#!/usr/bin/env bash
# Nsight Compute on the kernels still short of their targets (issue 10): the pipelined row
# kernels for bfloat16 (softmax, layer norm forward and backward) beside float32 softmax, and
# the mma.sync attention kernels. Prints, per kernel, DRAM throughput, achieved occupancy,
# registers, shared memory and the top warp stall reasons. Run after the CUDA build is installed
# (scripts/gpu_check.sh with GPU_BENCHES=ncu). NCU_CASES: the cases (default "rows attention").
set -u
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
if [ -z "$NCU" ]; then echo "ncu: not found"; exit 0; fi
metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__shared_mem_per_block_dynamic,launch__grid_size,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem,smsp__average_warp_latency_issue_stalled_barrier.ratio,smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio,smsp__average_warp_latency_issue_stalled_short_scoreboard.ratio,smsp__average_warp_latency_issue_stalled_mio_throttle.ratio,smsp__average_warp_latency_issue_stalled_lg_throttle.ratio,smsp__average_warp_latency_issue_stalled_math_pipe_throttle.ratio,smsp__average_warp_latency_issue_stalled_wait.ratio,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum
# NCU_CLOCKS=none profiles at the clocks the benchmarks run at (ncu locks base clocks by default)
extra=gpc__cycles_elapsed.avg.per_second,smsp__inst_executed.sum,l1tex__t_sector_hit_rate.pct
for case in ${NCU_CASES:-rows attention}; do
  for m in "$metrics,$extra" "$metrics"; do  # without the extra metrics if ncu refuses them
    timeout 150 "$NCU" --clock-control "${NCU_CLOCKS:-base}" --kernel-name regex:"pipe_kernel|reg_kernel|packed_kernel|mma_kernel" \
      --metrics "$m" --csv --page raw --print-units base python3 scripts/ncu_cases.py "$case" >/tmp/ncu_case.txt 2>&1
    grep -q '^"ID"' /tmp/ncu_case.txt && break
  done
  python3 scripts/ncu_cases.py --table </tmp/ncu_case.txt
done
