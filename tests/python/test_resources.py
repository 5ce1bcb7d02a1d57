"""Resource exhaustion (issue 33): an allocation larger than memory raises PyTorch's
RuntimeError and the process goes on; DataLoader workers that crash or hang make the main
process raise (within the timeout), never hang it."""
import os
import time

import pytest

import tensorplay as tp
from tensorplay.utils.data import DataLoader, Dataset


def test_allocation_larger_than_memory_raises_and_the_process_goes_on():
    for size, dtype in ((10 ** 13, tp.float32), (2 ** 62, tp.uint8)):
        with pytest.raises(RuntimeError, match='DefaultCPUAllocator: .*you tried to allocate'):
            tp.empty(size, dtype=dtype)
    assert tp.ones(3).sum().item() == 3.0


class _Crashes(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 3:
            os._exit(1)  # the worker process dies (a segfault in user code looks the same)
        return tp.tensor([i])


class _Hangs(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 3:
            time.sleep(60)
        return tp.tensor([i])


def test_a_crashing_worker_raises_in_the_main_process():
    t0 = time.time()
    with pytest.raises(RuntimeError, match='DataLoader worker .* exited unexpectedly'):
        list(DataLoader(_Crashes(), num_workers=2, batch_size=2))
    assert time.time() - t0 < 30


def test_a_hanging_worker_raises_after_the_timeout():
    t0 = time.time()
    with pytest.raises(RuntimeError, match='DataLoader timed out after 2 seconds'):
        list(DataLoader(_Hangs(), num_workers=2, batch_size=2, timeout=2))
    assert time.time() - t0 < 20
