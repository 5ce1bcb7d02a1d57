"""tensorplay.profiler: PyTorch's ``torch.profiler`` (``profile`` with schedules and
``step()``, ``record_function``, ``tensorboard_trace_handler``). How ops are recorded:
``tensorplay.autograd.profiler`` and docs/architecture.md, "Profiler"."""
from tensorplay.autograd.profiler import record_function
from tensorplay.profiler.profiler import (ProfilerAction, ProfilerActivity, _KinetoProfile,  # noqa: F401
                                          profile, schedule, supported_activities,
                                          tensorboard_trace_handler)

__all__ = ["profile", "schedule", "supported_activities", "tensorboard_trace_handler",
           "ProfilerAction", "ProfilerActivity", "record_function"]
