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
`node:` overrides the node's name where PyTorch's differs (_to_dtype -> ToCopyBackward0).
`output_differentiability:` (a list of booleans, one per output) marks the outputs that
never require grad although floating (lstsq's singular_values), as PyTorch's key does.

Names a formula may use: `grad` (gradient of the first output), `grads[i]`, `result`
(the output) or the names of a tuple's outputs, every argument by name (tensors are
saved, with a version check), `<tensor>_sizes`, `_strides`, `_storage_offset`, `_dtype`,
`_dim`, and
for Tensor[] arguments `<list>_sizes` (a vector of sizes). A formula for a Tensor[]
argument returns a variable_list.
"""
import re

SAVED_ATTRS = {"sizes": ("DimVector", "DimVector({a}.sizes().data(), {a}.sizes().size())"),
               "strides": ("DimVector", "DimVector({a}.strides().data(), {a}.strides().size())"),
               "storage_offset": ("int64_t", "{a}.storage_offset()"),
               "dtype": ("DType", "{a}.dtype()"),
               "dim": ("int64_t", "{a}.dim()")}
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
    lines = [f"struct {spec.name} final : Node {{",
             f'  std::string name() const override {{ return "{spec.name}"; }}']
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


def gen_wrapper(spec, kernel_call, params, inplace_variant):
    """The recording wrapper of one op variant (function or in-place). Ops named with a
    trailing underscore (copy_, fill_) write into self whatever the variant."""
    op = spec.op
    name = op.name + ("_" if inplace_variant else "")
    ret = "Tensor&" if inplace_variant else op.ret
    inplace = inplace_variant or op.name.endswith("_")
    node = "node"
    lines = [f"{ret} {name}({params}) {{"]
    if inplace:
        lines.append("  check_inplace(self);")
    node_type = spec.name if mode(op) == "formulas" else "NotImplementedBackward"
    ctor = "" if mode(op) == "formulas" else f'"{op.name}", "{spec.name}"'
    lines.append(f"  auto {node} = std::make_shared<{node_type}>({ctor});")
    edges = ", ".join(a.name for a in spec.inputs)
    lines.append(f"  {node}->next_edges_ = collect_edges({edges});")
    lines.append(f"  {node}->forward_trace_ = current_forward_trace();")
    for a in spec.inputs:
        if a.base == "Tensor[]" and mode(op) == "formulas":
            lines.append(f"  {node}->{a.name}_count_ = {a.name}.size();")
    if mode(op) == "formulas":
        lines += save_lines(spec, node, inplace)
    outs = op.returns if len(op.returns) > 1 else ["result"]
    if inplace:
        lines.append(f"  {{ GradModeGuard no_grad(false); {kernel_call}; }}")
        lines.append(f"  rebase_history(self, {node});")
        lines.append("  [[maybe_unused]] const Tensor& result = self;")
    elif len(outs) == 1:
        lines.append("  Tensor result;")
        lines.append(f"  {{ GradModeGuard no_grad(false); result = {kernel_call}; }}")
        # An op that hands back its input itself (contiguous, same-dtype conversion) records
        # nothing, as in PyTorch: the input keeps its history.
        same = [a.name for a in op.args if a.base == "Tensor" and not a.optional]
        if same:
            cond = " || ".join(f"result.is_same({n})" for n in same)
            lines.append(f"  if ({cond}) return result;")
        lines.append(f"  if (is_floating(result.dtype())) set_history(result, {node});")
    else:
        lines.append(f"  {op.ret} res;")
        lines.append(f"  {{ GradModeGuard no_grad(false); res = {kernel_call}; }}")
        differentiable = op.entry.get("output_differentiability", [True] * len(outs))
        for i, r in enumerate(outs):
            if differentiable[i]:
                lines.append(f"  const Tensor& {r} = std::get<{i}>(res);")
                lines.append(f"  if (is_floating({r}.dtype())) set_history({r}, {node});")
    for i, r in spec.saved_outputs if mode(op) == "formulas" else []:
        lines.append(f"  {node}->{r}_ = SavedVariable({r}, true);")
    if "view" in op.entry.get("tags", []) and not inplace:
        lines.append("  set_view_base(result, self);")
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
        if mode(op) == "formulas":
            source.append(gen_node(spec))
        p = params(op, False)
        a = call_args(op)
        if "function" in op.variants or "method" in op.variants:
            header.append(f"{op.ret} {op.name}({p});")
            wrappers.append(gen_wrapper(spec, f"{kernel_expr(op)}({a}, OutArg::none())", p, False))
        if "inplace" in op.variants:
            ip = p.replace("const Tensor& self", "Tensor& self", 1)
            header.append(f"Tensor& {op.name}_({ip});")
            wrappers.append(gen_wrapper(spec, f"{kernel_expr(op)}({a}, OutArg{{&self, true}})", ip, True))
    source += ["}  // namespace tp::autograd_nodes", "namespace tp::autograd_gen {",
               "using namespace tp::autograd;", "using namespace tp::autograd_nodes;"]
    source += wrappers
    source.append("}  // namespace tp::autograd_gen")
    header.append("}  // namespace tp::autograd_gen")
    return "\n".join(header) + "\n", "\n".join(source) + "\n"
