"""Generates TensorPlay's op layer from csrc/ops/*.yaml.

Schema types: Tensor, Tensor?, Tensor[] (C++ TensorList, Python any sequence of
tensors), Scalar, int, int?, int[], float, bool, str (default in quotes), str?,
ScalarType?, Device?, Generator?. Returns: Tensor, a named tuple of 2 to 4 tensors, or
`()` (nothing: an op that only writes into its arguments, e.g. _fused_adam_).

Usage: gen.py OPS_YAML OUT_DIR. Writes, under OUT_DIR:
  tensorplay/ops_api.h        C++ API (tp::add, tp::add_, tp::add_out), op ids, impl decls
  tensorplay/pointwise_kernels.h  the PwKernel enum (one per functor)
  ops_api.cpp                 generated pointwise kernels, API bodies, registry entries
  cpu_kernels_N.cpp           CPU loop instantiations per functor and dtype
  cuda_kernels_N.cu           CUDA launch instantiations (compiled in CUDA builds only)
  python_ops.cpp              nanobind bindings (functions, methods, in-place methods)
  boxed_ops.cpp               each form's schema and boxed entry (gen_boxed.py)
csrc/ops/autocast.yaml (per-device autocast policies, not ops) adds the autocast prologue of
each listed op's API function and the policy table autocast::find_policy reads.
Files are rewritten only when their text changes, so rebuilds stay incremental.
"""
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from gen_autograd import gen_autograd, records, mode
from gen_boxed import gen_boxed

DTYPE_SETS = {
    "all": ["Bool", "UInt8", "Int8", "Int16", "Int32", "Int64", "Float32", "Float64"],
    "numeric": ["UInt8", "Int8", "Int16", "Int32", "Int64", "Float32", "Float64"],
    "float": ["Float32", "Float64"],
    "int": ["UInt8", "Int8", "Int16", "Int32", "Int64"],
    "intbool": ["Bool", "UInt8", "Int8", "Int16", "Int32", "Int64"],
}
CPP_TYPE = {"Bool": "bool", "UInt8": "uint8_t", "Int8": "int8_t", "Int16": "int16_t",
            "Int32": "int32_t", "Int64": "int64_t", "Float32": "float", "Float64": "double",
            "Complex64": "::tp::complex64_t", "Complex128": "::tp::complex128_t"}
# A kernel with `complex: true` also instantiates for the complex types on the CPU (Note
# [Complex functors]).
COMPLEX_DTYPES = ["Complex64", "Complex128"]
PROMOTE = {"common": "Promote::Common", "int_to_float": "Promote::IntToFloat",
           "bool_out": "Promote::BoolOut", "same": "Promote::Same",
           "bool_out_only": "Promote::BoolOutOnly"}
CPU_SHARDS = 3  # also cpu_stubs.h's kPointwiseShards
CUDA_SHARDS = 16


@dataclass
class Arg:
    type: str
    name: str
    default: str | None
    kwonly: bool

    @property
    def optional(self):
        return self.type.endswith("?")

    @property
    def base(self):
        return self.type.rstrip("?")


@dataclass
class Op:
    name: str          # "pow"
    overload: str      # "Scalar" or ""
    args: list
    entry: dict
    variants: list = field(default_factory=list)
    returns: list = field(default_factory=lambda: ["Tensor"])  # names of tuple fields, one, or none

    @property
    def ret(self):
        """The C++ return type: Tensor, std::tuple<Tensor, ...> for a named-tuple op, or
        void for an op returning `()`."""
        if not self.returns:
            return "void"
        if len(self.returns) == 1:
            return "Tensor"
        return f"std::tuple<{', '.join(['Tensor'] * len(self.returns))}>"

    @property
    def full_name(self):
        return f"{self.name}.{self.overload}" if self.overload else self.name

    @property
    def ident(self):
        return self.full_name.replace(".", "_")

    @property
    def tensor_args(self):
        return [a for a in self.args if a.base == "Tensor" and not a.optional]


def plain_type(t):
    """A schema type without what the C++ API does not distinguish: alias annotations
    (`Tensor(a!)`), SymInt (an int here), list sizes (`int[2]`)."""
    t = re.sub(r"(?<=\w)\([^)]*\)", "", t)
    t = t.replace("SymInt", "int")
    return re.sub(r"\[\d+\]", "[]", t)


def parse_schema(text):
    """PyTorch's schema notation -> (name, overload, args, return names). Types are kept
    plain (plain_type); the registry keeps the full text (csrc/dispatch/schema.cpp)."""
    m = re.fullmatch(r"\s*([\w.]+)\((.*)\)\s*->\s*(.+)", text)
    if not m:
        raise ValueError(f"bad schema: {text}")
    name, argstr, ret = m.groups()
    name, _, overload = name.partition(".")
    args, kwonly = [], False
    # split on commas outside brackets (int[] dims=[0, 1])
    for part in [p.strip() for p in re.split(r",(?![^\[]*\])", argstr) if p.strip()]:
        if part == "*":
            kwonly = True
            continue
        decl, _, default = part.partition("=")
        typ, argname = decl.rsplit(None, 1)
        args.append(Arg(plain_type(typ.replace(" ", "")), argname, default.strip() or None, kwonly))
    ret = plain_type(ret.strip())
    returns = ["Tensor"] if ret == "Tensor" else [] if ret == "()" else \
        [r.split()[1] for r in ret.strip("()").split(",")]  # "(Tensor values, Tensor indices)"
    return name, overload, args, returns


# ------------------------------------------------------------------ C++ API types
def cpp_type(a):
    base = {"Tensor": "Tensor", "Scalar": "Scalar", "int": "int64_t", "float": "double",
            "bool": "bool", "str": "std::string", "ScalarType": "DType", "Device": "Device",
            "Generator": "Generator"}
    if a.base == "int[]":
        return "OptionalIntArrayRef" if a.optional else "IntArrayRef"
    if a.base == "Tensor[]":
        return "TensorList"
    t = base[a.base]
    if a.optional:
        return f"const std::optional<{t}>&"
    return f"const {t}&" if t in ("Tensor", "Scalar", "std::string") else t


def cpp_default(a):
    d = a.default
    if d is None:
        return ""
    if d == "None":
        return " = std::nullopt"
    if d in ("True", "False"):
        return " = " + d.lower()
    if a.base == "str":
        return " = " + str_literal(d)
    if a.base == "Scalar":
        return f" = Scalar({'int64_t(' + d + ')' if '.' not in d else d})"
    if a.base == "int[]":  # the temporary array lives until the end of the call
        vals = int_list_default(d)
        return f" = std::array<int64_t, {len(vals)}>{{{', '.join(vals)}}}" if vals else " = {}"
    return " = " + d


def str_literal(d):
    """"'reduced'" (a schema default) -> '"reduced"' (a C++ string literal)."""
    return '"' + d.strip("'\"") + '"'


def int_list_default(d):
    """'[0, 1]' -> ['0', '1']."""
    return [v.strip() for v in d.strip("[]").split(",") if v.strip()]


def params(op, defaults=True):
    return ", ".join(f"{cpp_type(a)} {a.name}{cpp_default(a) if defaults else ''}" for a in op.args)


def call_args(op):
    return ", ".join(a.name for a in op.args)


def kernel_sig(op):
    return f"{op.ret}(*)({', '.join([cpp_type(a) for a in op.args] + ['OutArg'])})"


def key_expr(op):
    tensors = op.tensor_args
    if tensors:
        return f"dispatch_key_of({tensors[0].name})"
    lists = [a for a in op.args if a.base == "Tensor[]"]
    if lists:  # an empty list is the kernel's error to report, on CPU
        t = lists[0].name
        return f"({t}.empty() ? DispatchKey::CPU : dispatch_key_of({t}[0]))"
    dev = [a for a in op.args if a.base == "Device"]
    if dev:
        return f"({dev[0].name} ? backend_key({dev[0].name}->type) : DispatchKey::CPU)"
    return "DispatchKey::CPU"


# ------------------------------------------------------------------ generation
def load(op_dir):
    """ops.yaml holds the pointwise kernels and the foundation ops; every other
    csrc/ops/<family>.yaml (or csrc/ops/<family>/<family>.yaml, for a family with its own
    folder) adds the ops of one family (same entry format)."""
    op_dir = Path(op_dir)
    data = yaml.safe_load((op_dir / "ops.yaml").read_text())
    entries = list(data["ops"])
    for extra in sorted([*op_dir.glob("*.yaml"), *op_dir.glob("*/*.yaml")]):
        if extra.name not in ("ops.yaml", AUTOCAST_YAML):
            entries += yaml.safe_load(extra.read_text()).get("ops") or []
    ops = []
    for e in entries:
        name, overload, args, returns = parse_schema(e["func"])
        op = Op(name, overload, args, e, list(e.get("variants", ["function"])), returns)
        if len(returns) > 1 and "inplace" in op.variants:
            raise ValueError(f"{op.full_name}: tuple-returning ops have no in-place form")
        if not returns and op.variants != ["function"]:
            raise ValueError(f"{op.full_name}: an op returning nothing is a function only")
        if any(o.full_name == op.full_name for o in ops):
            raise ValueError(f"{op.full_name}: defined twice in csrc/ops/*.yaml")
        ops.append(op)
    return data["kernels"], ops


# ------------------------------------------------------------------ autocast
AUTOCAST_YAML = "autocast.yaml"
AUTOCAST_DEVICES = ("cpu", "cuda")
AUTOCAST_POLICY = {"lower_precision": "LowerPrecision", "fp32": "Fp32", "promote": "Promote",
                   "banned": "Banned"}


def load_autocast(op_dir, ops):
    """csrc/ops/autocast.yaml -> {name: {"cpu": policy, "cuda": policy, "banned": message}}.
    Every name must be a C++ op or listed under `functional:` (Python-level functions)."""
    data = yaml.safe_load((Path(op_dir) / AUTOCAST_YAML).read_text())
    known = {o.name for o in ops} | set(data["functional"])
    table = {}
    for dev in AUTOCAST_DEVICES:
        for policy, names in data[dev].items():
            if policy not in AUTOCAST_POLICY:
                raise ValueError(f"{AUTOCAST_YAML}: unknown policy {policy}")
            for name in names:
                if name not in known:
                    raise ValueError(f"{AUTOCAST_YAML}: {name} is neither an op nor a functional")
                entry = table.setdefault(name, {"cpu": "None", "cuda": "None", "banned": None})
                if entry[dev] != "None":
                    raise ValueError(f"{AUTOCAST_YAML}: {name} listed twice for {dev}")
                entry[dev] = AUTOCAST_POLICY[policy]
                if policy == "banned":
                    entry["banned"] = names[name]
    return table


def cpp_string(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def autocast_prologue(op, entry):
    """The start of a listed op's out-of-place API function: Note [Autocast redispatch]."""
    tensors = [a for a in op.args if a.base in ("Tensor", "Tensor[]")]
    if not tensors:
        return ""
    first = op.tensor_args[0] if op.tensor_args else None
    if first is not None:
        first_ptr = f"&{first.name}"
    else:
        lst = next(a for a in op.args if a.base == "Tensor[]")
        first_ptr = f"({lst.name}.empty() ? nullptr : &{lst.name}[0])"
    # an explicit dtype= is the caller's choice: PyTorch does not autocast such calls
    cond = "autocast::armed()" + (" && !dtype" if any(a.name == "dtype" and a.base == "ScalarType"
                                                       for a in op.args) else "")
    banned = cpp_string(entry["banned"]) if entry["banned"] else "nullptr"
    names = ", ".join(a.name for a in tensors)
    cast_args = ", ".join(f"ac.cast({a.name})" if a in tensors else a.name for a in op.args)
    widen = f"ac.widen({names}); " if "Promote" in (entry["cpu"], entry["cuda"]) else ""
    return (f"  if ({cond}) [[unlikely]] {{\n"
            f"    autocast::Redispatch ac(autocast::Policy::{entry['cpu']}, "
            f"autocast::Policy::{entry['cuda']}, \"{op.name}\", {banned}, {first_ptr});\n"
            f"    if (ac) {{ {widen}return {op.name}({cast_args}); }}\n"
            f"  }}\n")


def gen_autocast_table(table):
    rows = [f'    {{"{name}", autocast::Policy::{e["cpu"]}, autocast::Policy::{e["cuda"]}, '
            f'{cpp_string(e["banned"]) if e["banned"] else "nullptr"}}},'
            for name, e in sorted(table.items())]
    return ["const autocast::OpPolicy* autocast::find_policy(std::string_view name) {",
            "  static constexpr autocast::OpPolicy table[] = {", *rows, "  };",
            "  for (const auto& e : table)",
            "    if (name == e.name) return &e;",
            "  return nullptr;",
            "}"]


def gen_kernel_enum(kernels):
    names = list(kernels)
    body = ",\n  ".join(names)
    strs = ", ".join(f'"{n}"' for n in names)
    return f"""// Generated from ops.yaml. Do not edit.
#pragma once
namespace tp {{
/// One id per pointwise functor; indexes each backend's loop table.
enum class PwKernel : int {{
  {body},
  kCount
}};
inline const char* pw_kernel_name(PwKernel k) {{
  static constexpr const char* names[] = {{{strs}}};
  return names[int(k)];
}}
}}  // namespace tp
"""


def gen_api_header(ops):
    decls, impls, checks, ids = [], [], set(), []
    for i, op in enumerate(ops):
        ids.append(f"constexpr int kOp_{op.ident} = {i};")
        p = params(op)
        if "function" in op.variants or "method" in op.variants:
            decls.append(f"{op.ret} {op.name}({p});")
        if "inplace" in op.variants:
            ip = p.replace("const Tensor& self", "Tensor& self", 1)
            decls.append(f"Tensor& {op.name}_({ip});")
        if "out" in op.variants and len(op.returns) == 1:
            decls.append(f"Tensor& {op.name}_out(Tensor& out, {p});")
        if has_python_key(op):
            sep = ", " if p else ""
            decls.append(f"{op.ret} kernel_call_{op.ident}({params(op, False)}{sep}OutArg out);")
            decls.append(f"{op.ret} fallback_{op.ident}(DispatchKey dk_{', ' if p else ''}{params(op, False)}{sep}OutArg out);")
        fn = op.entry.get("impl") or op.entry.get("composite")
        if fn:
            impls.append(f"{op.ret} {fn}({params(op, False)}, OutArg out);")
        if op.entry.get("cuda_impl"):  # defined in the CUDA backend's folder (csrc/cuda/...)
            impls.append(f"{op.ret} {op.entry['cuda_impl']}({params(op, False)}, OutArg out);")
        if "check" in op.entry:  # check_out: the check also takes the out= (OutArg)
            extra = ", OutArg out" if op.entry.get("check_out") else ""
            checks.add(f"void {op.entry['check']}({params(op, False)}{extra});")
    return "\n".join([
        "// Generated from ops.yaml. Do not edit.",
        "#pragma once",
        "#include <array>",
        "#include <optional>",
        "#include <tuple>",
        "#include <span>",
        "#include <string>",
        '#include "core/generator.h"',
        '#include "core/scalar.h"',
        '#include "core/tensor_impl.h"',
        '#include "dispatch/registry.h"',
        '#include "kernels/tensor_iterator.h"',
        "namespace tp {",
        "/// A `Tensor[]` argument (cat, stack, ...).",
        "using TensorList = std::span<const Tensor>;",
        *ids,
        f"constexpr int kNumBuiltinOps = {len(ops)};",
        "/// Adds the built-in ops to the registry (called once at import).",
        "void register_builtin_ops();",
        "/// Adds their forms' schemas and boxed entries (boxed_ops.cpp; after register_builtin_ops).",
        "void register_boxed_ops();",
        "// ---- C++ API",
        *decls,
        "// ---- hand-written kernels (csrc/ops/*.cpp)",
        *dict.fromkeys(impls),
        *sorted(checks),
        "}  // namespace tp", ""])


def has_python_key(op):
    """Whether calls of the op can reach the Python key: every op but a composite whose
    gradient flows through its decomposition (`derivatives: decomposed`, PyTorch's
    CompositeImplicitAutograd): that one runs its decomposition, whose ops can (Note
    [Dispatch keys]). A composite with its own formulas (views, cat, logsumexp) is one op to
    a mode, as PyTorch's CompositeExplicitAutograd kernels are."""
    return not ("composite" in op.entry and mode(op) == "decomposed")


def raw_kernel_expr(op):
    return f"reinterpret_cast<{kernel_sig(op)}>(lookup_kernel(kOp_{op.ident}, {key_expr(op)}))"


def kernel_expr(op):
    """The callee below Autocast and Autograd: kernel_call_<op> (the Python key, then the
    backend kernel) or, for a composite-only op, its kernel."""
    return f"kernel_call_{op.ident}" if has_python_key(op) else raw_kernel_expr(op)


def reads_math_bits(op):
    """Whether the op handles conjugate and negative bits itself, skipping the Conjugate key
    (Note [Conjugate and negative bits], csrc/dispatch/math_bits.cpp): the views (their
    results keep the bits; in-place view changes reshape the tensor itself) and the entries
    marked `math_bits: aware` (reshape, contiguous, the matrix products reading a conjugate
    operand through BLAS), and the kernels whose gradient flows through their decomposition
    (the fallback runs below autograd: they resolve their operands themselves)."""
    tags = op.entry.get("tags", [])
    return ("view" in tags or "inplace_view" in tags or op.entry.get("math_bits") == "aware"
            or mode(op) == "decomposed")  # resolves its operands through autograd (dispatch/math_bits.h)


def gen_kernel_calls(ops):
    """kernel_call_<op>: a call below Autograd goes to the Conjugate key when a tensor has a
    conjugate or negative bit, to the Python key when a mode or a tensor subclass asks for
    it, else to the backend kernel, else to the backend key's boxed fallback (fallback_<op>,
    boxed_ops.cpp; Note [Boxed fallbacks]). Both checks read one byte per tensor."""
    out = []
    for op in ops:
        if not has_python_key(op):
            continue
        p, a = params(op, False), call_args(op)
        aa = f"{a}{', ' if a else ''}out"
        tensors = ", ".join(x.name for x in op.args if x.base in ("Tensor", "Tensor[]")) or ""
        if reads_math_bits(op):
            special = (f"  if (dispatch::python_key({tensors})) [[unlikely]] "
                       f"return fallback_{op.ident}(DispatchKey::Python, {aa});\n")
        else:
            special = (f"  if (const DispatchKey sk_ = dispatch::special_key({tensors}{', ' if tensors else ''}out); "
                       f"sk_ != DispatchKey::kCount) [[unlikely]] return fallback_{op.ident}(sk_, {aa});\n")
        out.append(f"{op.ret} kernel_call_{op.ident}({p}{', ' if p else ''}OutArg out) {{\n"
                   + special +
                   f"  const DispatchKey dk_ = {key_expr(op)};\n"
                   f"  void* k_ = find_kernel(kOp_{op.ident}, dk_);\n"
                   f"  if (!k_) [[unlikely]] return fallback_{op.ident}(dk_, {aa});\n"
                   f"  return reinterpret_cast<{kernel_sig(op)}>(k_)({aa});\n}}")
    return out


def grad_tensor_args(op):
    return ", ".join(a.name for a in op.args if a.base in ("Tensor", "Tensor[]"))


def py_name(op):
    """The name users call the op by: linalg_<name> ops are tp.linalg.<name>, special_<name>
    ops tp.special.<name>."""
    for ns in ("linalg", "special"):
        if op.name.startswith(ns + "_"):
            return ns + "." + op.name[len(ns) + 1:]
    return op.name


def gen_api_source(ops, autocast):
    out = ["// Generated from ops.yaml. Do not edit.",
           '#include "tensorplay/ops_api.h"',
           '#include "tensorplay/autograd_ops.h"',
           '#include "autograd/autocast.h"',
           '#include "autograd/record.h"',
           '#include "core/error.h"',
           '#include "dispatch/math_bits.h"',
           '#include "ops/pointwise.h"',
           "namespace tp {", "namespace {"]
    for op in ops:
        pw = op.entry.get("pointwise")
        if not pw:
            continue
        out.append(f"Tensor pw_{op.ident}({params(op, False)}, OutArg out) {{")
        if "check" in op.entry:
            extra = ", out" if op.entry.get("check_out") else ""
            out.append(f"  {op.entry['check']}({call_args(op)}{extra});")
        out.append("  KernelParams p;")
        for slot, argname in (pw.get("params") or {}).items():
            out.append(f"  p.{slot} = {argname};")
        ins = ", ".join(f"&{a.name}" for a in op.tensor_args)
        out.append(f'  return run_pointwise(PwKernel::{pw["kernel"]}, '
                   f'IterConfig{{"{op.name}", {PROMOTE[pw.get("promote", "common")]}}}, '
                   f"out, {{{ins}}}, p);")
        out.append("}")
    out.append("}  // namespace")
    out += gen_kernel_calls(ops)
    for op in ops:
        k = kernel_expr(op)
        p, a = params(op, False), call_args(op)
        targs = grad_tensor_args(op)
        # Recording ops hand over to their autograd wrapper when an input requires grad.
        rec = f"if (autograd::needs_grad({targs})) " if records(op) else ""
        no_out_grad = (f'autograd::check_out_no_grad("{op.name}", {targs}); '
                       if targs and mode(op) != "non_differentiable" else "")
        # Errors leave the API with the op's name in front (STYLE.md: errors name the op).
        def body(call, ret, name, prologue=""):
            return (f"{{\n{prologue}  try {{ {call}; {ret} }}\n"
                    f'  catch (Error& e) {{ e.name_op("{name}"); throw; }}\n}}')
        # `error_name:` is the name users know the op by, where it differs (linalg.det)
        shown = op.entry.get("error_name", py_name(op))
        if "function" in op.variants or "method" in op.variants:
            grad_path = f"{rec}return autograd_gen::{op.name}({a}); " if rec else ""
            call = f"return {k}({a}, OutArg::none())"
            if returns_self(op):  # a write into an inference tensor, as the inplace variants check
                grad_path = f"autograd::check_inference_inplace(self); {grad_path}"
            # Note [Views and in-place writes]; a non-differentiable view (view.dtype) is no
            # autograd view, as in PyTorch: it only shares the version counter
            if "view" in op.entry.get("tags", []) and mode(op) != "non_differentiable":
                call = f"Tensor r = {k}({a}, OutArg::none()); autograd::note_view(r, self); return r"
            ac = autocast_prologue(op, autocast[op.name]) if op.name in autocast else ""
            out.append(f"{op.ret} {op.name}({p}) " + body(f"{grad_path}{call}", "", shown, ac))
        if "inplace" in op.variants:
            ip = p.replace("const Tensor& self", "Tensor& self", 1)
            grad_path = f"{rec}return autograd_gen::{op.name}_({a}); " if rec else ""
            out.append(f"Tensor& {op.name}_({ip}) " +
                       body(f"autograd::check_inference_inplace(self); {grad_path}"
                            f"{k}({a}, OutArg{{&self, true}})", "return self;", shown + "_"))
        if "out" in op.variants and len(op.returns) == 1:
            out.append(f"Tensor& {op.name}_out(Tensor& out, {p}) " +
                       body(f"{no_out_grad}{k}({a}, OutArg{{&out, false}})", "return out;", shown))
    out += gen_autocast_table(autocast)
    out.append("void register_builtin_ops() {")
    out.append("  auto& reg = op_registry();")
    out.append(f"  reg.resize({len(ops)});")
    for i, op in enumerate(ops):
        e = op.entry
        doc = (e.get("doc") or "").replace("\\", "\\\\").replace('"', '\\"')
        schema = e["func"].replace("\\", "\\\\").replace('"', '\\"')  # str defaults are quoted
        tags = ",".join(e.get("tags", []))
        out.append(f'  reg[{i}].name = "{op.full_name}"; reg[{i}].schema = "{schema}"; '
                   f'reg[{i}].tags = "{tags}"; reg[{i}].doc = "{doc}";')
        if "pointwise" in e or "impl" in e:
            fn = f"pw_{op.ident}" if "pointwise" in e else e["impl"]
            # Generated pointwise kernels run on every device (run_pointwise picks the
            # device's loops). Hand-written ones run on CPU memory unless the entry says
            # `cuda: true` (the kernel handles CUDA tensors itself); other ops on CUDA
            # tensors raise "<op>: no CUDA kernel".
            # A hand-written kernel runs on meta tensors (shapes, dtypes and strides only; Note
            # [Meta kernels]) when the entry says `meta: true`; otherwise a meta call raises
            # "<op>: no Meta kernel".
            cuda = "pointwise" in e or e.get("cuda")
            meta = "pointwise" in e or e.get("meta")
            for key in ("CPU",) + (("CUDA",) if cuda else ()) + (("Meta",) if meta else ()):
                out.append(f"  reg[{i}].kernels[int(DispatchKey::{key})] = reinterpret_cast<void*>(&{fn});")
        if e.get("cuda_impl"):
            # Note [Backend kernels]: `cuda_impl` names the op's CUDA kernel, a function of
            # the CUDA backend's folder (compiled in CUDA builds only) with the signature of
            # `impl`; the CPU kernel stays in csrc/ops/. No kernel chooses its backend itself.
            out.append("#ifdef TP_USE_CUDA")
            out.append(f"  reg[{i}].kernels[int(DispatchKey::CUDA)] = reinterpret_cast<void*>(&{e['cuda_impl']});")
            out.append("#endif")
        if "composite" in e:
            out.append(f"  reg[{i}].kernels[int(DispatchKey::Composite)] = reinterpret_cast<void*>(&{e['composite']});")
    out.append("}")
    out.append("}  // namespace tp")
    return "\n".join(out) + "\n"


def gen_cpu_kernels(kernels, shard):
    """One shard of the CPU loop table, compiled once per CPU capability level (Note [CPU
    capability]): each level's copy registers its filler in pointwise_shard_stubs[shard]."""
    names = [n for i, n in enumerate(kernels) if i % CPU_SHARDS == shard]
    out = ["// Generated from ops.yaml. Do not edit. Compiled once per CPU capability level.",
           '#include "kernels/cpu_stubs.h"',
           '#include "kernels/cpu/loops.h"',
           '#include "tensorplay/pointwise_kernels.h"',
           "namespace tp::cpu::TP_CPU_NS {",
           "namespace {",
           "void fill(Loop1d (*table)[kNumDTypes]) {",
           "  using namespace functors;"]
    loops = {0: "nullary_loop", 1: "unary_loop", 2: "binary_loop", 3: "ternary_loop"}
    for n in names:
        spec = kernels[n]
        loop = loops[spec["arity"]]
        for dt in DTYPE_SETS[spec["dtypes"]] + (COMPLEX_DTYPES if spec.get("complex") else []):
            tmpl = f"{n}, {CPP_TYPE[dt]}" + (", bool" if spec.get("first") == "bool" else "")
            out.append(f"  table[int(PwKernel::{n})][int(DType::{dt})] = &{loop}<{tmpl}>;")
    out += ["}", "}  // namespace",
            f"TP_REGISTER_CPU_KERNEL(pointwise_shard_stubs[{shard}], &fill);",
            "}  // namespace tp::cpu::TP_CPU_NS"]
    return "\n".join(out) + "\n"


def cuda_shard_of(kernels):
    """Kernel name -> CUDA shard. Note [Balanced CUDA shards]: the build's critical path is
    its slowest shard (a GPU call rebuilds everything, on 16 cores), so shards are balanced
    by their instantiations (complex ones, with their math, count three) instead of taken by
    position, which gave one shard 262 s of nvcc and another under 60: the heaviest kernel
    first goes to the lightest shard (deterministic, so ccache keeps its hits)."""
    def weight(n):
        spec = kernels[n]
        return len(DTYPE_SETS[spec["dtypes"]]) + (3 * len(COMPLEX_DTYPES) if spec.get("complex") is True else 0)
    load = [0] * CUDA_SHARDS
    shard = {}
    for n in sorted(kernels, key=lambda n: (-weight(n), n)):
        i = min(range(CUDA_SHARDS), key=lambda j: (load[j], j))
        shard[n] = i
        load[i] += weight(n)
    return shard


def gen_cuda_kernels(kernels, shard):
    of = cuda_shard_of(kernels)
    names = [n for n in kernels if of[n] == shard]
    out = ["// Generated from ops.yaml. Do not edit.",
           '#include "cuda/loops.cuh"',
           "namespace tp::cuda {",
           f"void register_cuda_kernels_{shard}(DeviceLaunch (*table)[kNumDTypes]) {{",
           "  using namespace functors;"]
    for n in names:
        spec = kernels[n]
        complex_dts = COMPLEX_DTYPES if spec.get("complex") is True else []  # `complex: cpu`: host only
        for dt in DTYPE_SETS[spec["dtypes"]] + complex_dts:
            tmpl = f"{spec['arity']}, {n}, {CPP_TYPE[dt]}" + (", bool" if spec.get("first") == "bool" else "")
            out.append(f"  table[int(PwKernel::{n})][int(DType::{dt})] = &launch_pointwise<{tmpl}>;")
    out += ["}", "}  // namespace tp::cuda"]
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------ Python bindings
def py_param(op, a):
    """(C++ parameter declaration, expression giving the C++ API argument)."""
    if a.base == "Tensor":
        # ops.yaml's `numbers:` names the tensor arguments that also take Python numbers
        numbers_ok = a.name in op.entry.get("numbers", [])
        if a.optional and numbers_ok:
            return f"std::optional<TensorArg> {a.name}", \
                f"({a.name} ? std::optional<Tensor>({a.name}->t) : std::nullopt)"
        if a.optional:
            return f"std::optional<Tensor> {a.name}", a.name
        if numbers_ok:
            return f"TensorArg {a.name}", f"{a.name}.t"
        return f"const Tensor& {a.name}", a.name
    if a.base == "int[]" and a.optional:
        return f"std::optional<IntList> {a.name}", \
            f"({a.name} ? OptionalIntArrayRef(IntArrayRef({a.name}->v.data(), {a.name}->v.size())) : std::nullopt)"
    if a.base == "int[]":
        return f"IntList {a.name}", f"IntArrayRef({a.name}.v.data(), {a.name}.v.size())"
    if a.base == "Tensor[]":  # any sequence of tensors (nanobind's stl/vector.h caster)
        return f"const std::vector<Tensor>& {a.name}", f"TensorList({a.name})"
    if a.base == "Device":
        return f"std::optional<DeviceArg> {a.name}", \
            f"({a.name} ? std::optional<Device>({a.name}->d) : std::nullopt)"
    t = {"Scalar": "Scalar", "int": "int64_t", "float": "double", "bool": "bool",
         "str": "std::string", "ScalarType": "DType", "Device": "Device",
         "Generator": "Generator"}[a.base]
    if a.optional:
        return f"std::optional<{t}> {a.name}", a.name
    return f"{t} {a.name}", a.name


def py_arg_spec(a, rename_self=True):
    name = "input" if (a.name == "self" and rename_self) else a.name
    spec = f'nb::arg("{name}")'
    if a.optional and a.default in (None, "None"):
        spec += ".none()"
    if a.default is not None:
        d = a.default
        if d == "None":
            spec += " = nb::none()"
        elif d in ("True", "False"):
            spec += f" = {d.lower()}"
        elif a.base == "str":
            spec += f" = {str_literal(d)}"
        elif a.base == "Scalar":
            spec += f" = Scalar({'int64_t(' + d + ')' if '.' not in d else d})"
        elif a.base == "int[]":
            spec += f" = nb::make_tuple({', '.join(int_list_default(d))})"
        else:
            spec += f" = {d}"
    return spec


def arg_specs(args, rename_self=True):
    specs, kw_done = [], False
    for a in args:
        if a.kwonly and not kw_done:
            specs.append("nb::kw_only()")
            kw_done = True
        specs.append(py_arg_spec(a, rename_self))
    return specs, kw_done


def returns_self(op):
    """Whether the op writes into its first argument and returns it (`Tensor(a!) self` ->
    `Tensor(a!)`: copy_, t_, resize_): its bindings return the caller's own object, so
    `x.t_() is x` as in PyTorch (and a subclass stays itself)."""
    return bool(re.match(r"\s*[\w.]+\(Tensor\(a!\) self\b", op.entry["func"])) and \
        op.entry["func"].rstrip().endswith("-> Tensor(a!)")


def self_returning(decl, call):
    """(parameter declaration, body) of a binding returning its `self` argument's object."""
    decl = decl.replace("const Tensor& self", "nb::handle_t<Tensor> self_obj", 1)
    body = f"const Tensor& self = nb::cast<const Tensor&>(self_obj); {call}; return self_obj;"
    return decl, body


def py_call(op, args):
    """The C++ call in a binding; tuple results become tp.return_types named tuples (and
    nothing becomes None)."""
    call = f"tp::{op.name}({args})"
    return call if len(op.returns) <= 1 else f'named_result("{op.name}", {call})'


def function_defs(op, fdecl, fargs, star, doc):
    """The m.def lines of an op's function form (with out= when it has one); `star` binds
    the sizes as *args (zeros(2, 3))."""
    out = []
    specs, kw = arg_specs(op.args)
    if star:
        specs[0] = 'nb::arg("size")'
        specs = [x for x in specs if x != "nb::kw_only()"]
        kw = True
    if "out" in op.variants:
        if not kw:
            specs.append("nb::kw_only()")
        specs.append('nb::arg("out").none() = nb::none()')
        body_fn = (f"return nb::cast(tp::{op.name}({fargs}));" if "function" in op.variants
                   else 'throw nb::type_error("' + op.name + '() missing out=");')
        nums = op.entry.get("numbers", [])
        out_nums = op.entry.get("out_numbers", nums)
        guards = "".join(
            f'      reject_number_with_out({a.name}, "{op.name}", "{"input" if a.name == "self" else a.name}", {i + 1});\n'
            for i, a in enumerate(op.args) if a.name in nums and a.name not in out_nums)
        # `out_needs:` arguments without which PyTorch has no out= overload
        guards += "".join(
            f'      if (!{name}) throw nb::type_error("{op.name}() received an invalid combination '
            f'of arguments: out= needs \'{name}\'");\n' for name in op.entry.get("out_needs", []))
        # a tuple result is computed, then copied into the out= tensors; as in PyTorch, a
        # wrong out= (a Tensor where a tuple belongs) is refused before the op checks anything
        fill = (f"      tp::{op.name}_out(nb::cast<Tensor&>(out), {fargs}); return nb::borrow(out);\n"
                if len(op.returns) == 1 else
                f'      check_tuple_out("{op.name}", out);\n'
                f'      return tuple_out("{op.name}", tp::{op.name}({fargs}), out);\n')
        if len(op.returns) > 1:
            body_fn = f"return {py_call(op, fargs)};"
        out.append(
            f'  m.def("{op.name}", []({fdecl}{", " if fdecl else ""}nb::handle out) -> nb::object {{\n'
            f"    if (!out.is_none()) {{\n{guards}{fill}    }}\n"
            f"    {body_fn}\n"
            f'  }}, {", ".join(specs)}, "{doc}");')
    elif returns_self(op):
        decl, body = self_returning(fdecl, py_call(op, fargs))
        out.append(f'  m.def("{op.name}", []({decl}) -> nb::handle {{ {body} }}, '
                   f'{", ".join(specs)}, nb::rv_policy::reference, "{doc}");')
    else:
        out.append(f'  m.def("{op.name}", []({fdecl}) {{ return {py_call(op, fargs)}; }}, '
                   f'{", ".join(specs)}, "{doc}");')
    return out


def gen_python(ops):
    out = ["// Generated from ops.yaml. Do not edit.",
           "#include <nanobind/stl/vector.h>",
           '#include "python/bindings.h"',
           '#include "tensorplay/ops_api.h"',
           "namespace tp::python {",
           "void bind_generated_ops(nb::module_& m, nb::class_<Tensor>& cls) {"]
    for op in ops:
        first = op.tensor_args[0] if op.tensor_args else None
        decls = [py_param(op, a) for a in op.args]
        pdecl = ", ".join(d for d, _ in decls)
        cargs = ", ".join(c for _, c in decls)
        doc = (op.entry.get("doc") or "").replace('"', '\\"')
        # function form, with out= when the op has one
        positional = [a for a in op.args if not a.kwonly]
        varargs = len(positional) == 1 and positional[0].base == "int[]" and positional[0].name == "size"
        forms = [(pdecl, cargs, False)]
        if varargs:  # zeros(2, 3) and zeros((2, 3)) alike; zeros(size=(2, 3)) by the plain form
            forms.insert(0, (pdecl.replace("IntList size", "nb::args size_args", 1),
                             cargs.replace("IntArrayRef(size.v.data(), size.v.size())",
                                           f'size_from_args(size_args, "{op.name}")', 1), True))
        if "function" in op.variants or "out" in op.variants:
            for fdecl, fargs, star in forms:
                out.extend(function_defs(op, fdecl, fargs, star, doc))
        # method forms: self is the bound tensor
        if first is None or op.args[0] is not first:
            if "method" in op.variants and first is not None:
                specs, _ = arg_specs([a for a in op.args if a is not first])
                mdecl = ", ".join(d for (d, _), a in zip(decls, op.args) if a is not first)
                out.append(f'  cls.def("{op.name}", [](const Tensor& {first.name}{", " if mdecl else ""}{mdecl}) '
                           f'{{ return {py_call(op, cargs)}; }}, {", ".join(specs)}, "{doc}");')
                if "inplace" in op.variants:  # polygamma_(n): self is the bound tensor
                    ip_args = ", ".join("t" if a is first else c for (_, c), a in zip(decls, op.args))
                    out.append(f'  cls.def("{op.name}_", [](nb::handle self_obj{", " if mdecl else ""}{mdecl}) -> nb::handle {{\n'
                               f"    Tensor& t = nb::cast<Tensor&>(self_obj); tp::{op.name}_({ip_args}); return self_obj;\n"
                               f'  }}, {", ".join(specs)}, nb::rv_policy::reference);')
            continue
        rest = [a for a in op.args[1:]]
        cargs = ", ".join([first.name] + [c for _, c in decls[1:]])  # self is the bound tensor
        specs, _ = arg_specs(rest)
        mdecl = ", ".join(d for d, _ in decls[1:])
        spec_str = (", " + ", ".join(specs)) if specs else ""
        if "method" in op.variants and len(rest) == 1 and rest[0].base == "int[]" and not rest[0].optional:
            # t.view(2, 3) and t.view((2, 3)) alike
            mcargs = cargs.replace(f"IntArrayRef({rest[0].name}.v.data(), {rest[0].name}.v.size())",
                                   f'size_from_args(size_args, "{op.name}")')
            # ... and t.flip(dims=(0, 1))
            if returns_self(op):
                out.append(f'  cls.def("{op.name}", [](nb::handle_t<Tensor> self_obj, nb::args size_args, nb::kwargs kw) -> nb::handle {{\n'
                           f'    const Tensor& self = nb::cast<const Tensor&>(self_obj);\n'
                           f'    size_args = sizes_or_keyword(size_args, kw, "{rest[0].name}", "{op.name}");\n'
                           f'    tp::{op.name}({mcargs}); return self_obj; }}, nb::rv_policy::reference, "{doc}");')
            else:
                out.append(f'  cls.def("{op.name}", [](const Tensor& self, nb::args size_args, nb::kwargs kw) {{\n'
                           f'    size_args = sizes_or_keyword(size_args, kw, "{rest[0].name}", "{op.name}");\n'
                           f'    return tp::{op.name}({mcargs}); }}, "{doc}");')
        elif "method" in op.variants and returns_self(op):
            decl, body = self_returning(f"const Tensor& self{', ' if mdecl else ''}{mdecl}", py_call(op, cargs))
            out.append(f'  cls.def("{op.name}", []({decl}) -> nb::handle {{ {body} }}{spec_str}, '
                       f'nb::rv_policy::reference, "{doc}");')
        elif "method" in op.variants:
            out.append(f'  cls.def("{op.name}", [](const Tensor& self{", " if mdecl else ""}{mdecl}) '
                       f'{{ return {py_call(op, cargs)}; }}{spec_str}, "{doc}");')
        if "inplace" in op.variants:
            ip_args = cargs.replace("self", "t", 1) if cargs.startswith("self") else cargs
            out.append(f'  cls.def("{op.name}_", [](nb::handle self_obj{", " if mdecl else ""}{mdecl}) -> nb::handle {{\n'
                       f"    Tensor& t = nb::cast<Tensor&>(self_obj); tp::{op.name}_({ip_args}); return self_obj;\n"
                       f'  }}{spec_str}, nb::rv_policy::reference);')
    out += ["}", "}  // namespace tp::python"]
    return "\n".join(out) + "\n"


def write_if_changed(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def main():
    kernels, ops = load(sys.argv[1])
    autocast = load_autocast(sys.argv[1], ops)
    out = Path(sys.argv[2])
    write_if_changed(out / "tensorplay/pointwise_kernels.h", gen_kernel_enum(kernels))
    write_if_changed(out / "tensorplay/ops_api.h", gen_api_header(ops))
    write_if_changed(out / "ops_api.cpp", gen_api_source(ops, autocast))
    for shard in range(CPU_SHARDS):
        write_if_changed(out / f"cpu_kernels_{shard}.cpp", gen_cpu_kernels(kernels, shard))
    for shard in range(CUDA_SHARDS):
        write_if_changed(out / f"cuda_kernels_{shard}.cu", gen_cuda_kernels(kernels, shard))
    write_if_changed(out / "python_ops.cpp", gen_python(ops))
    write_if_changed(out / "boxed_ops.cpp", gen_boxed(ops, params, has_python_key, kernel_sig))
    header, source = gen_autograd(ops, params, call_args, kernel_expr)
    write_if_changed(out / "tensorplay/autograd_ops.h", header)
    write_if_changed(out / "autograd_ops.cpp", source)


if __name__ == "__main__":
    main()
