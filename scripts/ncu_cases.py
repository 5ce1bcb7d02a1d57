"""The launches scripts/ncu_kernels.sh profiles, and the table it prints.

    python scripts/ncu_cases.py rows|attention   # run one case (under ncu)
    ncu ... --csv --page raw ... | python scripts/ncu_cases.py --table
"""
import csv
import re
import sys

SHORT = {  # metric -> column title
    "gpu__time_duration.sum": "us",
    "gpc__cycles_elapsed.avg.per_second": "MHz",
    "smsp__inst_executed.sum": "Minst",
    "l1tex__t_sector_hit_rate.pct": "l1hit%",
    "dram__bytes_read.sum": "MB_rd",
    "dram__bytes_write.sum": "MB_wr",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "dram%",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "occ%",
    "launch__registers_per_thread": "regs",
    "launch__shared_mem_per_block_dynamic": "smem",
    "launch__grid_size": "grid",
    "launch__occupancy_limit_registers": "lim_reg",
    "launch__occupancy_limit_shared_mem": "lim_smem",
    "smsp__issue_active.avg.pct_of_peak_sustained_active": "issue%",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active": "tensor%",
    "smsp__average_warp_latency_issue_stalled_barrier.ratio": "st_bar",
    "smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio": "st_long",
    "smsp__average_warp_latency_issue_stalled_short_scoreboard.ratio": "st_short",
    "smsp__average_warp_latency_issue_stalled_mio_throttle.ratio": "st_mio",
    "smsp__average_warp_latency_issue_stalled_lg_throttle.ratio": "st_lg",
    "smsp__average_warp_latency_issue_stalled_math_pipe_throttle.ratio": "st_math",
    "smsp__average_warp_latency_issue_stalled_wait.ratio": "st_wait",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum": "bank_conf",
}


def rows_case():
    import tensorplay as tp
    import tensorplay.nn.functional as F
    for dtype in (tp.bfloat16, tp.float32):
        x = tp.randn(32768, 4096, device="cuda").to(dtype)
        w = tp.randn(4096, device="cuda").to(dtype)
        b = tp.randn(4096, device="cuda").to(dtype)
        tp.softmax(x, -1)
        F.layer_norm(x, (4096,), w, b)
        if dtype is tp.bfloat16:  # beside the defaults (Note [Packed half rows]): the pipelined rows
            with tp.cuda._kernel_switches(packed_half_rows=0):
                tp.softmax(x, -1)
                F.layer_norm(x, (4096,), w, b)
        _, m, r = tp.native_layer_norm(x, [4096], w, b, 1e-5)
        tp.native_layer_norm_backward(x, x, [4096], m, r, w, True, True, True)
    tp.cuda.synchronize()


def attention_case():
    import tensorplay as tp
    import tensorplay.nn.functional as F
    q, k, v = (tp.randn(8, 16, 4096, 128, device="cuda").to(tp.bfloat16).requires_grad_() for _ in range(3))
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    tp.autograd.grad(out, [q, k, v], tp.ones_like(out))
    tp.cuda.synchronize()


def table():
    lines = sys.stdin.read().splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        print("\n".join(lines[-15:]))
        return
    data = list(csv.reader(lines[start:]))
    head, body = data[0], [r for r in data[2:] if len(r) == len(data[0])]
    cols = [c for c in SHORT if c in head]
    print(f"{'kernel':<72}" + " ".join(f"{SHORT[c]:>9}" for c in cols))
    for r in body:
        name = r[head.index("Kernel Name")]
        name = re.sub(r"\(anonymous namespace\)::", "", name).split("(")[0].split("::")[-1][:72]
        vals = []
        for c in cols:
            v = r[head.index(c)].replace(",", "")
            try:
                f = float(v)
                v = f"{f / 1e3:.1f}" if c == "gpu__time_duration.sum" else f"{f / 1e6:.0f}" if c.startswith(
                    ("dram__bytes", "gpc__cycles", "smsp__inst")) else f"{f:.4g}"
            except ValueError:
                pass
            vals.append(f"{v:>9}")
        print(f"{name:<72}" + " ".join(vals))


if __name__ == "__main__":
    arg = sys.argv[1] if len(sys.argv) > 1 else "rows"
    if arg == "--table":
        table()
    else:
        {"rows": rows_case, "attention": attention_case}[arg]()
