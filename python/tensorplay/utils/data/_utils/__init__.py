"""Helpers of the DataLoader: collation, fetching, the worker loop and the worker channel."""
import atexit
import sys
import traceback

MP_STATUS_CHECK_INTERVAL = 5.0
"""Seconds between checks that the other side of a worker channel is still alive."""

python_exit_status = False
"""True once the interpreter is exiting: iterators then leave their (daemonic) workers to
multiprocessing's own exit handler instead of shutting them down."""


def _set_python_exit_flag():
    global python_exit_status
    python_exit_status = True


atexit.register(_set_python_exit_flag)


class KeyErrorMessage(str):
    """A str whose repr is itself, so a re-raised KeyError shows its traceback readably."""

    __slots__ = ()

    def __repr__(self):
        return self


class ExceptionWrapper:
    """An exception and its formatted traceback, to re-raise in another process or thread
    as ``Caught ValueError in DataLoader worker process 0. Original Traceback ...``."""

    def __init__(self, exc_info=None, where="in background"):
        if exc_info is None:
            exc_info = sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        """Raises the wrapped exception type with the original traceback in its message
        (a RuntimeError when that type cannot be built from one message)."""
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = KeyErrorMessage(msg)
        elif getattr(self.exc_type, "message", None):
            raise self.exc_type(message=msg)
        try:
            exception = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        raise exception


from tensorplay.utils.data._utils import collate, fetch, transfer, worker  # noqa: E402,F401
