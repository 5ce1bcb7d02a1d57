"""tensorplay.multiprocessing: the standard library's multiprocessing plus torch's spawn().

spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn") runs
fn(i, *args) in nprocs processes; a failing process's traceback is raised in the parent
as ProcessRaisedException (ProcessExitedException when it dies without one), as PyTorch does.

Importing it registers how tensors cross processes (reductions.py): a CPU tensor put on a
Queue or passed to a Process is moved into shared memory and the receiver maps the same
memory, so writes on either side are seen by the other ("file_descriptor" sharing).
"""
import multiprocessing
import multiprocessing.connection
import signal
import sys
import traceback
from multiprocessing import *  # noqa: F401,F403

__all__ = ["spawn", "start_processes", "ProcessContext", "ProcessRaisedException",
           "ProcessExitedException", "ProcessException", "set_sharing_strategy",
           "get_sharing_strategy", "get_all_sharing_strategies"]

# Tensors put on a Queue or passed to a Process share their memory (reductions.py)
from tensorplay.multiprocessing import reductions as _reductions  # noqa: E402

_reductions.init_reductions()
_sharing_strategy = "file_descriptor"


def get_all_sharing_strategies():
    """The ways CPU tensors can be shared: TensorPlay has PyTorch's "file_descriptor" (its
    Linux default; PyTorch's "file_system" needs its shared-memory manager daemon)."""
    return {"file_descriptor"}


def get_sharing_strategy():
    """The current strategy for sharing CPU tensors."""
    return _sharing_strategy


def set_sharing_strategy(new_strategy):
    """Sets the strategy for sharing CPU tensors (one of get_all_sharing_strategies())."""
    global _sharing_strategy
    if new_strategy not in get_all_sharing_strategies():
        raise ValueError(f"unsupported sharing strategy {new_strategy!r}; TensorPlay supports "
                         f"{sorted(get_all_sharing_strategies())}")
    _sharing_strategy = new_strategy


class ProcessException(Exception):
    def __init__(self, msg, error_index, pid):
        super().__init__(msg)
        self.msg, self.error_index, self.pid = msg, error_index, pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    pass


class ProcessExitedException(ProcessException):
    def __init__(self, msg, error_index, error_pid, exit_code, signal_name=None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code, self.signal_name = exit_code, signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid, self.exit_code, self.signal_name)


def _wrap(fn, i, args, error_queue):
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass
    except Exception:
        error_queue.put(traceback.format_exc())
        sys.exit(1)


class ProcessContext:
    def __init__(self, processes, error_queues):
        self.processes = processes
        self.error_queues = error_queues
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self):
        return [p.pid for p in self.processes]

    def join(self, timeout=None):
        """True when every process has finished; raises on the first failure (and ends the rest)."""
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(list(self.sentinels), timeout=timeout)
        failed = None
        for s in ready:
            i = self.sentinels.pop(s)
            p = self.processes[i]
            p.join()
            if p.exitcode != 0 and failed is None:
                failed = i
        if failed is None:
            return not self.sentinels
        for p in self.processes:
            if p.is_alive():
                p.terminate()
            p.join()
        p = self.processes[failed]
        if self.error_queues[failed].empty():
            code = p.exitcode
            if code < 0:
                name = signal.Signals(-code).name
                raise ProcessExitedException(f"process {failed} terminated with signal {name}",
                                             failed, p.pid, code, name)
            raise ProcessExitedException(f"process {failed} terminated with exit code {code}",
                                         failed, p.pid, code)
        tb = self.error_queues[failed].get()
        raise ProcessRaisedException(f"\n\n-- Process {failed} terminated with the following error:\n{tb}",
                                     failed, p.pid)


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    ctx = multiprocessing.get_context(start_method)
    queues, procs = [], []
    for i in range(nprocs):
        q = ctx.SimpleQueue()
        p = ctx.Process(target=_wrap, args=(fn, i, args, q), daemon=daemon)
        p.start()
        queues.append(q)
        procs.append(p)
    pc = ProcessContext(procs, queues)
    if not join:
        return pc
    while not pc.join():
        pass


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    return start_processes(fn, args, nprocs, join, daemon, start_method)
