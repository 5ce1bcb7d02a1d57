"""Key-value stores for rendezvous: TCPStore, FileStore, HashStore, PrefixStore.

PyTorch's Store API: set, get (blocks until the key exists), wait (keys, timeout), add,
compare_set, delete_key, num_keys, check, set_timeout. Values are bytes (str is encoded).
A timeout raises DistStoreError (a RuntimeError) as PyTorch's stores do.

TCPStore: the server runs in a thread of the master's process (is_master=True); clients
speak a small length-prefixed pickle protocol over one socket each.
"""
import fcntl
import os
import pickle
import socket
import struct
import threading
import time
from datetime import timedelta

__all__ = ["Store", "TCPStore", "FileStore", "HashStore", "PrefixStore", "DistStoreError"]

_DEFAULT_TIMEOUT = timedelta(seconds=300)


class DistError(RuntimeError):
    pass


class DistStoreError(DistError):
    pass


class DistBackendError(DistError):
    pass


def _seconds(timeout):
    if timeout is None:
        return None
    if isinstance(timeout, timedelta):
        return timeout.total_seconds()
    return float(timeout)


def _as_bytes(value):
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"store values must be str or bytes, got {type(value).__name__}")


class Store:
    """Base class: subclasses implement the _ops on a dict-like table."""

    def __init__(self, timeout=_DEFAULT_TIMEOUT):
        self._timeout = _seconds(timeout)

    @property
    def timeout(self):
        return timedelta(seconds=self._timeout)

    def set_timeout(self, timeout):
        self._timeout = _seconds(timeout)

    def _timeout_error(self, keys, seconds):
        return DistStoreError(
            f"wait timeout after {int(seconds * 1000)}ms, keys: {', '.join('/' + k for k in keys)}")


# ---- the table every store works on (in memory for HashStore and the TCP server) ----
class _Table:
    def __init__(self):
        self.data = {}
        self.cv = threading.Condition()

    def do(self, op, args, timeout):
        with self.cv:
            if op == "set":
                key, value = args
                self.data[key] = value
                self.cv.notify_all()
                return None
            if op == "get" or op == "wait":
                keys = args
                end = None if timeout is None else time.monotonic() + timeout
                while not all(k in self.data for k in keys):
                    left = None if end is None else end - time.monotonic()
                    if left is not None and left <= 0:
                        return ("timeout", keys)
                    self.cv.wait(left if left is None else min(left, 1.0))
                return self.data[keys[0]] if op == "get" else None
            if op == "add":
                key, amount = args
                value = int(self.data.get(key, b"0")) + amount
                self.data[key] = str(value).encode()
                self.cv.notify_all()
                return value
            if op == "compare_set":
                key, expected, desired = args
                cur = self.data.get(key)
                if (cur is None and expected == b"") or cur == expected:
                    self.data[key] = desired
                    self.cv.notify_all()
                    return desired
                return expected if cur is None else cur
            if op == "check":
                return all(k in self.data for k in args)
            if op == "delete_key":
                return self.data.pop(args, None) is not None
            if op == "num_keys":
                return len(self.data)
            raise ValueError(f"unknown store op {op}")


class _TableStore(Store):
    def _do(self, op, args, timeout=None):
        raise NotImplementedError

    def set(self, key, value):
        self._do("set", (key, _as_bytes(value)))

    def get(self, key):
        r = self._do("get", [key], self._timeout)
        if isinstance(r, tuple):
            raise self._timeout_error(r[1], self._timeout)
        return r

    def wait(self, keys, timeout=None):
        t = self._timeout if timeout is None else _seconds(timeout)
        r = self._do("wait", list(keys), t)
        if isinstance(r, tuple):
            raise self._timeout_error(r[1], t)

    def add(self, key, amount):
        return self._do("add", (key, int(amount)))

    def compare_set(self, key, expected_value, desired_value):
        return self._do("compare_set", (key, _as_bytes(expected_value), _as_bytes(desired_value)))

    def check(self, keys):
        return self._do("check", list(keys))

    def delete_key(self, key):
        return self._do("delete_key", key)

    def num_keys(self):
        return self._do("num_keys", None)


class HashStore(_TableStore):
    """An in-process store (threads of one process)."""

    def __init__(self):
        super().__init__()
        self._table = _Table()

    def _do(self, op, args, timeout=None):
        return self._table.do(op, args, timeout)


def _send_msg(sock, obj):
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    sock.sendall(struct.pack("<Q", len(data)) + data)


def _recv_exact(sock, n):
    chunks = []
    while n:
        c = sock.recv(min(n, 1 << 20))
        if not c:
            raise ConnectionError("the store's peer closed the connection")
        chunks.append(c)
        n -= len(c)
    return b"".join(chunks)


def _recv_msg(sock):
    (n,) = struct.unpack("<Q", _recv_exact(sock, 8))
    return pickle.loads(_recv_exact(sock, n))


class _TCPServer:
    def __init__(self, host, port):
        self.table = _Table()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.sock.bind(("" if host in ("", "0.0.0.0") else host, port))
        except OSError as e:
            self.sock.close()
            raise DistStoreError(
                f"The server socket has failed to listen on any local network address. "
                f"port: {port}, useIpv6: False, code: {e.errno}, name: {e.strerror}") from e
        self.sock.listen(1024)
        self.port = self.sock.getsockname()[1]
        self.closed = False
        t = threading.Thread(target=self._accept, daemon=True, name="tp-TCPStore-server")
        t.start()

    def _accept(self):
        while not self.closed:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        try:
            while True:
                op, args, timeout = _recv_msg(conn)
                _send_msg(conn, self.table.do(op, args, timeout))
        except (ConnectionError, OSError, EOFError):
            pass
        finally:
            conn.close()

    def close(self):
        self.closed = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


class TCPStore(_TableStore):
    """TCPStore(host_name, port, world_size=None, is_master=False, timeout=300s,
    wait_for_workers=True, multi_tenant=False). port=0 on the master picks a free port
    (read it back from .port)."""

    def __init__(self, host_name, port, world_size=None, is_master=False,
                 timeout=_DEFAULT_TIMEOUT, wait_for_workers=True, multi_tenant=False,
                 master_listen_fd=None, use_libuv=True):
        super().__init__(timeout)
        if world_size is not None and world_size < 1:
            raise ValueError(f"world_size must be positive, got {world_size}")
        self.host = host_name
        self._server = _TCPServer(host_name, port) if is_master else None
        self.port = self._server.port if is_master else port
        self._lock = threading.Lock()
        self._sock = self._connect()
        self.world_size = world_size
        if world_size is not None:
            self.add("__tp_store_workers", 1)
            if is_master and wait_for_workers:
                end = time.monotonic() + self._timeout
                while int(self.get("__tp_store_workers")) < world_size:
                    if time.monotonic() > end:
                        raise DistStoreError(
                            f"Timed out after {int(self._timeout)} seconds waiting for clients. "
                            f"{int(self.get('__tp_store_workers'))}/{world_size} clients joined.")
                    time.sleep(0.01)

    def _connect(self):
        end = time.monotonic() + self._timeout
        host = "127.0.0.1" if self.host in ("", "0.0.0.0") else self.host
        while True:
            try:
                s = socket.create_connection((host, self.port), timeout=self._timeout)
                s.settimeout(None)
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                return s
            except OSError as e:
                if time.monotonic() > end:
                    raise DistStoreError(
                        f"The client socket has timed out after {self._timeout}s while trying to "
                        f"connect to ({host}, {self.port}).") from e
                time.sleep(0.05)

    def _do(self, op, args, timeout=None):
        with self._lock:
            try:
                _send_msg(self._sock, (op, args, timeout))
                return _recv_msg(self._sock)
            except (ConnectionError, OSError) as e:
                raise DistStoreError(f"TCPStore ({self.host}:{self.port}) is unreachable: {e}") from e

    @property
    def libuvBackend(self):
        return False

    def __del__(self):
        try:
            self._sock.close()
            if self._server is not None:
                self._server.close()
        except Exception:
            pass


class FileStore(_TableStore):
    """FileStore(file_name, world_size=-1): a table kept in one file, updated under flock."""

    def __init__(self, file_name, world_size=-1):
        super().__init__()
        self.path = file_name
        self.world_size = world_size
        open(self.path, "ab").close()

    def _load(self, f):
        f.seek(0)
        raw = f.read()
        return pickle.loads(raw) if raw else {}

    def _do(self, op, args, timeout=None):
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            with open(self.path, "r+b") as f:
                fcntl.flock(f, fcntl.LOCK_EX)
                try:
                    t = _Table()
                    t.data = self._load(f)
                    before = dict(t.data)
                    if op in ("get", "wait"):
                        r = t.do("check", args, None)
                        if r:
                            return t.data[args[0]] if op == "get" else None
                    else:
                        r = t.do(op, args, None)
                        if t.data != before:
                            f.seek(0)
                            f.truncate()
                            f.write(pickle.dumps(t.data))
                            f.flush()
                        return r
                finally:
                    fcntl.flock(f, fcntl.LOCK_UN)
            if end is not None and time.monotonic() > end:
                return ("timeout", args)
            time.sleep(0.005)


class PrefixStore(Store):
    """PrefixStore(prefix, store): every key is prefix + '/' + key."""

    def __init__(self, prefix, store):
        super().__init__(store.timeout)
        self.prefix = prefix
        self.underlying_store = store

    def _k(self, key):
        return f"{self.prefix}/{key}"

    def set(self, key, value):
        self.underlying_store.set(self._k(key), value)

    def get(self, key):
        return self.underlying_store.get(self._k(key))

    def wait(self, keys, timeout=None):
        self.underlying_store.wait([self._k(k) for k in keys], timeout)

    def add(self, key, amount):
        return self.underlying_store.add(self._k(key), amount)

    def compare_set(self, key, expected_value, desired_value):
        return self.underlying_store.compare_set(self._k(key), expected_value, desired_value)

    def check(self, keys):
        return self.underlying_store.check([self._k(k) for k in keys])

    def delete_key(self, key):
        return self.underlying_store.delete_key(self._k(key))

    def num_keys(self):
        return self.underlying_store.num_keys()

    @property
    def timeout(self):
        return self.underlying_store.timeout

    def set_timeout(self, timeout):
        self.underlying_store.set_timeout(timeout)
