"""CUDA graphs (PyTorch's ``torch.cuda.graphs``): capture the work queued on a stream once,
replay it with one launch. The machinery is C++ (Note [CUDA graphs] in
csrc/cuda/graphs/graph.cpp): private memory pools in the caching allocator, Philox state read
from device memory at replay, errors for ops that cannot be captured, conditional nodes.

    g = tp.cuda.CUDAGraph()
    static_x = tp.randn(64, 64, device='cuda')
    with tp.cuda.graph(g):
        static_y = (static_x @ static_x).relu()
    static_x.copy_(new_x); g.replay()          # static_y now holds the result for new_x
    g.stage_and_launch([static_x], [new_x])    # the same in one call
"""
import gc

import tensorplay as tp
from tensorplay import _C
from tensorplay.cuda._utils import _compiled, _lazy_init

__all__ = ['CUDAGraph', 'graph', 'graph_pool_handle', 'is_current_stream_capturing',
           'make_graphed_callables', 'make_graphed_autograd_function']


def _not_compiled(*args, **kwargs):
    raise RuntimeError('CUDA graphs need TensorPlay built with CUDA (this build has no CUDA '
                       'support)')


def is_current_stream_capturing():
    """True when CUDA graph capture is underway on the current CUDA stream."""
    if not _compiled or not tp.cuda.is_available():
        return False
    return _C._cuda_isCurrentStreamCapturing()


def graph_pool_handle():
    """An opaque token naming a memory pool that several graphs' captures share (pass it as
    ``pool`` to ``capture_begin`` / ``tp.cuda.graph``)."""
    if not _compiled:
        _not_compiled()
    return _C._cuda_graph_pool_handle()


class CUDAGraph:
    """A CUDA graph: ``capture_begin()`` ... ``capture_end()`` records the work queued on the
    current stream (use ``tp.cuda.graph`` to get a side stream and cleanup on errors);
    ``replay()`` launches it again on the current stream, on the same memory.

    ``keep_graph=True`` (or ``enable_debug_mode()``) keeps the captured graph after
    instantiation, for ``debug_dump``."""

    def __init__(self, keep_graph=False):
        if not _compiled:
            _not_compiled()
        _lazy_init()
        self._g = _C._CUDAGraph(keep_graph)
        # bound once: replay and stage_and_launch are the hot calls
        self.replay = self._g.replay
        self.stage_and_launch = self._g.stage_and_launch

    def capture_begin(self, pool=None, capture_error_mode='global'):
        """Begins capturing the current stream (not the default stream). ``pool``: a token
        from ``graph_pool_handle()`` or another graph's ``pool()`` to share memory with it.
        ``capture_error_mode``: 'global', 'thread_local' or 'relaxed' (cudaStreamCaptureMode:
        which threads' unsafe CUDA calls end the capture with an error)."""
        self._g.capture_begin(pool, capture_error_mode)

    def capture_end(self):
        """Ends the capture and instantiates the graph."""
        self._g.capture_end()

    def replay(self):  # replaced per instance by the C++ method (see __init__)
        """Launches the captured graph on the current stream."""
        self._g.replay()

    def stage_and_launch(self, static_inputs, new_inputs):  # replaced per instance
        """Copies each of ``new_inputs`` into the matching static input, then replays: one
        call into C++ for a step's input staging and launch."""
        self._g.stage_and_launch(static_inputs, new_inputs)

    def reset(self):
        """Drops the captured graph and its claim on its memory pool."""
        self._g.reset()

    def pool(self):
        """The token of this graph's memory pool (share it with later captures)."""
        return self._g.pool()

    def enable_debug_mode(self):
        """Keeps the captured graph for ``debug_dump``."""
        self._g.enable_debug_mode()

    def debug_dump(self, debug_path):
        """Writes the captured graph as Graphviz DOT to ``debug_path``."""
        self._g.debug_dump(str(debug_path))

    def register_generator_state(self, generator):
        """Makes random ops drawing from ``generator`` during the capture draw fresh numbers
        at each replay. Generators used during a capture are registered when first drawn
        from, so this is only needed to register one ahead."""
        if hasattr(generator, 'graphsafe_get_state'):  # a generator state object
            generator = generator._generator
        self._g.register_generator_state(generator)

    # conditional nodes (CUDA >= 12.4): Note [Conditional nodes] in csrc/cuda/graphs/graph.cpp
    def begin_capture_to_if_node(self, scalar_cuda_pred_tensor):
        """Work queued until ``end_capture_to_conditional_node()`` runs at replay only if the
        one-element CUDA tensor is nonzero when the node is reached."""
        self._g.begin_capture_to_if_node(scalar_cuda_pred_tensor)

    def begin_capture_to_while_node(self, scalar_cuda_pred_tensor):
        """Work queued until ``end_capture_to_conditional_node()`` runs at replay as long as
        the one-element CUDA tensor is nonzero (checked before each pass; the body updates
        it)."""
        self._g.begin_capture_to_while_node(scalar_cuda_pred_tensor)

    def end_capture_to_conditional_node(self):
        self._g.end_capture_to_conditional_node()

    def _abort_capture(self):
        self._g._abort_capture()

    @property
    def num_nodes(self):
        """Nodes in the captured graph (0 before capture_end)."""
        return self._g._num_nodes

    def __repr__(self):
        return f'<tensorplay.cuda.CUDAGraph on cuda:{self._g._device}, {self.num_nodes} nodes>'


class graph:
    """Context manager capturing the work of its block into ``cuda_graph``:

        with tp.cuda.graph(g):
            out = model(static_input)

    The block runs on ``stream`` (default: a side stream of this class), after the device
    is synchronised and the garbage collected; an exception inside the block aborts the
    capture and leaves stream and allocator as before."""

    default_capture_stream = None

    def __init__(self, cuda_graph, pool=None, stream=None, capture_error_mode='global'):
        if self.__class__.default_capture_stream is None:
            self.__class__.default_capture_stream = tp.cuda.Stream()
        self.pool = pool
        self.capture_stream = stream if stream is not None else self.__class__.default_capture_stream
        if self.capture_stream is None:
            raise ValueError('tp.cuda.graph: no capture stream')
        self.stream_ctx = tp.cuda.stream(self.capture_stream)
        self.cuda_graph = cuda_graph
        self.capture_error_mode = capture_error_mode

    def __enter__(self):
        tp.cuda.synchronize()
        gc.collect()
        tp.cuda.empty_cache()
        self.stream_ctx.__enter__()
        try:
            self.cuda_graph.capture_begin(self.pool, capture_error_mode=self.capture_error_mode)
        except BaseException:
            self.stream_ctx.__exit__(None, None, None)
            raise

    def __exit__(self, exc_type, exc_value, traceback):
        try:
            if exc_type is None:
                self.cuda_graph.capture_end()
            else:
                self.cuda_graph._abort_capture()
        finally:
            self.stream_ctx.__exit__(exc_type, exc_value, traceback)
        return False


def _flatten(tree):
    from tensorplay.utils._pytree import tree_flatten
    return tree_flatten(tree)


def _unflatten(leaves, spec):
    from tensorplay.utils._pytree import tree_unflatten
    return tree_unflatten(leaves, spec)


def make_graphed_autograd_function(fwd_graph, bwd_graph, module_params, len_user_args,
                                   output_unflatten_spec, static_input_surface, static_outputs,
                                   static_grad_outputs, static_grad_inputs):
    """The autograd function of a graphed callable: forward copies the inputs into the
    captured forward's static inputs and replays it; backward copies the incoming gradients
    into the captured backward's static gradient outputs and replays that. Returns a
    function taking the user's arguments (flattened pytree order) and returning outputs in
    the callable's structure."""

    class Graphed(tp.autograd.Function):
        @staticmethod
        def forward(ctx, *inputs):
            for i in range(len_user_args):
                if static_input_surface[i].data_ptr() != inputs[i].data_ptr():
                    static_input_surface[i].copy_(inputs[i])
            fwd_graph.replay()
            return tuple(o.detach() for o in static_outputs)

        @staticmethod
        @tp.autograd.function.once_differentiable
        def backward(ctx, *grads):
            for g, sg in zip(grads, static_grad_outputs):
                if sg is not None and g is not None and g.data_ptr() != sg.data_ptr():
                    sg.copy_(g)
            bwd_graph.replay()
            return tuple(b.detach() if b is not None else None for b in static_grad_inputs)

    def functionalized(*user_args):
        flat, _ = _flatten(user_args)
        out = Graphed.apply(*(tuple(flat) + tuple(module_params)))
        return _unflatten(list(out), output_unflatten_spec)

    return functionalized


def make_graphed_callables(callables, sample_args, num_warmup_iters=3, allow_unused_input=False,
                           pool=None):
    """Graphed versions of functions or Modules (PyTorch's make_graphed_callables): each
    callable's forward and backward are captured (after ``num_warmup_iters`` eager runs on a
    side stream) into CUDA graphs sharing one memory pool, and the returned callables replay
    them inside an autograd Function, so gradients flow as in eager mode. A Module comes
    back with its forward replaced while it is in the training mode it was graphed in.

    ``sample_args``: a tuple of tensors per callable (a tuple of such tuples for several);
    later calls must pass tensors of the same shapes, dtypes and requires_grad."""
    if tp.is_autocast_enabled() and getattr(tp, 'is_autocast_cache_enabled', lambda: False)():
        raise RuntimeError('make_graphed_callables does not support the autocast caching. '
                           'Please set `cache_enabled=False`.')
    just_one = False
    if not isinstance(callables, tuple):
        just_one = True
        callables = (callables,)
        sample_args = (sample_args,)
    flat_samples, flat_specs = [], []
    for c, args in zip(callables, sample_args):
        if isinstance(c, tp.nn.Module):
            if (len(c._backward_hooks) or len(c._forward_hooks) or len(c._forward_pre_hooks)):
                raise AssertionError('Modules must not have hooks registered at the time they '
                                     'are passed. However, registering hooks on modules after '
                                     'passing them through make_graphed_callables is allowed.')
        flat, spec = _flatten(args)
        if not all(isinstance(a, tp.Tensor) for a in flat):
            raise TypeError('In the beta API, sample_args for each callable must contain only '
                            'Tensors. Other types are not allowed.')
        flat_samples.append(tuple(flat))
        flat_specs.append(spec)
    per_callable_len_user_args = [len(a) for a in flat_samples]
    per_callable_module_params = [tuple(c.parameters()) if isinstance(c, tp.nn.Module) else ()
                                  for c in callables]
    per_callable_static_input_surfaces = [flat_samples[i] + per_callable_module_params[i]
                                          for i in range(len(callables))]
    fwd_graphs = [CUDAGraph() for _ in callables]
    bwd_graphs = [CUDAGraph() for _ in callables]
    mempool = graph_pool_handle() if pool is None else pool

    def grad_of(outputs, inputs, grad_outputs):
        outs = [o for o in outputs if o.requires_grad]
        ins = tuple(i for i in inputs if i.requires_grad)
        gos = [g for o, g in zip(outputs, grad_outputs) if o.requires_grad]
        grads = tp.autograd.grad(outs, ins, grad_outputs=gos, only_inputs=True,
                                 allow_unused=allow_unused_input) if outs and ins else ()
        it = iter(grads)
        return tuple(next(it) if i.requires_grad else None for i in inputs)

    # warm-up on a side stream (kernels pick algorithms, workspaces and caches fill)
    tp.cuda.synchronize()
    side = tp.cuda.Stream()
    side.wait_stream(tp.cuda.current_stream())
    with tp.cuda.stream(side):
        for func, args, spec, surface in zip(callables, flat_samples, flat_specs,
                                             per_callable_static_input_surfaces):
            for _ in range(num_warmup_iters):
                outputs, _ = _flatten(func(*_unflatten(list(args), spec)))
                outputs = tuple(o for o in outputs if isinstance(o, tp.Tensor))
                grad_of(outputs, surface, [tp.ones_like(o) if o.requires_grad else None
                                           for o in outputs])
                del outputs
    tp.cuda.current_stream().wait_stream(side)
    tp.cuda.synchronize()

    per_callable_static_outputs, per_callable_output_specs = [], []
    for func, args, spec, fwd in zip(callables, flat_samples, flat_specs, fwd_graphs):
        with graph(fwd, pool=mempool):
            outputs = func(*_unflatten(list(args), spec))
        flat_out, out_spec = _flatten(outputs)
        per_callable_static_outputs.append(tuple(flat_out))
        per_callable_output_specs.append(out_spec)

    per_callable_static_grad_outputs = [None] * len(callables)
    per_callable_static_grad_inputs = [None] * len(callables)
    for i in reversed(range(len(callables))):
        static_outputs = per_callable_static_outputs[i]
        static_grad_outputs = tuple(tp.empty_like(o) if o.requires_grad else None
                                    for o in static_outputs)
        with graph(bwd_graphs[i], pool=mempool):
            grads = grad_of(static_outputs, per_callable_static_input_surfaces[i],
                            static_grad_outputs)
        per_callable_static_grad_outputs[i] = static_grad_outputs
        per_callable_static_grad_inputs[i] = grads

    ret = []
    for i, func in enumerate(callables):
        graphed = make_graphed_autograd_function(
            fwd_graphs[i], bwd_graphs[i], per_callable_module_params[i],
            per_callable_len_user_args[i], per_callable_output_specs[i],
            per_callable_static_input_surfaces[i], per_callable_static_outputs[i],
            per_callable_static_grad_outputs[i], per_callable_static_grad_inputs[i])
        if isinstance(func, tp.nn.Module):
            def make_forward(func, graph_training_state, graphed, orig_fwd):
                def new_fwd(*user_args):
                    if func.training == graph_training_state:
                        return graphed(*user_args)
                    return orig_fwd(*user_args)
                return new_fwd
            func.forward = make_forward(func, func.training, graphed, func.forward)
            ret.append(func)
        else:
            ret.append(graphed)
    return ret[0] if just_one else tuple(ret)
