"""Assembling the ONNX model (build) and what export returns (ONNXProgram)."""
import os

import tensorplay as tp
from tensorplay.onnx._errors import OnnxExportError
from tensorplay.onnx._symbolic import Sym, Unfit
from tensorplay.utils._pytree import tree_flatten

__all__ = ['ONNXProgram', 'build']

_TWO_GB = 2 ** 31


def _import_onnx():
    try:
        import onnx
    except ImportError as e:
        raise ImportError('tp.onnx.export needs the onnx package: pip install "tensorplay[onnx]" '
                          '(or pip install onnx)') from e
    return onnx


def _axis_name(a):
    if isinstance(a, str):
        return a
    name = getattr(a, '__name__', None)
    if isinstance(name, str):
        return name
    raise TypeError(f'tp.onnx.export: a dynamic axis is named by a str or an object with '
                    f'__name__, got {a!r}')


def _axes_of(spec, where, auto):
    """{axis: name} from a dict {axis: name}, a list of axes (auto names) or a per-axis list
    of names / None."""
    if spec is None:
        return {}
    if isinstance(spec, dict):
        return {int(k): _axis_name(v) for k, v in spec.items() if v is not None}
    if isinstance(spec, (list, tuple)):
        if all(isinstance(v, int) and not isinstance(v, bool) for v in spec):
            return {int(a): f'{auto}_dim{a}' for a in spec}
        return {i: _axis_name(v) for i, v in enumerate(spec) if v is not None}
    raise TypeError(f'tp.onnx.export: the dynamic axes of {where} must be a dict or a list, '
                    f'got {spec!r}')


def _resolve_axes(inputs, names, out_names_given, dynamic_axes, dynamic_shapes, args, kwargs,
                  model):
    """({input index: {axis: name}}, {output name: {axis: name}})."""
    if dynamic_axes is not None and dynamic_shapes is not None:
        raise ValueError('tp.onnx.export: give dynamic_axes or dynamic_shapes, not both')
    in_axes, out_axes = {}, {}
    if dynamic_axes is not None:
        for key, spec in dynamic_axes.items():
            if key in names:
                i = names.index(key)
                in_axes[i] = _axes_of(spec, key, key)
            elif out_names_given is None or key in out_names_given:
                out_axes[key] = _axes_of(spec, key, key)  # checked once the outputs are known
            else:
                raise ValueError(f'tp.onnx.export: dynamic_axes names {key!r}, which is no input '
                                 f'({names}) or output name ({out_names_given})')
    elif dynamic_shapes is not None:
        import inspect
        if isinstance(dynamic_shapes, dict):
            fn = model.forward if isinstance(model, tp.nn.Module) else model
            params = [p.name for p in inspect.signature(fn).parameters.values()]
            per_arg = []
            for i, a in enumerate(args):
                key = params[i] if i < len(params) else None
                per_arg.append(dynamic_shapes.get(key))
            per_kw = [dynamic_shapes.get(k) for k in kwargs]
            unknown = set(dynamic_shapes) - set(params[:len(args)]) - set(kwargs)
            if unknown:
                raise ValueError(f'tp.onnx.export: dynamic_shapes names {sorted(unknown)}, which '
                                 f'are no arguments of the model')
        else:
            per_arg = list(dynamic_shapes)
            if len(per_arg) != len(args):
                raise ValueError(f'tp.onnx.export: dynamic_shapes has {len(per_arg)} entries for '
                                 f'{len(args)} positional arguments')
            per_kw = [None] * len(kwargs)
        k = 0
        for a, spec in list(zip(args, per_arg)) + list(zip(kwargs.values(), per_kw)):
            leaves = [x for x in tree_flatten(a)[0] if isinstance(x, tp.Tensor)]
            if isinstance(a, tp.Tensor):
                if spec is not None:
                    in_axes[k] = _axes_of(spec, names[k], names[k])
            elif spec is not None:
                specs = tree_flatten(spec)[0] if not isinstance(spec, (list, tuple)) else spec
                for j, s in enumerate(specs[:len(leaves)]):
                    if s is not None:
                        in_axes[k + j] = _axes_of(s, names[k + j], names[k + j])
            k += len(leaves)
    for i, ax in in_axes.items():
        t = inputs.tensors[i]
        for a in list(ax):
            if not -t.dim() <= a < t.dim():
                raise ValueError(f'tp.onnx.export: dynamic axis {a} of input {names[i]!r}, '
                                 f'which has {t.dim()} dims')
            if a < 0:
                ax[a + t.dim()] = ax.pop(a)
    return {i: ax for i, ax in in_axes.items() if ax}, out_axes


def _param_names(model):
    from tensorplay.onnx._exporter import _layout_key
    names = {}
    if isinstance(model, tp.nn.Module):
        for n, p in model.named_parameters():
            names.setdefault(_layout_key(p), n)
        for n, b in model.named_buffers():
            if b is not None:
                names.setdefault(_layout_key(b), n)
    return names


def _value_info(helper, name, dtype, shape, axis_names=None):
    from tensorplay.onnx._exporter import onnx_dtype
    dims = []
    for i, d in enumerate(shape):
        if axis_names and i in axis_names:
            dims.append(axis_names[i])
        elif isinstance(d, Sym):
            dims.append(d.is_symbol() or str(d).replace(' ', ''))
        elif isinstance(d, Unfit):
            dims.append(None)
        else:
            dims.append(int(d))
    return helper.make_tensor_value_info(name, onnx_dtype(dtype), dims)


def build(model, args, kwargs, input_names, output_names, opset_version, dynamic_axes,
          dynamic_shapes, custom_table):
    """(ModelProto, info) of the model's ONNX export."""
    onnx = _import_onnx()
    from onnx import helper
    from tensorplay.onnx._capture import _Inputs, capture
    from tensorplay.onnx._exporter import GraphContext
    from tensorplay.onnx._table import TABLE
    from tensorplay.onnx import DEFAULT_OPSET, _MIN_OPSET

    newest = onnx.defs.onnx_opset_version()
    opset = DEFAULT_OPSET if opset_version is None else int(opset_version)
    if not _MIN_OPSET <= opset <= newest:
        raise ValueError(f'tp.onnx.export: opset_version {opset} is not supported; use '
                         f'{_MIN_OPSET} to {newest} (the installed onnx package\'s newest)')
    if isinstance(args, tp.Tensor):
        args = (args,)
    elif isinstance(args, list):
        args = tuple(args)
    elif not isinstance(args, tuple):
        args = (args,)
    kwargs = dict(kwargs or {})
    inputs = _Inputs(model, args, kwargs)
    names = list(inputs.names)
    if input_names is not None:
        input_names = list(input_names)
        if len(input_names) > len(names):
            raise ValueError(f'tp.onnx.export: {len(input_names)} input_names for '
                             f'{len(names)} tensor inputs')
        names[:len(input_names)] = input_names
    if len(set(names)) != len(names):
        raise ValueError(f'tp.onnx.export: input names must be unique, got {names}')
    in_axes, out_axes = _resolve_axes(inputs, names, list(output_names) if output_names else None,
                                      dynamic_axes, dynamic_shapes, args, kwargs, model)
    cap = capture(model, args, kwargs, in_axes, inputs=inputs)
    table = TABLE if not custom_table else {**TABLE, **custom_table}
    g = GraphContext(cap, opset, table, _param_names(model))
    for n in names:
        g.used_names.add(n)
    if output_names is not None:  # reserved: no value inside the graph takes these names
        clash = set(output_names) & set(names)
        if clash or len(set(output_names)) != len(output_names):
            raise ValueError(f'tp.onnx.export: output names must be unique and differ from the '
                             f'input names, got {list(output_names)}')
        g.used_names.update(output_names)
    out_node = g.run(names)
    outs = list(out_node.args[0]) if out_node is not None else []
    n_out = len(outs)
    if output_names is not None:
        output_names = list(output_names)
        if len(output_names) != n_out:
            raise ValueError(f'tp.onnx.export: {len(output_names)} output_names for the '
                             f'model\'s {n_out} tensor outputs')
    else:  # defaults, made unique against the graph's values
        output_names = [g.fresh('output')] if n_out == 1 else \
            [g.fresh(f'output_{i}') for i in range(n_out)]
    unknown = sorted(set(out_axes) - set(output_names))
    if unknown:
        raise ValueError(f'tp.onnx.export: dynamic_axes names {unknown}, which are no input '
                         f'({names}) or output names ({output_names})')
    graph_outputs = []
    for name, node in zip(output_names, outs):
        v = g.value(node)
        g.node = None
        g.nodes.append(helper.make_node('Identity', [v.name], [name], name=g.fresh(f'{name}_out')))
        graph_outputs.append(_value_info(helper, name, v.dtype, v.shape, out_axes.get(name)))
    graph_inputs = []
    for (name, node), i in zip(g.graph_inputs, range(len(names))):
        val = node.meta['val']
        shape = cap.shape_of(node)
        graph_inputs.append(_value_info(helper, name, val.dtype, shape, in_axes.get(i)))
    graph = helper.make_graph(g.nodes, 'main_graph', graph_inputs, graph_outputs,
                              initializer=g.initializers)
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid('', opset)],
                              producer_name='tensorplay', producer_version=tp.__version__)
    proto.ir_version = min(proto.ir_version, 10)
    info = dict(input_names=names, output_names=output_names, n_inputs=len(names),
                inputs=inputs)
    return proto, info


class ONNXProgram:
    """An exported model: ``model_proto`` (an onnx.ModelProto), ``save(f)``, and calling it
    runs ONNX Runtime (``prog(*args)`` -> list of tensors, PyTorch's ONNXProgram)."""

    def __init__(self, model_proto, info=None):
        self.model_proto = model_proto
        self._info = info or {}
        self._session = None

    @property
    def model(self):
        return self.model_proto

    @property
    def input_names(self):
        return [i.name for i in self.model_proto.graph.input]

    @property
    def output_names(self):
        return [o.name for o in self.model_proto.graph.output]

    @classmethod
    def load(cls, src):
        onnx = _import_onnx()
        if isinstance(src, onnx.ModelProto):
            return cls(src)
        if isinstance(src, (str, os.PathLike)):
            return cls(onnx.load(os.fspath(src)))
        return cls(onnx.load_model_from_string(src.read()))

    def __repr__(self):
        g = self.model_proto.graph
        return (f'ONNXProgram(inputs={self.input_names}, outputs={self.output_names}, '
                f'{len(g.node)} nodes, {len(g.initializer)} initializers, opset '
                f'{self.model_proto.opset_import[0].version})')

    def save(self, destination, *, include_initializers=True, keep_initializers_as_inputs=False,
             external_data=None):
        """Writes the model to a path or a binary file-like object. ``external_data``: the
        weights in ``<destination>.data`` next to the file (True; forced for models over
        2 GB), or inside it (False; None: only when under 2 GB)."""
        onnx = _import_onnx()
        proto = onnx.ModelProto()
        proto.CopyFrom(self.model_proto)
        if not include_initializers:
            del proto.graph.initializer[:]
        if keep_initializers_as_inputs:
            from onnx import helper
            for t in self.model_proto.graph.initializer:
                proto.graph.input.append(helper.make_tensor_value_info(t.name, t.data_type,
                                                                       list(t.dims)))
        size = sum(len(t.raw_data) for t in proto.graph.initializer)
        big = size > _TWO_GB - (1 << 24)
        if isinstance(destination, (str, os.PathLike)):
            path = os.fspath(destination)
            if external_data or big:
                location = os.path.basename(path) + '.data'
                data_path = os.path.join(os.path.dirname(os.path.abspath(path)), location)
                if os.path.exists(data_path):
                    os.remove(data_path)
                onnx.save_model(proto, path, save_as_external_data=True,
                                all_tensors_to_one_file=True, location=location,
                                size_threshold=1024, convert_attribute=False)
            else:
                onnx.save_model(proto, path)
            return
        if big:
            raise OnnxExportError('tp.onnx: a model over 2 GB needs external data, which needs '
                                  'a path to save to (not a file-like object)')
        destination.write(proto.SerializeToString())

    # ---- running ---------------------------------------------------------------------------
    def _sess(self):
        if self._session is None:
            try:
                import onnxruntime as ort
            except ImportError as e:
                raise ImportError('running an exported model needs onnxruntime '
                                  '(pip install onnxruntime)') from e
            opts = ort.SessionOptions()
            opts.log_severity_level = 3
            data = self.model_proto.SerializeToString()
            self._session = ort.InferenceSession(data, opts, providers=['CPUExecutionProvider'])
        return self._session

    def _feeds(self, args, kwargs):
        import numpy as np
        if isinstance(args, tp.Tensor):
            args = (args,)
        leaves = tree_flatten((tuple(args), dict(kwargs or {})))[0]
        tensors = [x for x in leaves if isinstance(x, (tp.Tensor, np.ndarray))]
        sess = self._sess()
        names = [i.name for i in sess.get_inputs()]
        if len(tensors) != len(names):
            raise ValueError(f'ONNXProgram: {len(tensors)} tensor inputs given, the model takes '
                             f'{len(names)} ({names})')
        feeds = {}
        for n, t in zip(names, tensors):
            if isinstance(t, tp.Tensor):
                t = t.detach().cpu()
                t = t.float().numpy() if t.dtype == tp.bfloat16 else t.contiguous().numpy()
            feeds[n] = t
        return feeds

    def run_numpy(self, *args, **kwargs):
        """ONNX Runtime's outputs as numpy arrays."""
        return self._sess().run(None, self._feeds(args, kwargs))

    def __call__(self, *args, **kwargs):
        """ONNX Runtime's outputs as tensors (a list, one per graph output)."""
        return [tp.from_numpy(o) if hasattr(o, 'dtype') else tp.tensor(o)
                for o in self.run_numpy(*args, **kwargs)]

    def release(self):
        """Drops the ONNX Runtime session."""
        self._session = None
