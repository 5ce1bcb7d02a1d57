// einsum: parses the equation, lines every operand up on one list of dims ("slots": the
// output's dims first, then the summed ones), then contracts operands left to right, each
// pair through one batched GEMM (permute + reshape + bmm), like PyTorch without opt_einsum.
#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/tensor_iterator.h"
#include "ops/matmul.h"
#include "dispatch/math_bits.h"
#include "tensorplay/ops_api.h"

namespace tp {

namespace {

constexpr int kEllipsis = -1;

bool is_label(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

/// The subscripts of one operand (or of the output): labels, and kEllipsis for "...".
/// `operand` numbers it in messages (-1: the output, named by `where`); positions are
/// reported as indices into the whole equation, like PyTorch's.
std::vector<int> parse_term(const std::string& eq, size_t begin, size_t end, const char* where,
                            int64_t operand) {
  std::vector<int> out;
  bool ellipsis = false;
  for (size_t i = begin; i < end; ++i) {
    char c = eq[i];
    if (c == ' ') continue;
    if (c == '.') {
      bool dots = i + 2 < end && eq[i + 1] == '.' && eq[i + 2] == '.';
      if (operand >= 0) {
        TP_CHECK(dots, "einsum(): found '.' for operand ", operand, " that is not part of any ellipsis");
        TP_CHECK(!ellipsis, "einsum(): found '.' for operand ", operand,
                 " for which an ellipsis was already found");
      } else {
        TP_CHECK(dots, "einsum(): found '.' for ", where, " that is not part of any ellipsis (...)");
        TP_CHECK(!ellipsis, "einsum(): found '.' for ", where,
                 " for which an ellipsis was already found");
      }
      ellipsis = true;
      out.push_back(kEllipsis);
      i += 2;
      continue;
    }
    TP_CHECK(is_label(c), "einsum(): invalid subscript given at index ", i,
             " in the equation string, subscripts must be in [a-zA-Z]");
    out.push_back(int(static_cast<unsigned char>(c)));
  }
  return out;
}

void append(DimVector& to, const DimVector& from) {
  for (int64_t v : from) to.push_back(v);
}

/// Sums `t` over `dims` keeping them (size 1); integer and bool sums widen to int64.
Tensor sum_keep(const Tensor& t, const DimVector& dims) {
  if (dims.empty()) return t;
  return sum(t, IntArrayRef(dims.data(), dims.size()), true);
}

/// left * right summed over `sum_dims`, both of the same rank, dims of size 1 broadcast;
/// the result keeps every dim (summed ones with size 1).
Tensor sumproduct_pair(Tensor left, Tensor right, const std::vector<bool>& summed) {
  int64_t nd = left.dim();
  // A summed dim of size > 1 on one side only is summed there first; with none of size > 1
  // on both sides left, the product is a plain broadcast multiply (PyTorch's layout too).
  DimVector left_only_sum, right_only_sum;
  bool any_sum = false;
  for (int64_t d = 0; d < nd; ++d) {
    if (!summed[size_t(d)]) continue;
    if (left.size(d) > 1 && right.size(d) == 1) left_only_sum.push_back(d);
    if (right.size(d) > 1 && left.size(d) == 1) right_only_sum.push_back(d);
    any_sum = any_sum || (left.size(d) != 1 && right.size(d) != 1);
  }
  left = sum_keep(left, left_only_sum);
  right = sum_keep(right, right_only_sum);
  if (!any_sum) return mul(left, right);
  // Dims: con (summed, of size > 1 on both sides), batch (kept, > 1 on both sides), lo (kept,
  // > 1 on the left only), ro (the others: kept ones > 1 on the right only, and dims of size 1
  // on both sides, the summed ones among them included), as PyTorch sorts them.
  DimVector batch, lo, ro, con;
  for (int64_t d = 0; d < nd; ++d) {
    bool l = left.size(d) != 1, r = right.size(d) != 1;
    if (summed[size_t(d)] && l && r) con.push_back(d);
    else if (summed[size_t(d)]) ro.push_back(d);  // size 1 on both sides by now
    else if (l && r) batch.push_back(d);
    else if (l) lo.push_back(d);
    else ro.push_back(d);
  }
  // The GEMM writes (batch, lo, ro); when every ro dim precedes every lo dim (the output
  // lists the right operand's dims first) the operands trade places, so the result comes out
  // in the output's order, as PyTorch's does ('bij,bjk->bki' is contiguous, not a transposed
  // view; 'adk,bck->bacd', whose ro and lo dims interleave, keeps the (lo, ro) layout).
  if (!lo.empty() && !ro.empty() && ro.back() < lo[0]) {
    std::swap(left, right);
    std::swap(lo, ro);
  }
  auto prod = [](const Tensor& t, const DimVector& dims) {
    int64_t p = 1;
    for (int64_t d : dims) p *= t.size(d);
    return p;
  };
  int64_t B = prod(left, batch), M = prod(left, lo), K = prod(left, con), N = prod(right, ro);
  DimVector pl = batch, pr = batch;
  append(pl, lo), append(pl, con);
  append(pl, ro);
  append(pr, con), append(pr, ro);
  append(pr, lo);
  int64_t l3[3] = {B, M, K}, r3[3] = {B, K, N};
  Tensor a = reshape(permute(left, pl), l3), b = reshape(permute(right, pr), r3);
  Tensor res = bmm(a, b);  // its checks: an empty operand returns zeros of b's dtype before any
  // Back to the slot order: (batch, lo, ro, summed as size 1) then the inverse permutation.
  DimVector order = batch, sizes;
  append(order, lo), append(order, ro);
  append(order, con);
  for (int64_t d : batch) sizes.push_back(left.size(d));
  for (int64_t d : lo) sizes.push_back(left.size(d));
  for (int64_t d : ro) sizes.push_back(right.size(d));
  for (size_t i = 0; i < con.size(); ++i) sizes.push_back(1);
  DimVector inverse(size_t(nd), 0);
  for (int64_t i = 0; i < nd; ++i) inverse[size_t(order[size_t(i)])] = i;
  return permute(reshape(res, sizes), inverse);
}

}  // namespace

Tensor einsum_impl(const std::string& equation, TensorList tensors, OutArg out) {
  for (const Tensor& t : tensors)
    if (t.impl()->math_bits()) [[unlikely]] {  // resolved where autograd sees it (dispatch/math_bits.h)
      std::vector<Tensor> plain;
      for (const Tensor& u : tensors) plain.push_back(resolved(u));
      return einsum_impl(equation, plain, out);
    }
  size_t arrow = equation.find("->");
  size_t lhs_end = arrow == std::string::npos ? equation.size() : arrow;
  // Operand terms.
  std::vector<std::vector<int>> terms;
  size_t start = 0;
  for (size_t i = 0; i <= lhs_end; ++i) {
    if (i == lhs_end || equation[i] == ',') {
      TP_CHECK(terms.size() < tensors.size(),
               "einsum(): fewer operands were provided than specified in the equation");
      terms.push_back(parse_term(equation, start, i, "operand", int64_t(terms.size())));
      start = i + 1;
    }
  }
  TP_CHECK(terms.size() == tensors.size(),
           "einsum(): more operands were provided than specified in the equation");
  int64_t nops = int64_t(tensors.size());

  // Label counts and sizes; the ellipsis' rank is the largest any operand gives it.
  std::array<int, 128> count{};
  std::array<int64_t, 128> label_size{};
  label_size.fill(-1);
  int64_t ell_rank = 0;
  std::vector<int64_t> op_ell(size_t(nops), 0);
  for (int64_t i = 0; i < nops; ++i) {
    const auto& term = terms[size_t(i)];
    const Tensor& t = tensors[size_t(i)];
    bool has_ell = std::count(term.begin(), term.end(), kEllipsis) > 0;
    int64_t nlabels = int64_t(term.size()) - (has_ell ? 1 : 0);
    if (has_ell) {
      TP_CHECK(nlabels <= t.dim(), "einsum(): the number of subscripts in the equation (", nlabels,
               ") is more than the number of dimensions (", t.dim(), ") for operand ", i);
      op_ell[size_t(i)] = t.dim() - nlabels;
      ell_rank = std::max(ell_rank, t.dim() - nlabels);
    } else {
      TP_CHECK(nlabels == t.dim(), "einsum(): the number of subscripts in the equation (", nlabels,
               ") does not match the number of dimensions (", t.dim(), ") for operand ", i,
               " and no ellipsis was given");
    }
    for (int l : term)
      if (l != kEllipsis) ++count[size_t(l)];
  }

  // Output term: explicit, or the ellipsis then the labels seen once, in ASCII order.
  std::vector<int> out_term;
  bool out_ell = false;
  if (arrow != std::string::npos) {
    out_term = parse_term(equation, arrow + 2, equation.size(), "output", -1);
    std::array<bool, 128> seen{};
    for (int l : out_term) {
      if (l == kEllipsis) {
        out_ell = true;
        continue;
      }
      TP_CHECK(count[size_t(l)] > 0, "einsum(): output subscript ", char(l),
               " does not appear in the equation for any input operand");
      TP_CHECK(!seen[size_t(l)], "einsum(): output subscript ", char(l),
               " appears more than once in the output");
      seen[size_t(l)] = true;
    }
  } else {
    out_ell = true;
    out_term.push_back(kEllipsis);
    for (int l = 0; l < 128; ++l)
      if (count[size_t(l)] == 1) out_term.push_back(l);
  }

  // Slots: output dims first, then the ellipsis (if summed) and the other labels.
  std::array<int64_t, 128> slot_of{};
  slot_of.fill(-1);
  int64_t nslots = 0, ell_slot = -1;
  for (int l : out_term) {
    if (l == kEllipsis) ell_slot = nslots, nslots += ell_rank;
    else slot_of[size_t(l)] = nslots++;
  }
  int64_t n_out = nslots;
  if (!out_ell) ell_slot = nslots, nslots += ell_rank;
  for (int l = 0; l < 128; ++l)
    if (count[size_t(l)] > 0 && slot_of[size_t(l)] < 0) slot_of[size_t(l)] = nslots++;

  // Each operand as a view over all slots: repeated labels take the diagonal (strides add
  // up), missing slots have size 1.
  std::vector<Tensor> ops;
  std::vector<int64_t> slot_size(size_t(nslots), 1), last_op(size_t(nslots), -1);
  for (int64_t i = 0; i < nops; ++i) {
    const Tensor& t = tensors[size_t(i)];
    DimVector sizes(size_t(nslots), 1), strides(size_t(nslots), 0);
    std::vector<bool> has(size_t(nslots), false);
    int64_t d = 0;
    for (int l : terms[size_t(i)]) {
      if (l == kEllipsis) {
        int64_t first = ell_slot + ell_rank - op_ell[size_t(i)];
        for (int64_t e = 0; e < op_ell[size_t(i)]; ++e, ++d) {
          sizes[size_t(first + e)] = t.size(d), strides[size_t(first + e)] = t.stride(d);
          has[size_t(first + e)] = true;
        }
        continue;
      }
      int64_t s = slot_of[size_t(l)];
      if (has[size_t(s)]) {
        TP_CHECK(sizes[size_t(s)] == t.size(d), "einsum(): subscript ", char(l),
                 " is repeated for operand ", i, " but the sizes don't match, ", t.size(d),
                 " != ", sizes[size_t(s)]);
        strides[size_t(s)] += t.stride(d);
      } else {
        sizes[size_t(s)] = t.size(d), strides[size_t(s)] = t.stride(d);
        has[size_t(s)] = true;
      }
      ++d;
    }
    for (int64_t s = 0; s < nslots; ++s) {
      if (!has[size_t(s)]) continue;
      last_op[size_t(s)] = i;
      int64_t& have = slot_size[size_t(s)];
      int64_t size = sizes[size_t(s)];
      bool ell = s >= ell_slot && s < ell_slot + ell_rank;
      if (ell) {
        TP_CHECK(size == have || size == 1 || have == 1,
                 "einsum(): operands do not broadcast with remapped shapes (original->remapped)");
      } else {
        int l = 0;
        while (slot_of[size_t(l)] != s) ++l;
        TP_CHECK(size == have || size == 1 || have == 1, "einsum(): subscript ", char(l),
                 " has size ", size, " for operand ", i,
                 " which does not broadcast with previously seen size ", have);
      }
      if (have == 1) have = size;
    }
    ops.push_back(as_strided(t, sizes, strides, t.storage_offset()));
  }

  // Contract left to right; a slot outside the output is summed after its last operand.
  auto summed_at = [&](int64_t i) {
    std::vector<bool> s(size_t(nslots), false);
    for (int64_t d = n_out; d < nslots; ++d) s[size_t(d)] = last_op[size_t(d)] == i;
    return s;
  };
  auto dims_of = [](const std::vector<bool>& s) {
    DimVector dims;
    for (size_t d = 0; d < s.size(); ++d)
      if (s[d]) dims.push_back(int64_t(d));
    return dims;
  };
  Tensor result = sum_keep(ops[0], dims_of(summed_at(0)));
  for (int64_t i = 1; i < nops; ++i)
    result = sumproduct_pair(result, ops[size_t(i)], summed_at(i));
  DimVector out_sizes(result.sizes().data(), size_t(n_out));
  return reshape(result, out_sizes);
}

}  // namespace tp
