"""``SummaryWriter``: PyTorch's ``torch.utils.tensorboard.SummaryWriter``, writing TensorBoard
event files itself (TFRecord-framed Event protocol buffers, see _record.py and _proto.py):
no TensorFlow, and no tensorboard package needed to write."""
import atexit
import itertools
import os
import socket
import threading
import time
import weakref
from datetime import datetime

from tensorplay.utils.tensorboard import _proto as pb
from tensorplay.utils.tensorboard import summary as S
from tensorplay.utils.tensorboard._record import encode_record

__all__ = ["FileWriter", "SummaryWriter"]

_uid = itertools.count()
_open_writers = weakref.WeakSet()


@atexit.register
def _close_all():
    for w in list(_open_writers):
        w.close()


def _event(wall_time=None, step=None, file_version=None, graph_def=None, summary=None,
           session_log=None):
    return (pb.double(1, time.time() if wall_time is None else float(wall_time))
            + pb.uint(2, step) + pb.blob(3, file_version) + pb.blob(4, graph_def)
            + pb.blob(5, summary) + pb.blob(7, session_log))


class EventFileWriter:
    """Appends events to ``events.out.tfevents.<time>.<host>.<pid>.<n><suffix>`` in
    ``logdir``: queued (at most ``max_queue``), written by ``flush()``, when the queue is
    full, and every ``flush_secs`` by a background thread."""

    def __init__(self, logdir, max_queue=10, flush_secs=120, filename_suffix=""):
        self._logdir = str(logdir)
        os.makedirs(self._logdir, exist_ok=True)
        name = (f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}."
                f"{os.getpid()}.{next(_uid)}{filename_suffix}")
        self._path = os.path.join(self._logdir, name)
        self._file = open(self._path, "wb")
        self._queue = []
        self._max_queue = max_queue
        self._lock = threading.Lock()
        self._closed = False
        self.add_event(_event(file_version="brain.Event:2"))
        self.flush()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(flush_secs,), daemon=True)
        self._thread.start()

    def _run(self, flush_secs):
        while not self._stop.wait(flush_secs):
            self.flush()

    def get_logdir(self):
        return self._logdir

    def add_event(self, event):
        with self._lock:
            if self._closed:
                return
            self._queue.append(encode_record(event))
            full = len(self._queue) >= self._max_queue
        if full:
            self.flush()

    def flush(self):
        with self._lock:
            if self._closed:
                return
            if self._queue:
                self._file.write(b"".join(self._queue))
                self._queue.clear()
            self._file.flush()

    def close(self):
        self.flush()
        with self._lock:
            if not self._closed:
                self._closed = True
                self._file.close()
        self._stop.set()

    def reopen(self):
        with self._lock:
            if self._closed:
                self._file = open(self._path, "ab")
                self._closed = False


class FileWriter:
    """Writes Summary and graph events to one event file in ``log_dir``."""

    def __init__(self, log_dir, max_queue=10, flush_secs=120, filename_suffix=""):
        self.event_writer = EventFileWriter(str(log_dir), max_queue, flush_secs, filename_suffix)
        _open_writers.add(self)

    def get_logdir(self):
        return self.event_writer.get_logdir()

    def add_event(self, event, step=None, walltime=None):
        self.event_writer.add_event(event)

    def add_summary(self, summary, global_step=None, walltime=None):
        self.event_writer.add_event(_event(walltime, global_step, summary=summary))

    def add_graph(self, graph_def, walltime=None):
        self.event_writer.add_event(_event(walltime, graph_def=graph_def))

    def flush(self):
        self.event_writer.flush()

    def close(self):
        self.event_writer.close()

    def reopen(self):
        self.event_writer.reopen()


def _step(global_step):
    if global_step is None:
        return None
    if hasattr(global_step, "item"):
        global_step = global_step.item()
    return int(global_step)


class SummaryWriter:
    """Writes TensorBoard event files into ``log_dir`` (default
    ``runs/<Mon DD_HH-MM-SS>_<host><comment>``)::

        writer = tp.utils.tensorboard.SummaryWriter("runs/exp1")
        for step in range(100):
            writer.add_scalar("loss/train", loss, step)
        writer.add_graph(model, x)
        writer.close()

    ``purge_step``: TensorBoard drops what an earlier run wrote at steps >= it (resuming
    after a crash). Events are queued (``max_queue``) and written at least every
    ``flush_secs`` seconds.
    """

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10,
                 flush_secs=120, filename_suffix=""):
        if not log_dir:
            now = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", now + "_" + socket.gethostname() + comment)
        self.log_dir = str(log_dir)
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self.file_writer = self.all_writers = None
        self._get_file_writer()
        self.default_bins = S.default_bins()

    def _get_file_writer(self):
        if self.all_writers is None or self.file_writer is None:
            self.file_writer = FileWriter(self.log_dir, self.max_queue, self.flush_secs,
                                          self.filename_suffix)
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
            if self.purge_step is not None:
                step = self.purge_step
                self.file_writer.add_event(_event(step=step, file_version="brain.Event:2"))
                self.file_writer.add_event(_event(step=step, session_log=pb.uint(1, 1)))
                self.purge_step = None
        return self.file_writer

    def get_logdir(self):
        """The directory the event files are written to."""
        return self.log_dir

    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None, new_style=False,
                   double_precision=False):
        """One point of the curve ``tag``: ``scalar_value`` (a number or one-element tensor)
        at ``global_step``."""
        summary = S.scalar(tag, scalar_value, new_style=new_style,
                           double_precision=double_precision)
        self._get_file_writer().add_summary(summary, _step(global_step), walltime)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        """Several curves on one chart: each ``tag`` of the dict is written, as ``main_tag``,
        to its own run ``<log_dir>/<main_tag>_<tag>``."""
        walltime = time.time() if walltime is None else walltime
        fw_logdir = self._get_file_writer().get_logdir()
        for tag, value in tag_scalar_dict.items():
            path = os.path.join(fw_logdir, main_tag.replace("/", "_") + "_" + tag)
            if self.all_writers is None:
                raise AssertionError("self.all_writers is None")
            fw = self.all_writers.get(path)
            if fw is None:
                fw = FileWriter(path, self.max_queue, self.flush_secs, self.filename_suffix)
                self.all_writers[path] = fw
            fw.add_summary(S.scalar(main_tag, value), _step(global_step), walltime)

    def add_tensor(self, tag, tensor, global_step=None, walltime=None):
        arr = S.make_np(tensor)
        dtype = {"float32": S.DT_FLOAT, "float64": S.DT_DOUBLE}.get(str(arr.dtype))
        if dtype is None:
            raise ValueError(f"add_tensor: unsupported dtype {arr.dtype}")
        t = (pb.uint(1, dtype) + pb.blob(2, S._shape(arr.shape))
             + pb.blob(4, arr.astype(arr.dtype.newbyteorder("<")).tobytes()))
        summary = S._summary(S._value(tag, tensor=t, metadata=S._metadata("tensor")))
        self._get_file_writer().add_summary(summary, _step(global_step), walltime)

    def add_histogram(self, tag, values, global_step=None, bins="tensorflow", walltime=None,
                      max_bins=None):
        """A histogram of ``values``; ``bins`` as NumPy's histogram takes it, or
        "tensorflow" (TensorFlow's exponential buckets)."""
        if isinstance(bins, str) and bins == "tensorflow":
            bins = self.default_bins
        self._get_file_writer().add_summary(S.histogram(tag, values, bins, max_bins=max_bins),
                                            _step(global_step), walltime)

    def add_histogram_raw(self, tag, min, max, num, sum, sum_squares, bucket_limits,
                          bucket_counts, global_step=None, walltime=None):
        if len(bucket_limits) != len(bucket_counts):
            raise ValueError("len(bucket_limits) != len(bucket_counts), see the document.")
        histo = S.histogram_raw_proto(min, max, num, sum, sum_squares, bucket_limits,
                                      bucket_counts)
        self._get_file_writer().add_summary(S._summary(S._value(tag, histo=histo)),
                                            _step(global_step), walltime)

    def add_image(self, tag, img_tensor, global_step=None, walltime=None, dataformats="CHW"):
        """One image (float values in [0, 1] or uint8 in [0, 255]), laid out as
        ``dataformats`` says (CHW, HWC, HW), PNG-encoded."""
        self._get_file_writer().add_summary(S.image(tag, img_tensor, dataformats=dataformats),
                                            _step(global_step), walltime)

    def add_images(self, tag, img_tensor, global_step=None, walltime=None, dataformats="NCHW"):
        """A batch of images, tiled 8 a row into one picture."""
        self._get_file_writer().add_summary(S.image(tag, img_tensor, dataformats=dataformats),
                                            _step(global_step), walltime)

    def add_text(self, tag, text_string, global_step=None, walltime=None):
        """Text (Markdown) shown in TensorBoard's Text tab."""
        self._get_file_writer().add_summary(S.text(tag, text_string), _step(global_step),
                                            walltime)

    def add_graph(self, model, input_to_model=None, verbose=False, use_strict_trace=True):
        """The graph of ``model``: a tp.fx GraphModule, or a Module (traced here with
        ``tp.fx.symbolic_trace``). With ``input_to_model`` (a tensor or a tuple) the graph is
        run once and each node carries its output shapes."""
        from tensorplay.fx import GraphModule, symbolic_trace
        from tensorplay.utils.tensorboard._graph import graph_def
        gm = model if isinstance(model, GraphModule) else symbolic_trace(model)
        if not isinstance(model, GraphModule):
            gm._tp_traced_class_name = type(model).__name__
        if input_to_model is not None and not isinstance(input_to_model, (tuple, list)):
            input_to_model = (input_to_model,)
        self._get_file_writer().add_graph(graph_def(gm, input_to_model, verbose))

    def add_hparams(self, hparam_dict, metric_dict, hparam_domain_discrete=None, run_name=None,
                    global_step=None):
        """One trial of a hyperparameter search: ``hparam_dict`` (numbers, strings, bools)
        and its results ``metric_dict``, in the run ``<log_dir>/<run_name>`` (default: the
        current time) for TensorBoard's HParams tab."""
        if type(hparam_dict) is not dict or type(metric_dict) is not dict:
            raise TypeError("hparam_dict and metric_dict should be dictionary.")
        exp, ssi, sei = S.hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        if not run_name:
            run_name = str(time.time())
        logdir = os.path.join(self._get_file_writer().get_logdir(), run_name)
        with SummaryWriter(log_dir=logdir) as w:
            w.file_writer.add_summary(exp, _step(global_step))
            w.file_writer.add_summary(ssi, _step(global_step))
            w.file_writer.add_summary(sei, _step(global_step))
            for k, v in metric_dict.items():
                w.add_scalar(k, v, global_step)

    def flush(self):
        """Writes every queued event to disk."""
        if self.all_writers is None:
            return
        for w in self.all_writers.values():
            w.flush()

    def close(self):
        """Flushes and closes every event file (a later ``add_*`` opens a new one)."""
        if self.all_writers is None:
            return
        for w in self.all_writers.values():
            w.flush()
            w.close()
        self.file_writer = self.all_writers = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.close()
