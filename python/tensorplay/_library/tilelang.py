"""tile-lang kernels on TensorPlay tensors (``tp.library.wrap_tilelang``,
``tp.library.tile_lang_op``).

Note [tile-lang launches]
``tilelang.compile(prim_func, execution_backend='tvm_ffi')`` (tile-lang's first choice on
CUDA) builds a tvm-ffi function. Its tensor arguments cross through DLPack, and tvm-ffi asks
the DLPack exchange API of the argument's type which stream to launch on: ours answers
``tp.cuda.current_stream()`` (Note [DLPack exchange API]). So our tensors pass without
copies and the kernel is ordered with our work on our stream, with nothing to patch (unlike
Triton's driver, Note [Triton launches]). The one thing tile-lang's own call does with torch
is allocating the outputs named by ``out_idx``. Since tile-lang 0.1.15 such a kernel is
lowered to a callee-allocated ABI (the compiled function takes the inputs and one "anchor"
tensor, and allocates its outputs through the anchor type's exchange API): we pass one of
our tensors as the anchor, so the outputs are allocated by our allocator and come back as
our tensors. With older tile-lang (every parameter passed), ``wrap_tilelang`` allocates the
outputs itself (static dims from the kernel's parameters, symbolic ones bound from the
inputs' shapes). Launches are skipped
in fake kernels as Triton's are: a ``tile_lang_op``'s body with launches skipped is its fake
kernel, and the outputs ``wrap_tilelang`` allocates there are fake tensors.
tile-lang is never imported by us: a wrapped kernel brings it.
"""
from tensorplay._library.triton import body_op, launches_skipped

__all__ = ['wrap_tilelang', 'tile_lang_op']


def _dtype_of(param):
    import tensorplay as tp
    name = str(param.torch_dtype()).rsplit('.', 1)[-1]  # 'torch.float16' -> 'float16'
    dtype = getattr(tp, name, None)
    if not isinstance(dtype, tp.dtype):
        raise TypeError(f'wrap_tilelang: the kernel has an output of dtype {name}, which '
                        'TensorPlay does not have')
    return dtype


class wrap_tilelang:
    """``wrap_tilelang(kernel)(*inputs)`` runs a kernel built by ``tilelang.compile`` (or
    ``@tilelang.jit``) on our tensors, on our current CUDA stream, zero-copy. Outputs named by
    the kernel's ``out_idx`` are allocated as TensorPlay tensors and returned (one tensor, or
    a list for several); without ``out_idx`` every parameter is passed and ``None`` returned.
    Inside a fake kernel the launch is skipped and the outputs are still allocated."""

    def __init__(self, kernel):
        adapter = getattr(kernel, 'adapter', None)
        if adapter is None or not hasattr(kernel, 'params'):
            raise TypeError('wrap_tilelang expected a kernel built by tilelang.compile or '
                            f'@tilelang.jit, got {type(kernel).__name__}')
        self.kernel = kernel
        self._params = list(kernel.params)
        self._out = sorted(int(i) for i in (getattr(adapter, 'result_idx', None) or []))
        self._callee_allocates = bool(getattr(adapter, '_ffi_callee_allocated_output_abi', False))
        self._call = None

    def _compiled(self):
        if self._call is None:
            if not self._out:
                self._call = self.kernel
            else:
                get = getattr(self.kernel.adapter, '_get_executable', None)
                if get is None:
                    raise RuntimeError(
                        "wrap_tilelang: a kernel with out_idx needs tile-lang's tvm_ffi execution "
                        "backend (tilelang.compile(..., execution_backend='tvm_ffi')), or compile "
                        'it without out_idx and pass the outputs')
                self._call = get()
        return self._call

    def _allocate(self, inputs):
        import tensorplay as tp
        in_params = [p for i, p in enumerate(self._params) if i not in self._out]
        bound = {}
        device = None
        for p, x in zip(in_params, inputs):
            if isinstance(x, tp.Tensor):
                device = device or x.device
                for d, s in zip(p.shape, x.shape):
                    if not isinstance(d, int):
                        bound.setdefault(str(d), s)
        outs = []
        for i in self._out:
            p = self._params[i]
            shape = []
            for d in p.shape:
                if isinstance(d, int) or hasattr(d, 'value'):
                    shape.append(int(getattr(d, 'value', d)))
                elif str(d) in bound:
                    shape.append(bound[str(d)])
                else:
                    raise ValueError(f'wrap_tilelang: dimension {d} of output {i} is not a '
                                     "dimension of any input, so its size is unknown")
            outs.append(tp.empty(shape, dtype=_dtype_of(p), device=device or 'cuda'))
        return outs

    def __call__(self, *inputs):
        n_in = len(self._params) - len(self._out)
        if len(inputs) != n_in:
            raise TypeError(f'wrap_tilelang: the kernel takes {n_in} inputs '
                            f'({len(self._out)} of its {len(self._params)} parameters are '
                            f'outputs), got {len(inputs)}')
        if self._out and self._callee_allocates and not launches_skipped():
            return self._call_callee_allocated(inputs)
        outs = self._allocate(inputs) if self._out else []
        if not launches_skipped():
            args, it_in, it_out = [], iter(inputs), iter(outs)
            for i in range(len(self._params)):
                args.append(next(it_out) if i in self._out else next(it_in))
            self._compiled()(*args)
        if not outs:
            return None
        return outs[0] if len(outs) == 1 else outs

    def _call_callee_allocated(self, inputs):
        # tile-lang >= 0.1.15 lowers out_idx kernels to the callee-allocated ABI: the function
        # takes the inputs and one tensor whose type's exchange API allocates the outputs, and
        # returns them. Ours is that tensor, so the outputs come from our allocator.
        import tensorplay as tp
        anchor = next((x for x in inputs if isinstance(x, tp.Tensor)), None)
        if anchor is None:
            anchor = tp.empty(0, device='cuda')
        res = self._compiled()(*inputs, anchor)
        if len(self._out) == 1:
            return _ours(res)
        return [_ours(r) for r in res]


def _ours(x):
    import tensorplay as tp
    return x if isinstance(x, tp.Tensor) else tp.from_dlpack(x)


def tile_lang_op(name, fn=None, /, *, mutates_args, schema=None):
    """A custom op whose body runs tile-lang kernels through ``wrap_tilelang``: the body is
    the op's kernel for every device, and the body with launches skipped its fake kernel."""
    def inner(fn):
        return body_op(name, fn, mutates_args, schema)
    return inner if fn is None else inner(fn)
