"""The worker process side of the DataLoader: seeding, get_worker_info, and the loop that
fetches the batches the main process asks for."""
import collections
import os
import random
import select
from dataclasses import dataclass

import numpy as np

import tensorplay as tp
from tensorplay.utils.data._utils import MP_STATUS_CHECK_INTERVAL, ExceptionWrapper, transfer

_worker_info = None


@dataclass(frozen=True, slots=True)
class WorkerInfo:
    """What a DataLoader worker knows about itself (``get_worker_info()``).

    Attributes:
        id: this worker's index, in ``[0, num_workers)``
        num_workers: how many workers the loader runs
        seed: the seed of this worker's generators (``base_seed + id``)
        dataset: this process's copy of the dataset
        rng, worker_method: None and "multiprocessing" (PyTorch's fields for thread
            workers, which TensorPlay does not have)
    """

    id: int
    num_workers: int
    seed: int
    dataset: object
    rng: object = None
    worker_method: str = "multiprocessing"


def get_worker_info():
    """The WorkerInfo of the DataLoader worker this runs in; None in the main process.

    Useful in an IterableDataset's ``__iter__`` or a ``worker_init_fn`` to give each
    worker its own share of the data or its own seed for other libraries.
    """
    return _worker_info


@dataclass(frozen=True)
class _IterableDatasetStopIteration:
    """A worker's reply once its copy of an IterableDataset is exhausted."""

    worker_id: int


class _ResumeIteration:
    """Tells a persistent worker that a new epoch starts (it answers with this object)."""


def _generate_state(base_seed, worker_id):
    """The four 32-bit words NumPy's global generator is seeded with in worker
    ``worker_id``: NumPy's SeedSequence hashing of (worker_id, base_seed) as PyTorch
    computes it, so workers get PyTorch's NumPy streams."""
    mask = 0xFFFFFFFF
    mult_a, mult_b = 0x931E8875, 0x58F38DED
    hash_a = [0x43B0D7E5]

    def hashmix(value):
        value = (value ^ hash_a[0]) & mask
        hash_a[0] = (hash_a[0] * mult_a) & mask
        value = (value * hash_a[0]) & mask
        return (value ^ (value >> 16)) & mask

    def mix(x, y):
        result = ((0xCA01F9DD * x) - (0x4973F715 * y)) & mask
        return (result ^ (result >> 16)) & mask

    pool = [hashmix(v) for v in (worker_id, base_seed & mask, base_seed >> 32, 0)]
    for src in range(4):
        for dst in range(4):
            if src != dst:
                pool[dst] = mix(pool[dst], hashmix(pool[src]))
    hash_b = 0x8B51F9DD
    state = []
    for value in pool:
        value = (value ^ hash_b) & mask
        hash_b = (hash_b * mult_b) & mask
        value = (value * hash_b) & mask
        state.append((value ^ (value >> 16)) & mask)
    return state


class _Tasks:
    """The tasks the main process sends a worker, read ahead into a backlog while the
    worker waits to write a result (Note [Worker pipes]). None means: exit (the main
    process said so, or it is gone)."""

    def __init__(self, index_conn, data_fd):
        self.conn = index_conn
        self.parent = os.getppid()
        self.backlog = collections.deque()
        self.poller = select.poll()
        self.poller.register(index_conn.fileno(), select.POLLIN)
        self.poller.register(data_fd, select.POLLOUT)

    def _main_alive(self):
        return os.getppid() == self.parent

    def next(self):
        """The next task, waiting for it."""
        while not self.backlog:
            if self.conn.poll(MP_STATUS_CHECK_INTERVAL):
                return self.conn.recv()
            if not self._main_alive():
                return None
        return self.backlog.popleft()

    def wait_writable(self):
        """Waits until the data pipe has room, reading any task that arrives meanwhile;
        EOFError (as from a closed task pipe) once the main process is gone."""
        events = self.poller.poll(MP_STATUS_CHECK_INTERVAL * 1000)
        if not events and not self._main_alive():
            raise EOFError
        if any(fd == self.conn.fileno() for fd, _ in events):
            self.backlog.append(self.conn.recv())


def _worker_loop(dataset_kind, dataset, index_conn, data_conn, auto_collation, collate_fn,
                 drop_last, base_seed, init_fn, worker_id, num_workers):
    """Body of worker ``worker_id``: seeds Python, TensorPlay and NumPy from ``base_seed``,
    runs ``init_fn``, then answers each (task index, indices) from ``index_conn`` with
    (task index, batch or ExceptionWrapper) on ``data_conn`` until it reads None, its
    index pipe closes or the main process disappears."""
    from tensorplay.utils.data.dataloader import _DatasetKind
    global _worker_info
    try:
        tp.set_num_threads(1)  # also required: OpenMP's thread pool does not survive fork
        seed = base_seed + worker_id
        random.seed(seed)
        tp.manual_seed(seed)
        np.random.seed(_generate_state(base_seed, worker_id))
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed,
                                  dataset=dataset)
        where = f"in DataLoader worker process {worker_id}"
        init_exception = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = _DatasetKind.create_fetcher(dataset_kind, dataset, auto_collation,
                                                  collate_fn, drop_last)
        except Exception:
            init_exception = ExceptionWrapper(where=where)
        fd = data_conn.fileno()
        os.set_blocking(fd, False)
        tasks = _Tasks(index_conn, fd)

        def send(message):
            transfer.send(fd, message, tasks.wait_writable)
        iteration_end = False
        while True:
            r = tasks.next()
            if isinstance(r, _ResumeIteration):
                send((r, None))
                iteration_end = False
                fetcher = _DatasetKind.create_fetcher(dataset_kind, dataset, auto_collation,
                                                      collate_fn, drop_last)
                continue
            if r is None:
                break
            if iteration_end:
                continue
            idx, index = r
            if init_exception is not None:
                data, init_exception = init_exception, None
            else:
                try:
                    data = fetcher.fetch(index)
                except StopIteration:
                    if dataset_kind != _DatasetKind.Iterable:
                        data = ExceptionWrapper(where=where)
                    else:
                        data = _IterableDatasetStopIteration(worker_id)
                        iteration_end = True
                except Exception:
                    data = ExceptionWrapper(where=where)
            try:
                send((idx, data))
            except (BrokenPipeError, ConnectionResetError, EOFError):
                break
            except Exception:  # the batch cannot be pickled
                send((idx, ExceptionWrapper(where=where)))
            del data, index, r
    except (KeyboardInterrupt, EOFError, BrokenPipeError):
        pass
