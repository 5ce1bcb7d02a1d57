"""ONNX export (PyTorch's ``torch.onnx``): ``tp.onnx.export(model, args, "model.onnx")``.

The model is captured as a graph of ``tp.ops.aten`` ops (make_fx, on fake tensors), each op
translated to ONNX operators through the translation table (``tp.onnx._table.TABLE``, one
entry per op overload), parameters and buffers written as initializers (named as in
``model.named_parameters()``), dynamic axes as symbolic dims (Note [Dynamic dims by
multi-trace fitting] in ``_symbolic.py``). The default opset is 18.

    prog = tp.onnx.export(model, (x,), "model.onnx", input_names=["x"],
                          dynamic_axes={"x": {0: "batch"}})
    prog(x)                                    # ONNX Runtime's outputs (a list of tensors)
    tp.onnx.verify(model, (x,), "model.onnx")  # eager vs ONNX Runtime, within tolerance

``import tensorplay`` does not import ``onnx``; exporting needs it (``pip install
tensorplay[onnx]``), running the exported file needs ``onnxruntime``.
"""
from tensorplay.onnx._errors import DynamicShapeError, OnnxExportError, UnsupportedOperatorError

__all__ = ['export', 'verify', 'ONNXProgram', 'OnnxExportError', 'UnsupportedOperatorError',
           'DynamicShapeError', 'DEFAULT_OPSET', 'is_in_onnx_export']

DEFAULT_OPSET = 18
_MIN_OPSET = 18
_exporting = False


def is_in_onnx_export():
    """Whether an export is tracing the model right now (PyTorch's name)."""
    return _exporting


def export(model, args=(), f=None, *, kwargs=None, input_names=None, output_names=None,
           opset_version=None, dynamic_axes=None, dynamic_shapes=None, external_data=True,
           custom_translation_table=None, verify=False, verbose=None, dynamo=True, **unused):
    """Exports ``model`` (a Module or a function) run on ``args`` (and ``kwargs``) to ONNX.

    - ``f``: a path or a binary file-like object to write to (None: write nothing). With a
      path and ``external_data=True`` (the default, as PyTorch's) the weights go to
      ``<f>.data`` next to it; with ``external_data=False`` or a file-like object, into the
      model file (under ONNX's 2 GB limit).
    - ``input_names`` / ``output_names``: names of the graph inputs (the tensors among the
      flattened ``args`` and ``kwargs``, in order; default: the forward's parameter names)
      and outputs (default ``output`` / ``output_<i>``).
    - ``dynamic_axes``: ``{name: {axis: axis_name}}`` or ``{name: [axis, ...]}`` over input
      and output names; or ``dynamic_shapes``: per argument (a tuple in the order of
      ``args``, or a dict by parameter name) a ``{axis: name}`` dict or a per-axis list
      (None: static); a name may be a str or anything with ``__name__`` (``torch.export.Dim``
      style). Axes sharing a name share one size.
    - ``opset_version``: the ai.onnx opset (default 18; 18 to the installed onnx's newest).
    - ``custom_translation_table``: ``{op handle: fn(g, *args, **kwargs)}`` entries that
      override or extend the table.
    - ``verify``: run the exported model in ONNX Runtime on ``args`` and compare with the
      model's outputs (raises AssertionError on a difference).

    The model runs in its current mode (call ``model.eval()`` first for inference: dropout
    in training mode draws random numbers, which do not export). Returns an ONNXProgram.
    Raises UnsupportedOperatorError (an op without a translation; the message names the
    op and the model's source line), DynamicShapeError (a dynamic axis the model
    specialises on) or OnnxExportError (data-dependent control flow, and other failures).
    """
    global _exporting
    from tensorplay.onnx._program import ONNXProgram, build
    del verbose, dynamo, unused
    _exporting = True
    try:
        proto, info = build(model, args, kwargs, input_names, output_names, opset_version,
                            dynamic_axes, dynamic_shapes, custom_translation_table)
    finally:
        _exporting = False
    prog = ONNXProgram(proto, info)
    if f is not None:
        prog.save(f, external_data=external_data)
    if verify:
        _verify_program(model, args, kwargs, prog)
    return prog


def verify(model, args, onnx_model, *, kwargs=None, rtol=1e-5, atol=1e-5):
    """Runs ``model(*args, **kwargs)`` eagerly (no grad) and the exported model (an
    ONNXProgram, a ModelProto or a path) in ONNX Runtime on the same inputs; raises
    AssertionError if an output differs by more than ``atol + rtol * |expected|``
    elementwise (or in shape or dtype). Returns the largest absolute difference of each
    output."""
    from tensorplay.onnx._program import ONNXProgram
    prog = onnx_model if isinstance(onnx_model, ONNXProgram) else ONNXProgram.load(onnx_model)
    return _verify_program(model, args, kwargs, prog, rtol, atol)


def _verify_program(model, args, kwargs, prog, rtol=1e-5, atol=1e-5):
    import numpy as np

    import tensorplay as tp
    from tensorplay.utils._pytree import tree_flatten
    args = args if isinstance(args, tuple) else (args,)
    with tp.no_grad():
        expected = model(*args, **(kwargs or {}))
    expected = [t for t in tree_flatten(expected)[0] if isinstance(t, tp.Tensor)]
    got = prog.run_numpy(*args, **(kwargs or {}))
    if len(got) != len(expected):
        raise AssertionError(f'tp.onnx.verify: {len(got)} outputs from ONNX Runtime, '
                             f'{len(expected)} from the model')
    diffs = []
    for i, (e, o) in enumerate(zip(expected, got)):
        e = e.detach().cpu()
        en = e.float().numpy() if e.dtype == tp.bfloat16 else e.numpy()
        if tuple(en.shape) != tuple(o.shape):
            raise AssertionError(f'tp.onnx.verify: output {i}: shape {tuple(o.shape)} from ONNX '
                                 f'Runtime, {tuple(en.shape)} from the model')
        if en.dtype != o.dtype and not (e.dtype == tp.bfloat16):
            raise AssertionError(f'tp.onnx.verify: output {i}: dtype {o.dtype} from ONNX '
                                 f'Runtime, {en.dtype} from the model')
        if en.dtype == np.bool_ or np.issubdtype(en.dtype, np.integer):
            bad = en != o
            d = float(np.abs(en.astype(np.int64) - o.astype(np.int64)).max()) if en.size else 0.0
        else:
            o64, e64 = o.astype(np.float64), en.astype(np.float64)
            same_nan = np.isnan(o64) & np.isnan(e64)
            same_inf = np.isinf(e64) & (o64 == e64)
            with np.errstate(invalid='ignore'):
                err = np.abs(o64 - e64)
                bad = ~(same_nan | same_inf) & ~(err <= atol + rtol * np.abs(e64))
            finite = np.where(same_nan | same_inf, 0.0, err)
            d = float(np.nanmax(finite)) if finite.size else 0.0
        if bad.any():
            where = tuple(int(a[0]) for a in np.nonzero(bad))
            raise AssertionError(
                f'tp.onnx.verify: output {i} differs at {int(bad.sum())} of {bad.size} elements '
                f'(first at {where}: ONNX Runtime {o[where]!r}, model {en[where]!r}; largest '
                f'difference {d:.3g}, rtol {rtol}, atol {atol})')
        diffs.append(d)
    return diffs


def __getattr__(name):
    if name == 'ONNXProgram':
        from tensorplay.onnx._program import ONNXProgram
        return ONNXProgram
    raise AttributeError(f"module 'tensorplay.onnx' has no attribute {name!r}")
