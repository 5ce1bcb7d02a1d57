// The conjugate and negative bits: the Conjugate key's boxed fallback and the ops that set
// and resolve the bits (_conj, _neg_view, conj, resolve_conj, resolve_neg).
#include <vector>

#include "core/error.h"
#include "dispatch/math_bits.h"
#include "dispatch/registry.h"
#include "tensorplay/ops_api.h"

namespace tp {

// Note [Conjugate and negative bits]
// As in PyTorch, `x.conj()` of a complex tensor reads no data: it is a view of x's storage
// whose conjugate bit (TensorImpl::kConjBit) says "each element is the conjugate of what
// the storage holds"; `x.conj().imag` is likewise a view with the negative bit (kNegBit).
// The bits live in the tensor's dispatch key byte beside the Python key's bit, so the one
// byte per tensor that every kernel call reads already tells a plain call from one with
// bits: plain eager calls pay nothing (Note [Dispatch keys]).
//  - Views keep the bits: make_view copies them to a view of the same dtype, so view,
//    reshape, transpose, select, slicing, expand, as_strided, detach, ... need no code of
//    their own; those ops (yaml tags view / inplace_view, and `math_bits: aware` entries)
//    skip the Conjugate key. view_as_real and view(dtype) of a conjugated tensor raise as in
//    PyTorch; real(z.conj()) is the plain real part, imag(z.conj()) the imaginary part with
//    the negative bit flipped.
//  - Every other op whose inputs, or whose in-place / out= tensor (dispatch/math_bits.h),
//    have a bit goes to the Conjugate key, whose boxed fallback (below) hands the op
//    tensors without bits: an input is materialised (resolved into a new tensor); a written
//    argument (in-place self, out=, any `Tensor(a!)`) is materialised too, the op writes
//    into that copy, and the copy is written back through the bits (conjugated / negated
//    into the original storage), so `y = x.conj(); y.add_(1)` changes x as PyTorch does.
//    The results the op returns that were those copies are handed back as the originals.
//    It then calls the op again (boxed, Autograd and Autocast excluded: autograd recorded
//    the call above the key), which goes on to the Python key and the backend kernel; a
//    mode or a fake tensor thus sees plain tensors, as below PyTorch's Conjugate key.
//    A kernel whose gradient flows through its decomposition (`impl:` with `derivatives:
//    decomposed`: einsum, linalg.matrix_power) must not lose it below autograd: it skips
//    the key and resolves its operands with `resolved` (math_bits.h), which autograd sees.
//  - Autograd: _conj and _neg_view are differentiable views (conj / neg of the gradient);
//    resolve_conj and resolve_neg are composites of them and conj_physical / neg.
//  - Host access that bypasses the ops (numpy(), DLPack export, ...) refuses tensors with
//    a bit, as PyTorch does; item(), tolist() and printing read resolved values.
// The matrix products read a conjugate (transposed) operand through BLAS's conjugate
// transpose instead of materialising it (Note [Conjugate operands of matrix products]).

namespace {

DimVector sizes_of(const Tensor& t) { return DimVector(t.sizes().data(), t.sizes().size()); }
DimVector strides_of(const Tensor& t) { return DimVector(t.strides().data(), t.strides().size()); }

/// The elements of t as its storage holds them: a view without the bits. Made by the view
/// ops, so a fake tensor or a tensor subclass gets a view of its kind (from the Python key).
Tensor plain_alias(const Tensor& t) {
  Tensor r = t;
  if (r.impl()->is_conj()) r = _conj(r);
  if (r.impl()->is_neg()) r = _neg_view(r);
  return r;
}

/// Applies `bits` (conjugate, negate) to a tensor of ours in place.
void apply_bits_(Tensor& t, uint8_t bits) {
  if (bits & TensorImpl::kConjBit) conj_physical_(t);
  if (bits & TensorImpl::kNegBit) neg_(t);
}

/// A new tensor holding t's values (its bits applied); t itself when it has none.
Tensor materialize(const Tensor& t) {
  const uint8_t bits = t.impl()->math_bits();
  if (!bits) return t;
  Tensor r = plain_alias(t);
  Tensor m = (bits & TensorImpl::kConjBit) ? conj_physical(r) : neg(r);
  if (bits == TensorImpl::kMathBits) neg_(m);
  return m;
}

struct WrittenArg {
  Tensor original, copy;
};

/// The Conjugate key's fallback (Note [Conjugate and negative bits]).
void conjugate_fallback(void*, DispatchKey, int op, OpFormKind form, Stack& stack) {
  dispatch::ExcludeGuard below(DispatchKeySet(DispatchKey::Autograd) | DispatchKeySet(DispatchKey::Autocast));
  const FunctionSchema& schema = op_registry()[size_t(op)].form_schema(form);
  std::vector<WrittenArg> written;
  auto resolve = [&](const Tensor& t, bool write) -> Tensor {
    if (!t.defined() || !t.impl()->math_bits()) return t;
    for (const WrittenArg& w : written)
      if (w.original.is_same(t)) return w.copy;
    Tensor m = materialize(t);
    if (write) written.push_back({t, m});
    return m;
  };
  for (size_t i = 0; i < stack.size(); ++i) {
    const bool write = i < schema.arguments.size() && schema.arguments[i].type.alias &&
                       schema.arguments[i].type.alias->is_write;
    IValue& v = stack[i];
    if (v.is_tensor()) {
      v = IValue(resolve(v.to_tensor(), write));
    } else if (v.tag() == IValue::Tag::TensorList) {
      std::vector<Tensor> ts(v.to_tensor_list().begin(), v.to_tensor_list().end());
      for (Tensor& t : ts) t = resolve(t, write);
      v = IValue(std::move(ts));
    } else if (v.tag() == IValue::Tag::OptionalTensorList) {
      std::vector<std::optional<Tensor>> ts = v.to_optional_tensor_list();
      for (auto& t : ts)
        if (t) t = resolve(*t, write);
      v = IValue(std::move(ts));
    }
  }
  dispatch::call_boxed(op, form, stack);
  for (WrittenArg& w : written) {
    // an out= the op resized: the original takes the new shape (resize_ keeps its bits)
    if (!std::equal(w.copy.sizes().begin(), w.copy.sizes().end(), w.original.sizes().begin(),
                    w.original.sizes().end()))
      resize_(w.original, w.copy.sizes());
    apply_bits_(w.copy, w.original.impl()->math_bits());
    copy_(plain_alias(w.original), w.copy);
  }
  for (IValue& r : stack) {
    if (!r.is_tensor()) continue;
    for (const WrittenArg& w : written)
      if (w.copy.is_same(r.to_tensor())) {
        r = IValue(w.original);
        break;
      }
  }
}

/// A view of self with `bit` flipped.
Tensor flip_bit_view(const Tensor& self, uint8_t bit) {
  Tensor r = make_view(self, sizes_of(self), strides_of(self), self.storage_offset());
  r.impl()->set_math_bits(self.impl()->math_bits() ^ bit);
  return r;
}

struct InstallFallback {
  InstallFallback() { dispatch::set_fallback(DispatchKey::Conjugate, {&conjugate_fallback, nullptr}); }
} install_fallback;

}  // namespace

Tensor _conj_impl(const Tensor& self, OutArg) {
  if (!is_complex(self.dtype())) return make_view(self, sizes_of(self), strides_of(self), self.storage_offset());
  return flip_bit_view(self, TensorImpl::kConjBit);
}

Tensor _neg_view_impl(const Tensor& self, OutArg) { return flip_bit_view(self, TensorImpl::kNegBit); }

Tensor conj_impl(const Tensor& self, OutArg) { return is_complex(self.dtype()) ? _conj(self) : self; }

Tensor resolve_conj_impl(const Tensor& self, OutArg) {
  return self.impl()->is_conj() ? conj_physical(_conj(self)) : self;
}

Tensor resolve_neg_impl(const Tensor& self, OutArg) {
  return self.impl()->is_neg() ? neg(_neg_view(self)) : self;
}

Tensor _conj_physical_impl(const Tensor& self, OutArg) { return conj_physical(self); }

Tensor resolved(const Tensor& t) { return t.impl()->math_bits() ? resolve_neg(resolve_conj(t)) : t; }

}  // namespace tp
