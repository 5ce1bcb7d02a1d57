"""The boxed side of each op (Note [Boxed calls] in csrc/dispatch/registry.h): the schema of
each of its forms (functional, in-place, out=) in PyTorch's notation, and a boxed entry per
form that reads its arguments from a Stack, calls the op's C++ API and pushes the results.

Written to boxed_ops.cpp by gen.py; the forms' schemas follow PyTorch's rules: the in-place
form is `name_` with `Tensor(a!) self` returning `Tensor(a!)`, the out= form adds keyword-only
`Tensor(a!) out` (or one written tensor per named result) and takes the overload name
`out`, `<overload>_out`, or the entry's `out_overload:` (and `inplace_overload:`
where the in-place form's overload name differs from the functional one's); `out_names:`
names the written tensors where PyTorch's differ from the results' (triangular_solve.X).
"""
import re

FUNCTIONAL, INPLACE, OUT = 0, 1, 2
WRITE_SETS = "abcdefgh"


def split_schema(text):
    """'add.Tensor(Tensor self, ...) -> Tensor' -> ('add', 'Tensor', 'Tensor self, ...', 'Tensor')."""
    m = re.fullmatch(r"\s*([\w]+)(?:\.(\w+))?\((.*)\)\s*->\s*(.+?)\s*", text)
    return m.group(1), m.group(2) or "", m.group(3), m.group(4)


def return_names(ret):
    """'(Tensor values, Tensor indices)' -> ['values', 'indices']; 'Tensor' -> []."""
    if not ret.startswith("("):
        return []
    return [r.split()[-1] for r in ret.strip("()").split(",") if r.strip()]


def self_index(op):
    """Position of `self` among the op's arguments (0 for nearly every op; polygamma's self
    comes after n). The in-place form always takes self first, as PyTorch's schemas do."""
    return next((i for i, a in enumerate(op.args) if a.name == "self"), 0)


def inplace_stack_order(op):
    """For each functional argument, its slot on the in-place form's stack."""
    k = self_index(op)
    return [0 if i == k else (i + 1 if i < k else i) for i in range(len(op.args))]


def forms(op):
    """{form: schema text} of the forms an op has (PyTorch's names and annotations)."""
    name, overload, args, ret = split_schema(op.entry["func"])
    out = {}
    if {"function", "method"} & set(op.variants):
        out[FUNCTIONAL] = op.entry["func"]
    if "inplace" in op.variants:
        ip_args = re.sub(r"^\s*Tensor(\([a-z]\))? self", "Tensor(a!) self", args, count=1)
        if self_index(op) > 0:  # polygamma(int n, Tensor self): polygamma_(Tensor(a!) self, int n)
            rest = [a.strip() for a in args.split(",") if not re.match(r"^\s*Tensor self$", a)]
            ip_args = ", ".join(["Tensor(a!) self"] + rest)
        ip_overload = op.entry.get("inplace_overload", overload)
        out[INPLACE] = f"{name}_{'.' + ip_overload if ip_overload else ''}({ip_args}) -> Tensor(a!)"
    if "out" in op.variants:
        names = return_names(ret)
        out_overload = op.entry.get("out_overload") or (f"{overload}_out" if overload else "out")
        star = "" if re.search(r"(^|,)\s*\*\s*(,|$)", args) else "*, "
        if names:  # one written tensor per named result (named as `out_names:` says, if given)
            arg_names = op.entry.get("out_names", names)
            written = ", ".join(f"Tensor({WRITE_SETS[i]}!) {n}" for i, n in enumerate(arg_names))
            rets = "(" + ", ".join(f"Tensor({WRITE_SETS[i]}!) {n}" for i, n in enumerate(names)) + ")"
        else:
            written, rets = "Tensor(a!) out", "Tensor(a!)"
        sep = ", " if args.strip() else ""
        out[OUT] = f"{name}.{out_overload}({args}{sep}{star}{written}) -> {rets}"
    return out


def unbox(a, i):
    """The C++ expression reading argument `a` from stack slot i."""
    s = f"s[{i}]"
    b = a.base
    if b == "Tensor":
        return f"{s}.to_optional_tensor()" if a.optional else f"{s}.to_tensor()"
    if b == "Tensor[]":
        return f"{s}.to_tensor_list()"
    plain = {"Scalar": "to_scalar", "int": "to_int", "float": "to_double", "bool": "to_bool",
             "str": "to_str", "ScalarType": "to_dtype", "Device": "to_device"}
    if b == "Generator":
        return f"{s}.is_none() ? std::optional<Generator>() : std::optional<Generator>({s}.to_generator())"
    if b == "int[]":
        return f"({s}.is_none() ? OptionalIntArrayRef() : OptionalIntArrayRef({s}.to_int_list()))" \
            if a.optional else f"{s}.to_int_list()"
    fn = plain[b]
    if a.optional:
        t = {"Scalar": "Scalar", "int": "int64_t", "float": "double", "bool": "bool",
             "str": "std::string", "ScalarType": "DType", "Device": "Device"}[b]
        return f"{s}.is_none() ? std::optional<{t}>() : std::optional<{t}>({s}.{fn}())"
    return f"{s}.{fn}()"


def boxed_entries(op):
    """C++ definitions of the op's boxed entries: {form: (function name, code)}."""
    args = ", ".join(unbox(a, i) for i, a in enumerate(op.args))
    n = len(op.args)
    fs = forms(op)
    out = {}
    if FUNCTIONAL in fs:
        fn = f"boxed_{op.ident}"
        if op.returns:
            body = f"  auto r = tp::{op.name}({args});\n  s.clear();\n  push_result(s, std::move(r));"
        else:
            body = f"  tp::{op.name}({args});\n  s.clear();"
        out[FUNCTIONAL] = (fn, f"void {fn}(Stack& s) {{\n{body}\n}}")
    if INPLACE in fs:
        fn = f"boxed_{op.ident}_inplace"
        order = inplace_stack_order(op)
        ip = ", ".join("self" if j == 0 else unbox(a, j) for a, j in zip(op.args, order))
        out[INPLACE] = (fn, f"void {fn}(Stack& s) {{\n  Tensor self = s[0].to_tensor();\n"
                            f"  tp::{op.name}_({ip});\n  s.clear();\n  s.emplace_back(std::move(self));\n}}")
    if OUT in fs:
        fn = f"boxed_{op.ident}_out"
        if len(op.returns) == 1:
            body = (f"  Tensor out = s[{n}].to_tensor();\n  tp::{op.name}_out(out, {args});\n"
                    f"  s.clear();\n  s.emplace_back(std::move(out));")
        else:  # the functional result copied into the written tensors (Note [Boxed calls])
            k = len(op.returns)
            outs = ", ".join(f"s[{n + j}].to_tensor()" for j in range(k))
            body = (f"  std::vector<Tensor> outs{{{outs}}};\n  auto r = tp::{op.name}({args});\n"
                    f"  s.clear();\n  push_result(s, std::move(r));\n"
                    f'  copy_results_to_out("{op.name}", s, outs);')
        out[OUT] = (fn, f"void {fn}(Stack& s) {{\n{body}\n}}")
    return out


def python_key_call(op, params):
    """fallback_<op>: the call boxed (the form read from OutArg), handed to the boxed
    fallback of a dispatch key (the Python key's handler, or the fallback registered for a
    backend key the op has no kernel for), and its results unboxed (Note [Boxed fallbacks])."""
    p = params(op, False)
    sep = ", " if p else ""
    n = len(op.args)
    push = "".join(f"  s.emplace_back({a.name});\n" for a in op.args)
    if self_index(op) > 0 and "inplace" in op.variants:  # the in-place form's stack has self first
        k = self_index(op)
        push += (f"  if (out.tensor && out.inplace) {{ IValue t = s[{k}]; s.erase(s.begin() + {k}); "
                 f"s.insert(s.begin(), std::move(t)); }}\n")
    lines = [f"{op.ret} fallback_{op.ident}(DispatchKey dk_{', ' if p else ''}{p}{sep}OutArg out) {{",
             "  Stack s;",
             f"  s.reserve({n + 1});",
             push.rstrip("\n")]
    if len(op.returns) == 1:
        lines += ["  OpFormKind form = !out.tensor ? OpFormKind::Functional",
                  "                  : out.inplace ? OpFormKind::InPlace : OpFormKind::Out;",
                  "  if (form == OpFormKind::Out) s.emplace_back(*out.tensor);",
                  f"  dispatch::call_fallback(dk_, kOp_{op.ident}, form, s);",
                  "  if (form != OpFormKind::Functional) return *out.tensor;",
                  f'  TP_CHECK(s.size() == 1, "{op.name}: the ", dispatch_key_name(dk_), " fallback returned ", s.size(), " values, expected 1");',
                  "  return s[0].to_tensor_or_undefined();"]
    elif op.returns:
        k = len(op.returns)
        lines += [f"  dispatch::call_fallback(dk_, kOp_{op.ident}, OpFormKind::Functional, s);",
                  f'  TP_CHECK(s.size() == {k}, "{op.name}: the ", dispatch_key_name(dk_), " fallback returned ", s.size(), " values, expected {k}");',
                  "  return {" + ", ".join(f"s[{j}].to_tensor_or_undefined()" for j in range(k)) + "};"]
    else:
        lines += [f"  dispatch::call_fallback(dk_, kOp_{op.ident}, OpFormKind::Functional, s);"]
    lines.append("}")
    return "\n".join(l for l in lines if l)


def kernel_boxed_call(op, kernel_sig):
    """kcall_<op>: one typed kernel of the op (a pointer from its kernel table) called with
    the arguments on a stack, the form telling where it writes; what get_kernel's
    call_boxed runs (Note [Kernel overrides])."""
    n = len(op.args)
    args = ", ".join([unbox(a, i) for i, a in enumerate(op.args)] + ["out"])
    lines = [f"void kcall_{op.ident}(void* k_, OpFormKind form, Stack& s) {{",
             "  OutArg out = OutArg::none();",
             "  Tensor written;"]
    if self_index(op) > 0 and "inplace" in op.variants:  # back to the functional order
        k = self_index(op)
        lines.append(f"  if (form == OpFormKind::InPlace) {{ IValue t = s[0]; s.erase(s.begin()); "
                     f"s.insert(s.begin() + {k}, std::move(t)); }}")
    if len(op.returns) == 1:
        k = self_index(op) if "inplace" in op.variants else 0
        lines += [f"  if (form == OpFormKind::InPlace) {{ written = s[{k}].to_tensor(); out = OutArg{{&written, true}}; }}",
                  f"  else if (form == OpFormKind::Out) {{ written = s[{n}].to_tensor(); out = OutArg{{&written, false}}; }}"]
    call = f"reinterpret_cast<{kernel_sig(op)}>(k_)({args})"
    if op.returns:
        lines += [f"  auto r = {call};", "  s.clear();",
                  "  if (form != OpFormKind::Functional) { s.emplace_back(std::move(written)); return; }",
                  "  push_result(s, std::move(r));"]
    else:
        lines += [f"  {call};", "  s.clear();"]
    lines.append("}")
    return "\n".join(lines)


def cpp_string(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def gen_boxed(ops, params, has_python_key, kernel_sig):
    """boxed_ops.cpp: every op's boxed entries and its forms' schemas, registered by
    register_boxed_ops() (called after register_builtin_ops), and each op's fallback_<op>."""
    out = ["// Generated from csrc/ops/*.yaml by tools/codegen/gen_boxed.py. Do not edit.",
           '#include "dispatch/ivalue.h"',
           '#include "ops/reduce_utils.h"',
           '#include "tensorplay/ops_api.h"',
           "namespace tp {", "namespace {",
           "/// out= of a tuple-returning op: each result written into its out tensor (resized",
           "/// when the shape differs, as the Python binding does), which then stands in the stack.",
           "void copy_results_to_out(const char* op, Stack& s, const std::vector<Tensor>& outs) {",
           "  for (size_t i = 0; i < outs.size(); ++i) {",
           "    write_out(op, s[i].to_tensor(), OutArg{const_cast<Tensor*>(&outs[i]), false});",
           "    s[i] = IValue(outs[i]);",
           "  }",
           "}"]
    regs = []
    for i, op in enumerate(ops):
        fs = forms(op)
        entries = boxed_entries(op)
        for form, (fn, code) in sorted(entries.items()):
            out.append(code)
            regs.append(f"  reg[{i}].forms[{form}] = {{{cpp_string(fs[form])}, &{fn}}};")
    for i, op in enumerate(ops):
        if has_python_key(op):
            out.append(kernel_boxed_call(op, kernel_sig))
            regs.append(f"  reg[{i}].kernel_boxed = &kcall_{op.ident};")
    out.append("}  // namespace")
    out += [python_key_call(op, params) for op in ops if has_python_key(op)]
    out.append("void register_boxed_ops() {")
    out.append("  auto& reg = op_registry();")
    out += regs
    out.append("}")
    out.append("}  // namespace tp")
    return "\n".join(out) + "\n"
