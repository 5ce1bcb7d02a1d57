"""python -m tensorplay.distributed.run: torchrun's launcher for one node of a job.

    python -m tensorplay.distributed.run --nproc-per-node N [--nnodes M --node-rank R]
        [--master-addr A --master-port P] script.py [args...]

Starts N workers with RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK,
MASTER_ADDR, MASTER_PORT set (as torchrun does); when a worker fails, the others are
stopped and the launcher reports which rank failed, its exit code or signal and the
error it printed last, then exits non-zero.
"""
import argparse
import os
import signal
import socket
import subprocess
import sys
import time


def _parser():
    p = argparse.ArgumentParser(prog="python -m tensorplay.distributed.run",
                                description="torchrun's launcher for tensorplay.distributed")
    for names, kw in [
        (("--nproc-per-node", "--nproc_per_node"), dict(default="1")),
        (("--nnodes",), dict(default="1")),
        (("--node-rank", "--node_rank"), dict(type=int, default=0)),
        (("--master-addr", "--master_addr"), dict(default="127.0.0.1")),
        (("--master-port", "--master_port"), dict(type=int, default=29500)),
        (("--standalone",), dict(action="store_true")),
        (("--max-restarts", "--max_restarts"), dict(type=int, default=0)),
        (("--rdzv-backend", "--rdzv_backend"), dict(default="static")),
        (("--rdzv-endpoint", "--rdzv_endpoint"), dict(default="")),
        (("--run-path", "--run_path"), dict(action="store_true")),
        (("-m", "--module"), dict(action="store_true")),
        (("--no-python", "--no_python"), dict(action="store_true")),
    ]:
        p.add_argument(*names, **kw)
    p.add_argument("training_script")
    p.add_argument("training_script_args", nargs=argparse.REMAINDER)
    return p


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv=None):
    a = _parser().parse_args(argv)
    nproc = os.cpu_count() if a.nproc_per_node in ("auto", "cpu") else int(a.nproc_per_node)
    nnodes = int(str(a.nnodes).split(":")[-1])
    if nproc < 1 or nnodes < 1 or not 0 <= a.node_rank < nnodes:
        sys.exit(f"run: invalid --nproc-per-node {nproc} / --nnodes {nnodes} / --node-rank {a.node_rank}")
    if a.standalone:
        a.master_addr, a.master_port = "127.0.0.1", _free_port()
    if a.rdzv_endpoint:
        host, _, port = a.rdzv_endpoint.rpartition(":")
        a.master_addr, a.master_port = host or a.master_addr, int(port)
    world = nproc * nnodes
    if a.no_python:
        cmd = [a.training_script]
    elif a.module:
        cmd = [sys.executable, "-u", "-m", a.training_script]
    else:
        cmd = [sys.executable, "-u", a.training_script]
    cmd += a.training_script_args
    procs = []
    for local in range(nproc):
        rank = a.node_rank * nproc + local
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(local), WORLD_SIZE=str(world),
                   LOCAL_WORLD_SIZE=str(nproc), GROUP_RANK=str(a.node_rank), ROLE_RANK=str(rank),
                   ROLE_WORLD_SIZE=str(world), MASTER_ADDR=a.master_addr,
                   MASTER_PORT=str(a.master_port), TORCHELASTIC_RUN_ID="none",
                   TORCHELASTIC_RESTART_COUNT="0", OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
        procs.append((rank, subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True,
                                             errors="replace")))
    # each worker's stderr is passed through and its tail kept for the failure report
    import threading
    tails = {}

    def pump(rank, p):
        lines = []
        for line in p.stderr:
            sys.stderr.write(line)
            lines.append(line)
            del lines[:-30]
        tails[rank] = lines
    pumps = [threading.Thread(target=pump, args=rp, daemon=True) for rp in procs]
    for t in pumps:
        t.start()
    failed = None
    try:
        while True:
            alive = False
            for rank, p in procs:
                rc = p.poll()
                if rc is None:
                    alive = True
                elif rc != 0 and failed is None:
                    failed = (rank, rc)
            if failed or not alive:
                break
            time.sleep(0.05)
    except KeyboardInterrupt:
        failed = failed or (-1, -signal.SIGINT)
    if failed:
        for _, p in procs:
            if p.poll() is None:
                p.terminate()
        for _, p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
    for t in pumps:
        t.join(timeout=5)
    if failed:
        rank, rc = failed
        how = (f"signal {signal.Signals(-rc).name}" if rc < 0 else f"exit code {rc}")
        tail = "".join(tails.get(rank, [])[-15:])
        sys.stderr.write(
            f"\n{'=' * 60}\ntensorplay.distributed.run: {a.training_script} FAILED\n"
            f"  rank: {rank} (local_rank: {rank - a.node_rank * nproc}) failed with {how}\n"
            f"  error (last lines of its stderr):\n{tail}{'=' * 60}\n")
        sys.exit(1)
    return 0


if __name__ == "__main__":
    main()
