"""DataLoader: batches from a dataset through a sampler, in the main process or in worker
processes (Note [Worker pipes] in _utils/transfer.py), with PyTorch's options and order."""
import itertools
import math
import multiprocessing
import multiprocessing.connection
import os
import pickle
import select
import time
import warnings
from typing import Generic, TypeVar

import tensorplay as tp
from tensorplay.utils.data import _utils
from tensorplay.utils.data._utils import ExceptionWrapper, transfer, worker
from tensorplay.utils.data._utils.collate import default_collate, default_convert
from tensorplay.utils.data._utils.fetch import _IterableDatasetFetcher, _MapDatasetFetcher
from tensorplay.utils.data.dataset import IterableDataset
from tensorplay.utils.data.sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info"]

get_worker_info = worker.get_worker_info

_T_co = TypeVar("_T_co", covariant=True)


class _DatasetKind:
    Map = 0
    Iterable = 1

    @staticmethod
    def create_fetcher(kind, dataset, auto_collation, collate_fn, drop_last):
        fetcher = _MapDatasetFetcher if kind == _DatasetKind.Map else _IterableDatasetFetcher
        return fetcher(dataset, auto_collation, collate_fn, drop_last)


class _InfiniteConstantSampler(Sampler):
    """None forever: the sampler of an IterableDataset (the dataset decides when to stop)."""

    def __iter__(self):
        while True:
            yield None


def _cpu_count():
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


class DataLoader(Generic[_T_co]):
    """Iterates over ``dataset`` in batches, optionally shuffled and loaded by worker
    processes. Arguments and their defaults are PyTorch's:

    - ``batch_size`` (1; None turns batching off), ``shuffle``, ``sampler`` (an iterable of
      indices), ``batch_sampler`` (of index lists; excludes batch_size, shuffle, sampler
      and drop_last), ``drop_last`` (drop a short last batch)
    - ``collate_fn`` (default_collate when batching, else default_convert)
    - ``num_workers`` (0: load in this process), ``worker_init_fn(worker_id)``,
      ``multiprocessing_context`` (a start method name or context), ``timeout`` (seconds
      to wait for a worker's batch before a RuntimeError; 0 waits forever),
      ``prefetch_factor`` (batches in flight per worker, default 2), ``persistent_workers``
      (keep workers between epochs), ``in_order`` (False: batches as workers finish)
    - ``generator``: draws the workers' base seed and, with ``shuffle``, the order
    - ``pin_memory`` / ``pin_memory_device``: accepted; without an accelerator nothing is
      pinned (a warning says so, as in PyTorch)

    A seeded ``generator`` gives PyTorch's order and leaves the same random state::

        loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True,
                            generator=tp.Generator().manual_seed(0), num_workers=2)
        for xb, yb in loader: ...
    """

    __initialized = False

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; "
                             "use num_workers=0 to disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing."
                             "let num_workers > 0 to enable multiprocessing, otherwise set "
                             "prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order

        if isinstance(dataset, IterableDataset):
            self._dataset_kind = _DatasetKind.Iterable
            if shuffle not in {False, None}:
                raise ValueError("DataLoader with IterableDataset: expected unspecified shuffle "
                                 f"option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified sampler "
                                 f"option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
            self._dataset_kind = _DatasetKind.Map

        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")

        if sampler is None:
            if self._dataset_kind == _DatasetKind.Iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self.__initialized = True
        self._IterableDataset_len_called = None
        self._iterator = None
        self.check_worker_number_rationality()

    def _get_iterator(self):
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        self.check_worker_number_rationality()
        return _MultiProcessingDataLoaderIter(self)

    @property
    def multiprocessing_context(self):
        """The multiprocessing context workers start from (None: the default one)."""
        return self.__multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, context):
        if context is not None:
            if self.num_workers <= 0:
                raise ValueError("multiprocessing_context can only be used with multi-process "
                                 "loading (num_workers > 0), but got "
                                 f"num_workers={self.num_workers}")
            if isinstance(context, str):
                methods = multiprocessing.get_all_start_methods()
                if context not in methods:
                    raise ValueError("multiprocessing_context option should specify a valid "
                                     f"start method in {methods!r}, but got "
                                     f"multiprocessing_context={context!r}")
                context = multiprocessing.get_context(context)
            if not isinstance(context, multiprocessing.context.BaseContext):
                raise TypeError("multiprocessing_context option should be a valid context "
                                "object or a string specifying the start method, but got "
                                f"multiprocessing_context={context}")
        self.__multiprocessing_context = context

    def __setattr__(self, attr, val):
        if self.__initialized and attr in ("batch_size", "batch_sampler", "sampler", "drop_last",
                                           "dataset", "persistent_workers"):
            raise ValueError(f"{attr} attribute should not be set after "
                             f"{self.__class__.__name__} is initialized")
        super().__setattr__(attr, val)

    def __iter__(self):
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __len__(self):
        """Batches per epoch: the (batch) sampler's length, or for an IterableDataset
        ``len(dataset)`` divided by the batch size (rounded as drop_last says)."""
        if self._dataset_kind != _DatasetKind.Iterable:
            return len(self._index_sampler)
        length = self._IterableDataset_len_called = len(self.dataset)
        if self.batch_size is not None:
            length = length // self.batch_size if self.drop_last else \
                math.ceil(length / self.batch_size)
        return length

    def check_worker_number_rationality(self):
        """Warns when more workers are asked for than CPUs are available to this process."""
        if not self.num_workers:
            return
        suggest = _cpu_count()
        if suggest is not None and self.num_workers <= suggest:
            return
        if suggest is None:
            hint = ("DataLoader is not able to compute a suggested max number of worker in "
                    "current system.")
        else:
            cpuset = "" if hasattr(os, "sched_getaffinity") else \
                " (`cpuset` is not taken into account)"
            hint = (f"Our suggested max number of worker in current system is {suggest}{cpuset}"
                    ", which is smaller than what this DataLoader is going to create.")
        warnings.warn(f"This DataLoader will create {self.num_workers} worker processes in "
                      f"total. {hint} Please be aware that excessive worker creation might get "
                      "DataLoader running slow or even freeze, lower the worker number to avoid "
                      "potential slowness/freeze if necessary.", stacklevel=2)


class _BaseDataLoaderIter:
    def __init__(self, loader):
        self._dataset = loader.dataset
        self._dataset_kind = loader._dataset_kind
        self._IterableDataset_len_called = loader._IterableDataset_len_called
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        if loader.pin_memory and loader.pin_memory_device:
            warnings.warn("pin_memory_device is deprecated, the current accelerator will be used "
                          f"as the device,ignore pin_memory_device='{loader.pin_memory_device}'.",
                          stacklevel=2)
        if loader.pin_memory:
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, "
                          "then device pinned memory won't be used.", stacklevel=2)
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._sampler_iter = iter(self._index_sampler)
        self._base_seed = int(tp.empty((), dtype=tp.int64).random_(generator=loader.generator)
                              .item())
        self._persistent_workers = loader.persistent_workers
        self._num_yielded = 0

    def __iter__(self):
        return self

    def _reset(self, loader, first_iter=False):
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._IterableDataset_len_called = loader._IterableDataset_len_called

    def _next_index(self):
        return next(self._sampler_iter)

    def __next__(self):
        data = self._next_data()
        self._num_yielded += 1
        if (self._dataset_kind == _DatasetKind.Iterable
                and self._IterableDataset_len_called is not None
                and self._num_yielded > self._IterableDataset_len_called):
            msg = (f"Length of IterableDataset {self._dataset} was reported to be "
                   f"{self._IterableDataset_len_called}(when accessing len(dataloader)), but "
                   f"{self._num_yielded} samples have been fetched. ")
            if self._num_workers > 0:
                msg += ("For multiprocessing data-loading, this could be caused by not properly "
                        "configuring the IterableDataset replica at each worker. Please see "
                        "https://pytorch.org/docs/stable/data.html#torch.utils.data."
                        "IterableDataset for examples.")
            warnings.warn(msg, stacklevel=2)
        return data

    def __len__(self):
        return len(self._index_sampler)

    def __getstate__(self):
        raise NotImplementedError("{} cannot be pickled", self.__class__.__name__)


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    def __init__(self, loader):
        super().__init__(loader)
        if self._timeout != 0:
            raise AssertionError("_SingleProcessDataLoaderIter requires timeout == 0")
        self._dataset_fetcher = _DatasetKind.create_fetcher(
            self._dataset_kind, self._dataset, self._auto_collation, self._collate_fn,
            self._drop_last)

    def _next_data(self):
        return self._dataset_fetcher.fetch(self._next_index())


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    """Worker processes fetch batches; each task (send index, indices) goes to the next
    active worker in turn, at most ``prefetch_factor`` per worker in flight, and results
    come back in send order (or as they finish with ``in_order=False``)."""

    def __init__(self, loader):
        super().__init__(loader)
        self._prefetch_factor = loader.prefetch_factor
        self._in_order = loader.in_order
        self._timeout_ms = math.ceil(self._timeout * 1000) if self._timeout > 0 else None
        self._shutdown = False
        self._workers, self._index_conns, self._receivers = [], [], []
        context = loader.multiprocessing_context or multiprocessing
        for i in range(self._num_workers):
            index_reader, index_writer = context.Pipe(duplex=False)
            data_reader, data_writer = context.Pipe(duplex=False)
            transfer.enlarge_pipe(index_writer.fileno())
            transfer.enlarge_pipe(data_writer.fileno())
            w = context.Process(target=worker._worker_loop, args=(
                self._dataset_kind, self._dataset, index_reader, data_writer,
                self._auto_collation, self._collate_fn, self._drop_last, self._base_seed,
                loader.worker_init_fn, i, self._num_workers))
            w.daemon = True
            try:
                w.start()
            except (TypeError, AttributeError, pickle.PicklingError):
                warnings.warn("Got pickle error when attempting to start a worker Process. This "
                              "might be because the worker Process arguments are not picklable. "
                              "Python 3.14+ changed the multiprocessing start method in non-Mac "
                              "POSIX platforms to 'forkserver', which requires the worker "
                              "Process arguments to be picklable. You can also try "
                              "multiprocessing.set_start_method('fork').", stacklevel=2)
                raise
            finally:
                index_reader.close()
                data_writer.close()
            self._workers.append(w)
            self._index_conns.append(index_writer)
            self._receivers.append(transfer.Receiver(data_reader, w.sentinel))
        self._reset(loader, first_iter=True)

    def _reset(self, loader, first_iter=False):
        super()._reset(loader, first_iter)
        self._send_idx = 0
        self._rcvd_idx = 0
        self._task_info = {}  # send index -> worker id, for tasks not yet returned
        self._workers_status = [True] * self._num_workers
        self._workers_num_tasks = [0] * self._num_workers
        self._worker_queue_idx_cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:
            for conn in self._index_conns:
                conn.send(worker._ResumeIteration())
            for worker_id in range(self._num_workers):  # drop last epoch's leftovers
                while not isinstance(self._receive(worker_id)[0], worker._ResumeIteration):
                    pass
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _fail(self, dead_worker=None):
        """Raises the RuntimeError for workers that exited (including ``dead_worker``)."""
        failed = [i for i, w in enumerate(self._workers)
                  if i == dead_worker or (self._workers_status[i] and not w.is_alive())]
        pids = ", ".join(str(self._workers[i].pid) for i in failed)
        self._shutdown_workers()
        raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly")

    def _timed_out(self):
        raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")

    def _receive(self, worker_id):
        """The next message of ``worker_id``, within the timeout."""
        receiver = self._receivers[worker_id]
        try:
            if not receiver.wait(self._timeout_ms):
                self._timed_out()
            return receiver.receive()
        except transfer.WorkerDied:
            self._fail(worker_id)

    def _any_ready_worker(self):
        """A worker with tasks in flight whose next message can be read (in_order=False)."""
        poller = select.poll()
        for i, receiver in enumerate(self._receivers):
            if self._workers_status[i] and self._workers_num_tasks[i]:
                poller.register(receiver.fd, select.POLLIN)
                poller.register(self._workers[i].sentinel, select.POLLIN)
        events = poller.poll(self._timeout_ms)
        if not events:
            self._timed_out()
        ready = {fd for fd, _ in events}
        for i, receiver in enumerate(self._receivers):
            if receiver.fd in ready:
                return i
        self._fail(next(i for i, w in enumerate(self._workers) if w.sentinel in ready))

    def _next_data(self):
        while True:
            # skip tasks already returned and those of workers whose stream has ended
            while self._rcvd_idx < self._send_idx:
                worker_id = self._task_info.get(self._rcvd_idx)
                if worker_id is not None and self._workers_status[worker_id]:
                    break
                self._task_info.pop(self._rcvd_idx, None)
                self._rcvd_idx += 1
            else:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration
            worker_id = self._task_info[self._rcvd_idx] if self._in_order \
                else self._any_ready_worker()
            idx, data = self._receive(worker_id)
            if isinstance(data, worker._IterableDatasetStopIteration):
                if self._persistent_workers:
                    self._workers_status[data.worker_id] = False
                else:
                    self._mark_worker_as_unavailable(data.worker_id)
                self._try_put_index()
                continue
            del self._task_info[idx]
            if idx == self._rcvd_idx:
                self._rcvd_idx += 1
            return self._process_data(data, worker_id)

    def _try_put_index(self):
        max_tasks = self._prefetch_factor * self._num_workers
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):  # the next active worker, if any
            worker_id = next(self._worker_queue_idx_cycle)
            if self._workers_status[worker_id] and (
                    self._in_order or
                    self._workers_num_tasks[worker_id] < max_tasks // sum(self._workers_status)):
                break
        else:
            return
        try:
            self._index_conns[worker_id].send((self._send_idx, index))
        except (BrokenPipeError, ConnectionResetError):
            pass  # the worker is gone: reading its result reports it
        self._task_info[self._send_idx] = worker_id
        self._workers_num_tasks[worker_id] += 1
        self._send_idx += 1

    def _process_data(self, data, worker_id):
        self._workers_num_tasks[worker_id] -= 1
        self._try_put_index()
        if isinstance(data, ExceptionWrapper):
            data.reraise()
        return data

    def _tell_to_exit(self, worker_id):
        try:
            self._index_conns[worker_id].send(None)
        except OSError:  # already gone
            pass

    def _mark_worker_as_unavailable(self, worker_id):
        """Tells the worker to exit (it reads None) and stops sending it tasks."""
        self._tell_to_exit(worker_id)
        self._workers_status[worker_id] = False

    def _shutdown_workers(self):
        """Stops the workers: each is told to exit while its pipe is drained (so none stays
        blocked writing), and any still alive after MP_STATUS_CHECK_INTERVAL is
        terminated. Safe to call more than once."""
        if _utils.python_exit_status or self._shutdown:
            return
        self._shutdown = True
        try:
            for worker_id in range(len(self._workers)):
                self._tell_to_exit(worker_id)
            deadline = time.monotonic() + _utils.MP_STATUS_CHECK_INTERVAL
            pending = list(range(len(self._workers)))
            while True:
                pending = [i for i in pending if self._receivers[i].discard_available()]
                remaining = deadline - time.monotonic()
                if not pending or remaining <= 0:
                    break
                multiprocessing.connection.wait([self._receivers[i].conn for i in pending] +
                                                [self._workers[i].sentinel for i in pending],
                                                remaining)
        finally:
            for w in self._workers:
                if w.is_alive():
                    w.terminate()
                w.join(_utils.MP_STATUS_CHECK_INTERVAL)
            for conn in self._index_conns + [r.conn for r in self._receivers]:
                conn.close()

    def __del__(self):
        if hasattr(self, "_shutdown"):
            self._shutdown_workers()
