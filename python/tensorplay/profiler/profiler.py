"""``tp.profiler.profile``: the op profiler with activities, a step schedule and a trace
handler, on top of ``tensorplay.autograd.profiler``."""
import enum
import os
import socket
import time
import warnings
from functools import partial

from tensorplay.autograd import profiler as prof

__all__ = ["ProfilerAction", "ProfilerActivity", "profile", "schedule", "supported_activities",
           "tensorboard_trace_handler"]


class ProfilerActivity(enum.Enum):
    """What a profile records: ``CPU`` (ops, ranges, backward nodes with host times) and
    ``CUDA`` (the GPU time of ops on CUDA tensors, by CUDA events)."""
    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5


class ProfilerAction(enum.Enum):
    """What a schedule asks for at a step."""
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def supported_activities():
    """CPU, and CUDA when a GPU is available."""
    import tensorplay.cuda
    acts = {ProfilerActivity.CPU}
    if tensorplay.cuda.is_available():
        acts.add(ProfilerActivity.CUDA)
    return acts


def schedule(*, wait, warmup, active, repeat=0, skip_first=0, skip_first_wait=0):
    """A ``schedule`` for ``profile``: after ``skip_first`` steps, cycles of ``wait`` idle
    steps, ``warmup`` steps, then ``active`` recorded steps (the trace is handed to
    ``on_trace_ready`` after the last); ``repeat`` cycles (0: until the profile ends).
    ``skip_first_wait`` drops the first cycle's wait."""

    def schedule_fn(step):
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:
            step += wait
        cycle = wait + warmup + active
        if repeat > 0 and step / cycle >= repeat:
            return ProfilerAction.NONE
        pos = step % cycle
        if pos < wait:
            return ProfilerAction.NONE
        if pos < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if pos < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), warmup={warmup} "
            f"(need >= 0), active={active} (need > 0), repeat={repeat} (need >= 0), "
            f"skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results",
                      stacklevel=2)
    return schedule_fn


_warned_clears = False


def _default_schedule_fn(_):
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False,
                              use_python_export=False):
    """An ``on_trace_ready`` that writes each trace as
    ``<dir_name>/<worker_name>.<ns>.pt.trace.json[.gz]`` (worker: ``host_pid``)."""

    def handler_fn(p):
        nonlocal worker_name
        if not os.path.isdir(dir_name):
            try:
                os.makedirs(dir_name, exist_ok=True)
            except Exception as e:
                raise RuntimeError("Can't create directory: " + dir_name) from e
        if not worker_name:
            worker_name = f"{socket.gethostname()}_{os.getpid()}"
        name = f"{worker_name}.{time.time_ns()}.pt.trace.json" + (".gz" if use_gzip else "")
        p.export_chrome_trace(os.path.join(dir_name, name))

    return handler_fn


class _KinetoProfile:
    """Start/stop profiling and the results (``events``, ``key_averages``,
    ``export_chrome_trace``) without a schedule."""

    def __init__(self, *, activities=None, record_shapes=False, profile_memory=False,
                 with_stack=False, with_flops=False, with_modules=False,
                 experimental_config=None, execution_trace_observer=None, acc_events=False,
                 custom_trace_id_callback=None, post_processing_timeout_s=None):
        self.activities = set(activities) if activities else supported_activities()
        self.record_shapes = record_shapes
        self.with_flops = with_flops
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_modules = with_modules
        self.experimental_config = experimental_config
        self.execution_trace_observer = execution_trace_observer
        self.acc_events = acc_events
        self.custom_trace_id_callback = custom_trace_id_callback
        self.profiler = None
        self.use_device = "cuda" if ProfilerActivity.CUDA in self.activities else None

    def start(self):
        self.prepare_trace()
        self.start_trace()

    def stop(self):
        self.stop_trace()

    def prepare_trace(self):
        global _warned_clears
        if self.profiler is not None and not self.acc_events and not _warned_clears:
            _warned_clears = True
            warnings.warn("Warning: Profiler clears events at the end of each cycle. Only events "
                          "from the current cycle will be reported. To keep events across "
                          "cycles, set acc_events=True.", stacklevel=2)
        if self.profiler is None or not self.acc_events:
            self.profiler = prof.profile(
                use_device=self.use_device, use_cpu=ProfilerActivity.CPU in self.activities,
                record_shapes=self.record_shapes, with_flops=self.with_flops,
                profile_memory=self.profile_memory, with_stack=self.with_stack,
                with_modules=self.with_modules, acc_events=self.acc_events)

    def start_trace(self):
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before starting trace")
        self.profiler._start()

    def stop_trace(self):
        if self.profiler is not None and self.profiler._collector is not None \
                and self.profiler._collector._pushed:
            self.profiler._stop()

    def export_chrome_trace(self, path):
        """Writes the last recorded cycle as a Chrome trace (JSON; gzipped for *.gz)."""
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before exporting chrome trace")
        return self.profiler.export_chrome_trace(path)

    def export_stacks(self, path, metric="self_cpu_time_total"):
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before exporting stacks")
        return self.profiler.export_stacks(path, metric)

    def events(self):
        """The recorded events (an ``EventList`` of ``FunctionEvent``s)."""
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before getting events")
        return self.profiler.function_events

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0,
                     group_by_overload_name=False):
        """The events averaged per op name (and input shapes / stack frames when asked);
        ``.table(sort_by=..., row_limit=...)`` prints them as PyTorch does."""
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before getting key averages")
        return self.profiler.key_averages(group_by_input_shape, group_by_stack_n,
                                          group_by_overload_name)


class profile(_KinetoProfile):
    """The profiler as a context manager::

        with tp.profiler.profile(activities=[ProfilerActivity.CPU], record_shapes=True,
                                 schedule=tp.profiler.schedule(wait=1, warmup=1, active=2),
                                 on_trace_ready=tp.profiler.tensorboard_trace_handler("log")) as p:
            for batch in data:
                train_step(batch)
                p.step()
        print(p.key_averages().table(sort_by="cpu_time_total", row_limit=10))

    Without ``schedule`` every op between enter and exit is recorded. With one, ``step()``
    moves to the next step, each step is a ``ProfilerStep#N`` range, and ``on_trace_ready``
    gets the profiler at the end of every active cycle.
    """

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None,
                 record_shapes=False, profile_memory=False, with_stack=False, with_flops=False,
                 with_modules=False, experimental_config=None, execution_trace_observer=None,
                 acc_events=False, use_cuda=None, custom_trace_id_callback=None,
                 post_processing_timeout_s=None):
        acts = set()
        if activities is not None:
            for item in activities:
                if isinstance(item, ProfilerActivity):
                    acts.add(item)
                elif isinstance(item, dict):
                    acts.update(item.keys())
        else:
            acts = supported_activities()
        if use_cuda is not None:
            warnings.warn("`use_cuda` is deprecated, use `activities` argument instead",
                          FutureWarning, stacklevel=2)
            if use_cuda:
                acts.add(ProfilerActivity.CUDA)
            else:
                acts.discard(ProfilerActivity.CUDA)
        if len(acts) == 0:
            raise AssertionError("No valid profiler activities found")
        super().__init__(activities=acts, record_shapes=record_shapes,
                         profile_memory=profile_memory, with_stack=with_stack,
                         with_flops=with_flops, with_modules=with_modules,
                         experimental_config=experimental_config,
                         execution_trace_observer=execution_trace_observer,
                         acc_events=acc_events, custom_trace_id_callback=custom_trace_id_callback)
        if schedule:
            self.schedule = schedule
            self.record_steps = True
        else:
            self.schedule = _default_schedule_fn
            self.record_steps = False
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.step_rec_fn = None
        self.current_action = self.schedule(self.step_num)
        A = ProfilerAction
        prepare, start, stop, ready = (self.prepare_trace, self.start_trace, self.stop_trace,
                                       self._trace_ready)
        save_then = [stop, ready, prepare]

        def bad(msg):
            return partial(warnings.warn, msg)
        self.action_map = {
            (A.NONE, A.NONE): [],
            (A.NONE, A.WARMUP): [prepare],
            (A.NONE, A.RECORD): [prepare, start],
            (A.NONE, A.RECORD_AND_SAVE): [prepare, start],
            (A.WARMUP, A.NONE): [bad("Incorrect schedule: WARMUP followed by NONE"), start, stop],
            (A.WARMUP, A.WARMUP): [],
            (A.WARMUP, A.RECORD): [start],
            (A.WARMUP, A.RECORD_AND_SAVE): [start],
            (A.RECORD, A.NONE): [bad("Incorrect schedule: RECORD followed by NONE"), stop],
            (A.RECORD, A.WARMUP): [bad("Incorrect schedule: RECORD followed by WARMUP"), stop],
            (A.RECORD, A.RECORD): [],
            (A.RECORD, A.RECORD_AND_SAVE): [],
            (A.RECORD_AND_SAVE, A.NONE): [stop, ready],
            (A.RECORD_AND_SAVE, A.WARMUP): save_then,
            (A.RECORD_AND_SAVE, A.RECORD): save_then + [start],
            (A.RECORD_AND_SAVE, A.RECORD_AND_SAVE): save_then + [start],
            (A.WARMUP, None): [start, stop],
            (A.RECORD, None): [stop, ready],
            (A.RECORD_AND_SAVE, None): [stop, ready],
        }

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.stop()

    def start(self):
        self._transit_action(ProfilerAction.NONE, self.current_action)
        if self.record_steps:
            self.step_rec_fn = prof.record_function("ProfilerStep#" + str(self.step_num))
            self.step_rec_fn.__enter__()

    def stop(self):
        if self.record_steps and self.step_rec_fn:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
        self._transit_action(self.current_action, None)

    def step(self):
        """Signals that the next step starts (moves the schedule on)."""
        if self.record_steps and self.step_rec_fn:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
        prev = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit_action(prev, self.current_action)
        if self.record_steps:
            self.step_rec_fn = prof.record_function("ProfilerStep#" + str(self.step_num))
            self.step_rec_fn.__enter__()

    def _trace_ready(self):
        if self.on_trace_ready:
            self.on_trace_ready(self)

    def _transit_action(self, prev_action, current_action):
        for action in self.action_map.get((prev_action, current_action)) or []:
            action()
