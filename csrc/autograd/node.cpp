#include "autograd/node.h"

#include <algorithm>
#include <atomic>

namespace tp::autograd {
namespace {
thread_local uint64_t t_sequence_nr = 0;
std::atomic<int> g_hook_id{0};

template <class V>
bool erase_id(V& v, int id) {
  auto it = std::find_if(v.begin(), v.end(), [&](const auto& e) { return std::get<0>(e) == id; });
  if (it == v.end()) return false;
  v.erase(it);
  return true;
}
}  // namespace

int next_hook_id() { return ++g_hook_id; }

Node::Node() : sequence_nr_(t_sequence_nr++) {}

uint32_t Node::add_input_metadata(const Tensor& t) {
  input_metadata_.push_back(
      {DimVector(t.sizes().data(), t.sizes().size()), t.dtype(), t.device()});
  if (stream_.device < 0 && t.device().is_cuda())
    if (const StreamHooks* h = stream_hooks()) stream_ = h->current(t.device().index);
  return uint32_t(input_metadata_.size() - 1);
}

bool remove_hook(Node& node, int id) {
  return erase_id(node.tensor_pre_hooks_, id) || erase_id(node.pre_hooks_, id) ||
         erase_id(node.post_hooks_, id);
}

}  // namespace tp::autograd
