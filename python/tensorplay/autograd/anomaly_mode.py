"""Anomaly detection: forward traces on nodes, NaN checks in backward."""
import traceback

from tensorplay import _C

__all__ = ['detect_anomaly', 'set_detect_anomaly', 'is_anomaly_enabled', 'is_anomaly_check_nan_enabled']


def _forward_trace():
    return ''.join(traceback.format_stack()[:-1])


_C._set_forward_trace_provider(_forward_trace)
is_anomaly_enabled = _C._is_anomaly_enabled
# whether anomaly mode checks backward results for NaN (torch.is_anomaly_check_nan_enabled;
# True unless the innermost detect_anomaly / set_detect_anomaly said check_nan=False)
is_anomaly_check_nan_enabled = _C._is_anomaly_check_nan_enabled


class detect_anomaly:
    """Context manager turning anomaly detection on for its block."""

    def __init__(self, check_nan=True):
        self.check_nan = check_nan

    def __enter__(self):
        self.prev = _C._is_anomaly_enabled()
        self.prev_check_nan = _C._is_anomaly_check_nan_enabled()
        _C._set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *exc):
        _C._set_anomaly_enabled(self.prev, self.prev_check_nan)


class set_detect_anomaly:
    """Turns anomaly detection on or off (at once, or for a block)."""

    def __init__(self, mode, check_nan=True):
        self.prev = _C._is_anomaly_enabled()
        self.prev_check_nan = _C._is_anomaly_check_nan_enabled()
        _C._set_anomaly_enabled(mode, check_nan)

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _C._set_anomaly_enabled(self.prev, self.prev_check_nan)
