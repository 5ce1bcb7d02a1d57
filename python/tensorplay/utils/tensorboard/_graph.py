"""A TensorBoard GraphDef from a tp.fx graph: one NodeDef per fx node, named by module path
(``Net/layer1/0/conv1``) so that TensorBoard folds each submodule into a box, with the
shapes of a sample run as ``_output_shapes`` when inputs are given."""
import operator

from tensorplay import _C
from tensorplay.utils.tensorboard import _proto as pb
from tensorplay.utils.tensorboard.summary import DT_BOOL, DT_DOUBLE, DT_FLOAT, DT_INT32, DT_INT64

_DTYPES = {"float32": DT_FLOAT, "float64": DT_DOUBLE, "int32": DT_INT32, "int64": DT_INT64,
           "bool": DT_BOOL}


def _target_name(node):
    t = node.target
    if node.op == "call_method":
        return f"Tensor.{t}"
    if node.op == "call_function":
        mod = getattr(t, "__module__", None) or ""
        if t in vars(operator).values() or mod == "_operator":
            return f"operator.{t.__name__}"
        name = getattr(t, "__name__", str(t))
        return f"{mod}.{name}" if mod else name
    return str(t)


def _shapes_of(value):
    if isinstance(value, _C.Tensor):
        return [(list(value.shape), str(value.dtype).rsplit(".", 1)[-1])]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _shapes_of(v)]
    return []


def _attr_entry(key, attr_value):
    return pb.blob(5, pb.blob(1, key) + pb.blob(2, attr_value))


def graph_def(gm, example_inputs=None, verbose=False):
    """GraphDef bytes of the GraphModule ``gm`` (``example_inputs``: a tuple to run it on
    for shapes)."""
    from tensorplay.fx import Interpreter
    shapes = {}
    if example_inputs is not None:
        class _Shapes(Interpreter):
            def run_node(self, node):
                out = super().run_node(node)
                shapes[node] = _shapes_of(out)
                return out
        _Shapes(gm, garbage_collect_values=True).run(*example_inputs)
    root = type(gm).__name__ if type(gm).__name__ != "GraphModule" else \
        getattr(gm, "_tp_traced_class_name", None) or gm.__class__.__name__
    modules = dict(gm.named_modules())
    names = {}
    for node in gm.graph.nodes:
        if node.op in ("placeholder", "output"):
            names[node] = f"{'input' if node.op == 'placeholder' else 'output'}/{node.name}"
        elif node.op == "call_module":
            names[node] = f"{root}/{node.target.replace('.', '/')}"
        elif node.op == "get_attr":
            names[node] = f"{root}/{node.target.replace('.', '/')}"
        else:
            scope = node.meta.get("nn_module_stack") if hasattr(node, "meta") else None
            prefix = root
            if scope:
                path = list(scope)[-1] if isinstance(scope, dict) else None
                if isinstance(path, str) and path:
                    prefix = f"{root}/{path.replace('.', '/')}"
            names[node] = f"{prefix}/{node.name}"
    used = set()
    nodes = []
    for node in gm.graph.nodes:
        name = names[node]
        while name in used:
            name += "_"
        used.add(name)
        names[node] = name
        if node.op in ("placeholder", "output"):
            op = "IO Node"
        elif node.op == "call_module":
            op = type(modules[node.target]).__name__
        elif node.op == "get_attr":
            op = "prim::GetAttr"
        else:
            op = _target_name(node)
        inputs = [names[n] for n in node.all_input_nodes]
        attrs = b""
        consts = [repr(a) for a in node.args if not hasattr(a, "op")]
        consts += [f"{k}={v!r}" for k, v in node.kwargs.items() if not hasattr(v, "op")]
        if consts or verbose:
            attrs += _attr_entry("attr", pb.blob(2, "{ " + ", ".join(consts) + " }"))
        if node in shapes and shapes[node]:
            # AttrValue.list (1) of shapes (7)
            lst = b"".join(pb.blob(7, b"".join(pb.blob(2, pb.uint(1, d)) for d in s))
                           for s, _ in shapes[node])
            attrs += _attr_entry("_output_shapes", pb.blob(1, lst))
            dt = _DTYPES.get(shapes[node][0][1])
            if dt is not None:
                attrs += _attr_entry("dtype", pb.uint(6, dt))
        nodes.append(pb.blob(1, name) + pb.blob(2, op) + b"".join(pb.blob(3, i) for i in inputs)
                     + pb.blob(4, "/device:CPU:0") + attrs)
    versions = pb.uint(1, 22)            # VersionDef.producer
    return b"".join(pb.blob(1, n) for n in nodes) + pb.blob(4, versions)
