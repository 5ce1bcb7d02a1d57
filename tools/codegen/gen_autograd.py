"""Generates the autograd layer of the ops: one backward Node per differentiable op
(formulas from the `derivatives:` entries of csrc/ops/*.yaml) and the recording wrappers
the C++ API calls when an input requires grad. Used by gen.py.

`derivatives:` is a map from input name to a C++ expression (namespace tp, operators
from autograd/formula_helpers.h) or one of the words:
  decomposed         the kernel is written with other ops, which record themselves
  non_differentiable the outputs never require grad
Absent: backward through the op raises NotImplementedError.
A key may name several inputs ("input, weight, bias"): its formula computes their gradients
at once and returns a std::tuple in that order; it may read `grad_input_mask` (a
std::array<bool, n>: which of them are needed). Plain Tensor inputs only.
`complex_grad: direct`: the formulas already give complex gradients in PyTorch's convention
(otherwise they are read as holomorphic, Note [Complex gradients of holomorphic formulas]).
`node:` overrides the node's name where PyTorch's differs (_to_dtype -> ToCopyBackward0).
`tags: [inplace_view]` on an op with formulas (t_, squeeze_, as_strided_): the wrapper records
the node with set_inplace_view_history (no CopySlices: no data moved) and applies the op to
self's tangent (Note [In-place view ops] in autograd/variable.cpp).
`output_differentiability:` (a list of booleans, one per output) marks the outputs that
never require grad although floating (lstsq's singular_values), as PyTorch's key does.

`jvp:` gives the outputs' tangents in forward-mode AD (Note [Forward AD]): a C++ expression
over the primals (by name, `result`) and the inputs' tangents `<input>_t` (zeros where an
input has none; a vector for Tensor[]), or one of the words
  element_wise  the op is element-wise: the sum over inputs of its backward formula with
                `grad` standing for that input's tangent (default for pointwise ops whose
                formulas are holomorphic, i.e. without `complex_grad: direct`)
  linear        the op is linear in its differentiable inputs: the op applied to their
                tangents (default for views)
  multilinear   linear in each differentiable input separately (mm, dot): the sum over
                inputs with a tangent of the op with that input replaced by its tangent
  reduction     one input, each of whose elements reaches one output element (over `dim`,
                or all): the backward formula at grad = ones gives each element's partial
                derivative; the tangent is sum(partial * self_t) over the reduced dims
                (sum(Re(conj(partial) * self_t)) for a real result of a complex input
                under `complex_grad: direct`)
A multi-output op may give a map from output name to expression (an output left out has
no tangent).
  from_backward J t computed from the backward node, as d/du <J^T u, t> (default otherwise;
                two small reverse passes per op)

Names a formula may use: `grad` (gradient of the first output), `grads[i]`, `result`
(the output) or the names of a tuple's outputs, every argument by name (tensors are
saved, with a version check), `<tensor>_sizes`, `_strides`, `_storage_offset`, `_dtype`,
`_dim`, `_device`, and
for Tensor[] arguments `<list>_sizes` (a vector of sizes). A formula for a Tensor[]
argument returns a variable_list.
"""
import re

SAVED_ATTRS = {"sizes": ("DimVector", "DimVector({a}.sizes().data(), {a}.sizes().size())"),
               "strides": ("DimVector", "DimVector({a}.strides().data(), {a}.strides().size())"),
               "storage_offset": ("int64_t", "{a}.storage_offset()"),
               "dtype": ("DType", "{a}.dtype()"),
               "dim": ("int64_t", "{a}.dim()"),
               "device": ("Device", "{a}.device()")}
VALUE_TYPES = {"Scalar": "Scalar", "int": "int64_t", "float": "double", "bool": "bool",
               "str": "std::string", "ScalarType": "DType", "Device": "Device"}


def camel(name):
    return "".join(p[:1].upper() + p[1:] for p in name.strip("_").split("_"))


def mode(op):
    d = op.entry.get("derivatives")
    if isinstance(d, dict):
        return "formulas"
    return d or "missing"


def uses(text, token):
    return re.search(rf"(?<![\w.]){re.escape(token)}\b", text) is not None


def node_name(op, ops):
    """PyTorch's node name: `node:` in the entry, else <Op>Backward<overload number>."""
    if "node" in op.entry:
        return op.entry["node"]
    same = [o for o in ops if o.name == op.name and mode(o) in ("formulas", "missing")]
    return f"{camel(op.name)}Backward{same.index(op) if op in same else 0}"


def formula_map(op):
    """{input name: formula}; a formula shared by several inputs (a key "a, b") is mapped
    from each of them."""
    out = {}
    for key, f in op.entry["derivatives"].items():
        for name in key.split(","):
            out[name.strip()] = f
    return out


def formula_groups(op):
    """{formula: [input names]} of the keys naming several inputs."""
    return {f: [n.strip() for n in key.split(",")] for key, f in op.entry["derivatives"].items() if "," in key}


def diff_args(op):
    """The tensor arguments with a formula, in schema order (each owns edges)."""
    f = formula_map(op)
    return [a for a in op.args if a.base in ("Tensor", "Tensor[]") and a.name in f]


def edge_inputs(op):
    """Tensor arguments that get edges: those with formulas, or for ops without
    formulas every floating tensor argument (their node raises on backward)."""
    if mode(op) == "formulas":
        return diff_args(op)
    return [a for a in op.args if a.base in ("Tensor", "Tensor[]")]


def value_decl(a):
    t = VALUE_TYPES.get(a.base)
    if a.base == "int[]":
        return "std::optional<DimVector>" if a.optional else "DimVector"
    return f"std::optional<{t}>" if a.optional else t


def value_init(a):
    if a.base == "int[]":
        if a.optional:
            return f"({a.name} ? std::optional<DimVector>(DimVector({a.name}->data(), {a.name}->size())) : std::nullopt)"
        return f"DimVector({a.name}.data(), {a.name}.size())"
    return a.name


def formula_text(op):
    return " ".join(op.entry["derivatives"].values()) if mode(op) == "formulas" else ""


class NodeSpec:
    """What one op's backward node saves and computes."""

    def __init__(self, op, ops):
        self.op = op
        self.name = node_name(op, ops)
        # the C++ class; ops sharing PyTorch's node name (_gelu, _gelu_tanh) get their own
        self.cls = self.name if "node" not in op.entry else f"{self.name}_{camel(op.name)}"
        self.formulas = formula_map(op) if mode(op) == "formulas" else {}
        self.groups = formula_groups(op) if mode(op) == "formulas" else {}
        self.inputs = edge_inputs(op)
        text = formula_text(op)
        self.saved_tensors = [a for a in op.args if a.base == "Tensor" and uses(text, a.name)]
        self.saved_lists = [a for a in op.args if a.base == "Tensor[]" and uses(text, a.name)]
        self.saved_attrs = [(a, attr) for a in op.args if a.base in ("Tensor", "Tensor[]")
                            for attr in SAVED_ATTRS if uses(text, f"{a.name}_{attr}")]
        self.saved_values = [a for a in op.args if a.base in VALUE_TYPES or a.base == "int[]"
                             if uses(text, a.name)]
        outs = op.returns if len(op.returns) > 1 else ["result"]
        self.saved_outputs = [(i, r) for i, r in enumerate(outs) if uses(text, r)]

    def needed_by(self, token):
        """Indices (into self.inputs) of the formulas that use `token`."""
        return [i for i, a in enumerate(self.inputs) if uses(self.formulas.get(a.name, ""), token)]


def gen_node(spec):
    op = spec.op
    lines = [f"struct {spec.cls} final : Node {{",
             f'  std::string name() const override {{ return "{spec.name}"; }}']
    if op.entry.get("zero_fill") is False:  # unused output gradients reach the formula undefined
        lines.append(f"  {spec.cls}() {{ zero_fills_missing_ = false; }}")
    fields, release = [], []
    for a in spec.saved_tensors:
        fields.append(f"SavedVariable {a.name}_;")
        release.append(f"{a.name}_.reset_data();")
    for a in spec.saved_lists:
        fields.append(f"std::vector<SavedVariable> {a.name}_;")
        release.append(f"for (auto& v : {a.name}_) v.reset_data();")
    for a, attr in spec.saved_attrs:
        typ = SAVED_ATTRS[attr][0]
        if a.base == "Tensor[]":
            typ = f"std::vector<{typ}>"
        fields.append(f"{typ} {a.name}_{attr}_;")
    for a in spec.saved_values:
        fields.append(f"{value_decl(a)} {a.name}_;")
    for i, r in spec.saved_outputs:
        fields.append(f"SavedVariable {r}_;")
        release.append(f"{r}_.reset_data();")
    fields += [f"size_t {a.name}_count_ = 0;" for a in spec.inputs if a.base == "Tensor[]"]
    lines += [f"  {f}" for f in fields]
    lines.append("  void release_variables() override { " + " ".join(release) + " }")
    lines.append("  variable_list apply(variable_list&& grads) override {")
    # Note [Complex gradients of holomorphic formulas]: a formula written as grad * f'(z)
    # gives PyTorch's complex gradient grad * conj(f'(z)) as conj(formula(conj(grad))); ops
    # whose formulas are written in that convention already say `complex_grad: direct`.
    holo = op.entry.get("complex_grad") != "direct"
    if holo:
        lines.append("    const bool conj_grads = conjugate_complex(grads);")
    lines.append("    [[maybe_unused]] const Tensor& grad = grads[0];")
    for a in spec.saved_tensors:
        if a.optional:
            lines.append(f"    Tensor {a.name}_value = {a.name}_.unpack();")
            lines.append(f"    std::optional<Tensor> {a.name} = {a.name}_value.defined() ? "
                         f"std::optional<Tensor>({a.name}_value) : std::nullopt;")
        else:
            lines.append(f"    Tensor {a.name} = {a.name}_.unpack();")
    for a in spec.saved_lists:
        lines.append(f"    variable_list {a.name};")
        lines.append(f"    for (auto& v : {a.name}_) {a.name}.push_back(v.unpack());")
    for a, attr in spec.saved_attrs:
        lines.append(f"    const auto& {a.name}_{attr} = {a.name}_{attr}_;")
    for a in spec.saved_values:
        if a.base == "int[]" and a.optional:
            lines.append(f"    OptionalIntArrayRef {a.name} = {a.name}_ ? OptionalIntArrayRef(IntArrayRef({a.name}_->data(), {a.name}_->size())) : std::nullopt;")
        elif a.base == "int[]":
            lines.append(f"    IntArrayRef {a.name}({a.name}_.data(), {a.name}_.size());")
        else:
            lines.append(f"    const auto& {a.name} = {a.name}_;")
    if spec.saved_outputs:
        lines.append("    auto self_node = shared_from_this();")
    for i, r in spec.saved_outputs:
        lines.append(f"    Tensor {r} = {r}_.unpack(self_node);")
    lines.append("    variable_list out(num_outputs());")
    lines.append("    size_t pos = 0;")
    names = [a.name for a in spec.inputs]
    for f, group in spec.groups.items():  # shared formulas: computed once, before the others
        slots = [names.index(n) for n in group]
        assert all(spec.inputs[i].base == "Tensor" for i in slots) and not any(
            a.base == "Tensor[]" for a in spec.inputs), f"{op.full_name}: grouped formulas take plain tensors"
        mask = ", ".join(f"should_compute_output({i})" for i in slots)
        lines.append(f"    {{ std::array<bool, {len(slots)}> grad_input_mask{{{mask}}};")
        lines.append("      if (" + " || ".join(f"grad_input_mask[{j}]" for j in range(len(slots))) + f") {{ auto g = {f};")
        for j, i in enumerate(slots):
            lines.append(f"        if (grad_input_mask[{j}]) out[{i}] = std::get<{j}>(g);")
        lines.append("      } }")
    for a in spec.inputs:
        f = spec.formulas[a.name]
        if f in spec.groups:
            lines.append("    ++pos;")
            continue
        if a.base == "Tensor[]":
            lines.append(f"    {{ bool any = false; for (size_t j = 0; j < {a.name}_count_; ++j) any = any || should_compute_output(pos + j);")
            lines.append(f"      if (any) {{ variable_list g = {f}; for (size_t j = 0; j < g.size(); ++j) out[pos + j] = g[j]; }}")
            lines.append(f"      pos += {a.name}_count_; }}")
        else:
            lines.append(f"    if (should_compute_output(pos)) out[pos] = {f};")
            lines.append("    ++pos;")
    if holo:
        lines.append("    if (conj_grads) conjugate_complex(out);")
    lines.append("    return out;")
    lines.append("  }")
    lines.append("};")
    return "\n".join(lines)


def save_lines(spec, node, inplace):
    """Statements saving what the formulas need (only when a formula using it runs)."""
    out = []

    def cond(token):
        idx = spec.needed_by(token)
        return " || ".join(f"{node}->should_compute_output({edge_pos(spec, i)})" for i in idx) or "false"

    for a in spec.saved_tensors:
        value = f"tp::clone({a.name})" if inplace and a.name == "self" else a.name
        if a.optional:
            value = f"({a.name} ? *{a.name} : Tensor())"
        out.append(f"  if ({cond(a.name)}) {node}->{a.name}_ = SavedVariable({value}, false);")
    for a in spec.saved_lists:
        out.append(f"  if ({cond(a.name)}) for (const Tensor& t : {a.name}) {node}->{a.name}_.emplace_back(t, false);")
    for a, attr in spec.saved_attrs:
        expr = SAVED_ATTRS[attr][1]
        if a.base == "Tensor[]":
            out.append(f"  for (const Tensor& t : {a.name}) {node}->{a.name}_{attr}_.push_back({expr.format(a='t')});")
        else:
            out.append(f"  {node}->{a.name}_{attr}_ = {expr.format(a=a.name)};")
    for a in spec.saved_values:
        out.append(f"  {node}->{a.name}_ = {value_init(a)};")
    return out


def edge_pos(spec, i):
    """The first edge index of input i (a runtime expression when lists come first)."""
    parts = [f"{a.name}.size()" if a.base == "Tensor[]" else "1" for a in spec.inputs[:i]]
    return " + ".join(parts) if parts else "0"


def jvp_mode(op):
    """How the op's outputs get their tangents (forward-mode AD): `jvp:` in the entry, else
    element_wise for pointwise ops, linear for views, from_backward otherwise."""
    j = op.entry.get("jvp")
    if isinstance(j, dict):
        return "formulas"
    if j in JVP_MODES:
        return j
    if j:
        return "formula"
    tags = op.entry.get("tags", [])
    # a formula in the complex convention (not holomorphic: abs, sgn, angle) is no tangent map
    if "pointwise" in tags and len(op.returns) == 1 and op.entry.get("complex_grad") != "direct":
        return "element_wise"
    if "view" in tags or "inplace_view" in tags:
        return "linear"
    return "from_backward"


JVP_MODES = ("element_wise", "linear", "multilinear", "reduction", "from_backward")


def attr_lines(spec):
    """Wrapper-scope definitions of the `<tensor>_sizes`-style names the tangent formulas use."""
    op = spec.op
    text = " ".join(spec.formulas.values()) + " " + str(op.entry.get("jvp", ""))
    out = []
    for a, attr in [(a, attr) for a in op.args if a.base in ("Tensor", "Tensor[]")
                    for attr in SAVED_ATTRS if uses(text, f"{a.name}_{attr}")]:
        expr = SAVED_ATTRS[attr][1]
        if a.base == "Tensor[]":
            typ = SAVED_ATTRS[attr][0]
            out.append(f"    std::vector<{typ}> {a.name}_{attr}; for (const Tensor& t : {a.name}) "
                       f"{a.name}_{attr}.push_back({expr.format(a='t')});")
        else:
            out.append(f"    [[maybe_unused]] auto {a.name}_{attr} = {expr.format(a=a.name)};")
    return out


def gen_jvp_function(spec, params):
    """The tangent formula of an op as a function in the nodes' namespace (where formulas
    call tp:: ops, not the wrappers): (op arguments, result, self before an in-place write)
    -> the result's tangent (undefined: none)."""
    op = spec.op
    jm = jvp_mode(op)
    self_tensor = any(a.name == "self" and a.base == "Tensor" for a in op.args)
    p = params.replace("const Tensor& self", "const Tensor& self_arg", 1) if self_tensor else params
    if jm == "formulas":  # one tangent per output, from the outputs by name
        outs = ", ".join(f"const Tensor& {r}" for r in op.returns)
        lines = [f"std::vector<Tensor> {spec.cls}_jvp({p}, {outs}, const Tensor& self_before) {{"]
    else:
        lines = [f"Tensor {spec.cls}_jvp({p}, const Tensor& result, const Tensor& self_before) {{"]
    if self_tensor:
        lines.append("  [[maybe_unused]] const Tensor& self = self_before.defined() ? self_before : self_arg;")
    zeros = jm not in ("element_wise", "multilinear", "reduction")
    for a in spec.inputs:
        src = "self_arg" if a.name == "self" and self_tensor else a.name
        if a.base == "Tensor[]":
            lines.append(f"  std::vector<Tensor> {a.name}_t = fw_grads_or_zeros({src});")
        elif a.optional:
            get = "fw_grad_or_zeros" if zeros else "fw_grad"
            lines.append(f"  Tensor {a.name}_t = {src} ? {get}(*{src}) : Tensor();")
        else:
            lines.append(f"  Tensor {a.name}_t = {'fw_grad_or_zeros' if zeros else 'fw_grad'}({src});")
    lines.append("  FwGradDisabledGuard fw_off;")
    lines += [line[2:] for line in attr_lines(spec)]
    if jm == "linear":
        fn = op.name.rstrip("_") if op.name.endswith("_") and "inplace" not in op.variants else op.name
        args = ", ".join(f"{a.name}_t" if a in spec.inputs else a.name for a in op.args)
        lines.append(f"  return tp::{fn}({args});")
    elif jm == "formula":
        lines.append(f"  return {op.entry['jvp']};")
    elif jm == "formulas":
        exprs = op.entry["jvp"]
        items = ", ".join(exprs[r] if r in exprs else "Tensor()" for r in op.returns)
        lines.append(f"  return {{{items}}};")
    elif jm == "reduction":
        args = {a.name: a for a in op.args}
        dim = args.get("dim")
        if dim is None:
            dim_expr = "std::nullopt"
        elif dim.type == "int":
            dim_expr = "IntArrayRef(&dim, 1)"
        elif dim.type == "int?":
            dim_expr = "dim ? OptionalIntArrayRef(IntArrayRef(&*dim, 1)) : OptionalIntArrayRef()"
        else:
            dim_expr = "dim"
        keepdim = "keepdim" if "keepdim" in args else "false"
        (a,) = spec.inputs
        lines.append(f"  if (!{a.name}_t.defined()) return Tensor();")
        lines.append("  Tensor grad = ones(result.sizes(), result.dtype(), result.device());")
        lines.append(f"  Tensor partial = {spec.formulas[a.name]};")
        if op.entry.get("complex_grad") == "direct":
            # a real result of a complex input (var, std): partial is PyTorch's conjugate
            # convention, so the tangent is Re(conj(partial) * t)
            lines.append(f"  if (is_complex(partial.dtype()) && !is_complex(result.dtype())) "
                         f"return sum(real(conj_physical(partial) * {a.name}_t), {dim_expr}, {keepdim});")
        lines.append(f"  return sum(partial * {a.name}_t, {dim_expr}, {keepdim});")
    elif jm == "multilinear":
        lines.append("  Tensor result_t;")
        for a in spec.inputs:
            args = ", ".join(f"{x.name}_t" if x is a else x.name for x in op.args)
            lines.append(f"  if ({a.name}_t.defined()) {{ Tensor term = tp::{op.name}({args}); "
                         "result_t = result_t.defined() ? add(result_t, term) : term; }")
        lines.append("  return result_t;")
    else:
        lines.append("  Tensor result_t;")
        for a in spec.inputs:
            f = spec.formulas[a.name]
            lines.append(f"  if ({a.name}_t.defined()) {{ const Tensor& grad = {a.name}_t; "
                         f"Tensor term = {f}; result_t = result_t.defined() ? add(result_t, term) : term; }}")
        lines.append("  return result_t;")
    lines.append("}")
    return "\n".join(lines)


def gen_fw(spec, inplace, outs, call_args):
    """The statements giving the outputs their tangents (Note [Forward AD])."""
    op = spec.op
    lines = ["  if (fw) {"]
    if jvp_mode(op) == "from_backward":
        differentiable = op.entry.get("output_differentiability", [True] * len(outs))
        names = ["self"] if inplace else [r for i, r in enumerate(outs) if differentiable[i]]
        lines.append("    std::vector<Tensor> fw_outs;")
        for r in names:
            lines.append(f"    if (is_floating_or_complex({r}.dtype())) {{ fw_outs.push_back({r}); "
                         f"fw_node->add_input_metadata({r}); }}")
        lines.append("    auto fw_ts = jvp_from_backward(*fw_node, fw_outs, fw_tangents);")
        lines.append("    size_t k = 0;")
        for r in names:
            target = "set_inplace_fw_grad(self, fw_ts[k++])" if inplace else f"set_fw_grad({r}, fw_ts[k++])"
            lines.append(f"    if (is_floating_or_complex({r}.dtype())) {target};")
    elif jvp_mode(op) == "formulas":
        lines.append(f"    auto fw_ts = {spec.cls}_jvp({call_args}, {', '.join(outs)}, Tensor());")
        for i, r in enumerate(outs):
            lines.append(f"    if (fw_ts[{i}].defined() && is_floating_or_complex({r}.dtype())) set_fw_grad({r}, fw_ts[{i}]);")
    else:
        before = "fw_self_before" if inplace else "Tensor()"
        lines.append(f"    Tensor result_t = {spec.cls}_jvp({call_args}, result, {before});")
        target = "set_inplace_fw_grad(self, result_t)" if inplace else "set_fw_grad(result, result_t)"
        lines.append(f"    if (result_t.defined() && is_floating_or_complex(result.dtype())) {target};")
    lines.append("  }")
    return lines


def gen_wrapper(spec, kernel_call, params, inplace_variant, call_args):
    """The recording wrapper of one op variant (function or in-place): records the backward
    node when an input requires grad and gives the outputs tangents when an input has one.
    Ops named with a trailing underscore (copy_, fill_) write into self whatever the variant."""
    op = spec.op
    name = op.name + ("_" if inplace_variant else "")
    ret = "Tensor&" if inplace_variant else op.ret
    inplace = inplace_variant or op.name.endswith("_")
    formulas = mode(op) == "formulas"
    # Note [In-place view ops] (resize_ and set_ carry the tag too, without formulas)
    inplace_view = "inplace_view" in op.entry.get("tags", []) and formulas
    lines = [f"{ret} {name}({params}) {{"]
    edges = ", ".join(a.name for a in spec.inputs)
    lines.append(f"  const bool record = grad_enabled() && any_requires_grad({edges});")
    lines.append(f"  const bool fw = fw_grad_enabled() && any_fw_grad({edges});")
    if not formulas:
        lines.append(f'  if (fw) fw_not_implemented("{op.name}");')
    if inplace:
        lines.append("  check_inplace(self);")
    node_type = spec.cls if formulas else "NotImplementedBackward"
    ctor = "" if formulas else f'"{op.name}", "{spec.name}"'
    lines.append(f"  std::shared_ptr<{node_type}> node;")
    lines.append("  if (record) {")
    lines.append(f"  node = std::make_shared<{node_type}>({ctor});")
    lines.append(f"  node->next_edges_ = collect_edges({edges});")
    lines.append("  node->forward_trace_ = current_forward_trace();")
    counts = [a for a in spec.inputs if a.base == "Tensor[]" and formulas]
    for a in counts:
        lines.append(f"  node->{a.name}_count_ = {a.name}.size();")
    if formulas:
        lines += save_lines(spec, "node", inplace)
    lines.append("  }")
    outs = op.returns if len(op.returns) > 1 else ["result"]
    jm = jvp_mode(op) if formulas else None
    if jm == "from_backward":
        lines.append(f"  std::shared_ptr<{node_type}> fw_node;")
        lines.append("  std::vector<Tensor> fw_tangents;")
        lines.append("  if (fw) {")
        lines.append(f"  fw_tangents = collect_tangents({edges});")
        lines.append(f"  fw_node = std::make_shared<{node_type}>();")
        lines.append("  fw_node->next_edges_ = fw_edges(fw_tangents);")
        for a in counts:
            lines.append(f"  fw_node->{a.name}_count_ = {a.name}.size();")
        lines += save_lines(spec, "fw_node", inplace)
        lines.append("  }")
    elif inplace_view:  # Note [In-place view ops]: the tangent takes the same view op
        lines.append("  Tensor fw_self_t;")
        lines.append("  if (fw) fw_self_t = fw_grad(self);")
    elif jm and inplace:
        lines.append("  Tensor fw_self_before;")
        lines.append("  if (fw) { FwGradDisabledGuard fw_off; fw_self_before = tp::clone(self); }")
    if inplace:
        lines.append(f"  {{ GradModeGuard no_grad(false); FwGradDisabledGuard fw_off; {kernel_call}; }}")
        lines.append("  if (record) " + ("set_inplace_view_history" if inplace_view else "rebase_history")
                     + "(self, node);")
        lines.append("  [[maybe_unused]] const Tensor& result = self;")
    elif len(outs) == 1:
        lines.append("  Tensor result;")
        lines.append(f"  {{ GradModeGuard no_grad(false); FwGradDisabledGuard fw_off; result = {kernel_call}; }}")
        # An op that hands back its input itself (contiguous, same-dtype conversion) records
        # nothing, as in PyTorch: the input keeps its history (and its tangent).
        same = [a.name for a in op.args if a.base == "Tensor" and not a.optional]
        if same:
            cond = " || ".join(f"result.is_same({n})" for n in same)
            lines.append(f"  if ({cond}) return result;")
        lines.append(f"  if (record && is_floating_or_complex(result.dtype())) set_history(result, node);")
    else:
        lines.append(f"  {op.ret} res;")
        lines.append(f"  {{ GradModeGuard no_grad(false); FwGradDisabledGuard fw_off; res = {kernel_call}; }}")
        differentiable = op.entry.get("output_differentiability", [True] * len(outs))
        for i, r in enumerate(outs):
            lines.append(f"  [[maybe_unused]] const Tensor& {r} = std::get<{i}>(res);")
            if differentiable[i]:
                lines.append(f"  if (record && is_floating_or_complex({r}.dtype())) set_history({r}, node);")
    if formulas:
        for i, r in spec.saved_outputs:
            lines.append(f"  if (record) node->{r}_ = SavedVariable({r}, true);")
            if jm == "from_backward":
                lines.append(f"  if (fw) fw_node->{r}_ = SavedVariable({r}, false);")
    if "view" in op.entry.get("tags", []) and not inplace:
        lines.append("  if (record) set_view_base(result, self);")
    if inplace_view:
        rest = ", ".join(["fw_self_t"] + [x.name for x in op.args[1:]])
        lines.append("  if (fw_self_t.defined()) { GradModeGuard no_grad(false); FwGradDisabledGuard fw_off; "
                     f"tp::{op.name}({rest}); }}")
    elif formulas:
        lines += gen_fw(spec, inplace, outs, call_args)
    lines.append("  return " + ("self" if inplace else ("result" if len(outs) == 1 else "res")) + ";")
    lines.append("}")
    return "\n".join(lines)


def records(op):
    """Whether the op's API records autograd history itself (a wrapper exists)."""
    rec = mode(op) in ("formulas", "missing") and bool(edge_inputs(op))
    if rec and any(a.name in ("result", "grad", "grads", "node") for a in op.args):
        raise ValueError(f"{op.full_name}: an argument named like a formula variable needs "
                         "`derivatives: non_differentiable` or a rename")
    return rec


def gen_autograd(ops, params, call_args, kernel_expr):
    """(header, source) of the generated autograd layer."""
    header = ["// Generated from csrc/ops/*.yaml. Do not edit.", "#pragma once",
              '#include "tensorplay/ops_api.h"', "namespace tp::autograd_gen {"]
    # Nodes live apart from the wrappers: formulas call tp::log, not the wrapper log.
    source = ["// Generated from csrc/ops/*.yaml. Do not edit.",
              '#include "tensorplay/autograd_ops.h"',
              '#include "autograd/formula_helpers.h"',
              "namespace tp::autograd_nodes {",
              "using namespace tp::autograd;"]
    wrappers = []
    for op in ops:
        if not records(op):
            continue
        spec = NodeSpec(op, ops)
        p = params(op, False)
        a = call_args(op)
        if mode(op) == "formulas":
            source.append(gen_node(spec))
            if jvp_mode(op) != "from_backward" and "inplace_view" not in op.entry.get("tags", []):
                source.append(gen_jvp_function(spec, p))
        if "function" in op.variants or "method" in op.variants:
            header.append(f"{op.ret} {op.name}({p});")
            wrappers.append(gen_wrapper(spec, f"{kernel_expr(op)}({a}, OutArg::none())", p, False, a))
        if "inplace" in op.variants:
            ip = p.replace("const Tensor& self", "Tensor& self", 1)
            header.append(f"Tensor& {op.name}_({ip});")
            wrappers.append(gen_wrapper(spec, f"{kernel_expr(op)}({a}, OutArg{{&self, true}})", ip, True, a))
    source += ["}  // namespace tp::autograd_nodes", "namespace tp::autograd_gen {",
               "using namespace tp::autograd;", "using namespace tp::autograd_nodes;"]
    source += wrappers
    source.append("}  // namespace tp::autograd_gen")
    header.append("}  // namespace tp::autograd_gen")
    return "\n".join(header) + "\n", "\n".join(source) + "\n"
