#include "autograd/engine.h"

#include <algorithm>
#include <cmath>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "autograd/formula_helpers.h"
#include "autograd/functions.h"
#include "autograd/grad_mode.h"
#include "autograd/variable.h"
#include "core/error.h"
#include "tensorplay/ops_api.h"

namespace tp::autograd {
namespace {

bool g_anomaly = false;
bool g_anomaly_check_nan = true;
// Leaked on purpose: it may hold a Python callable, which must not be released after the
// interpreter has finalised.
auto* g_trace_provider = new std::function<std::string()>();

/// Whether a gradient of shape `from` may be summed down to `to` (broadcasting reversed).
bool expandable_to(IntArrayRef to, IntArrayRef from) {
  if (to.size() > from.size()) return false;
  size_t off = from.size() - to.size();
  for (size_t i = 0; i < to.size(); ++i)
    if (to[i] != from[i + off] && to[i] != 1) return false;
  return true;
}

/// PyTorch's validate_outputs: each gradient a node returns must fit the forward input it
/// flows to; broadcast gradients are summed down and dtypes converted.
void validate_outputs(const Node& node, variable_list& grads) {
  TP_CHECK(grads.size() == node.num_outputs(), "Function ", node.name(), " returned an invalid ",
           "number of gradients - expected ", node.num_outputs(), ", but got ", grads.size());
  for (size_t i = 0; i < grads.size(); ++i) {
    const Edge& e = node.next_edges_[i];
    Tensor& g = grads[i];
    if (!e.valid() || !g.defined()) continue;
    const InputMetadata& md = e.fn->input_metadata_[e.input_nr];
    IntArrayRef want(md.sizes.data(), md.sizes.size());
    if (!std::equal(want.begin(), want.end(), g.sizes().begin(), g.sizes().end())) {
      TP_CHECK(expandable_to(want, g.sizes()), "Function ", node.name(),
               " returned an invalid gradient at index ", i, " - got ", shape_str(g.sizes()),
               " but expected shape compatible with ", shape_str(want));
      g = sum_to(g, want);
    }
    if (g.dtype() != md.dtype && !md.any_dtype) g = _to_dtype(g, md.dtype, false);
    TP_CHECK(g.device() == md.device, "Function ", node.name(),
             " returned an invalid gradient at index ", i, " - expected device ", md.device.str(),
             " but got ", g.device().str());
  }
}

void check_nan(const Node& node, const variable_list& grads) {
  for (size_t i = 0; i < grads.size(); ++i) {
    const Tensor& g = grads[i];
    if (!g.defined() || !is_floating(g.dtype())) continue;
    Tensor found = any(isnan(g), std::nullopt, false);
    bool nan = found.data<bool>()[0];
    TP_CHECK(!nan, "Function '", node.name(), "' returned nan values in its ", i, "th output.");
  }
}

struct ReadyOrder {
  bool operator()(const std::shared_ptr<Node>& a, const std::shared_ptr<Node>& b) const {
    return a->sequence_nr() < b->sequence_nr();  // the most recent node first
  }
};

/// Runs a node's hooks and apply; returns its gradients for its next edges.
variable_list call_node(Node& node, variable_list inputs, bool create_graph) {
  GradModeGuard mode(create_graph);  // hooks too run in the backward's grad mode, as in PyTorch
  for (auto& [id, slot, hook] : node.tensor_pre_hooks_) {
    Tensor r = hook(inputs[slot]);
    if (r.defined()) inputs[slot] = r;
  }
  for (auto& [slot, hook] : node.retains_grad_hooks_) hook(inputs[slot]);
  for (auto& [id, hook] : node.pre_hooks_) {
    variable_list r = hook(inputs);
    if (!r.empty()) inputs = std::move(r);
  }
  // Missing gradients of a node with several outputs are zeros (only some were used).
  if (node.zero_fills_missing_) {
    bool any = false;
    for (auto& g : inputs) any = any || g.defined();
    for (size_t i = 0; any && i < inputs.size(); ++i)
      if (!inputs[i].defined()) {
        const InputMetadata& md = node.input_metadata_[i];
        inputs[i] = zeros(IntArrayRef(md.sizes.data(), md.sizes.size()), md.dtype, md.device);
      }
    if (!any && !inputs.empty()) return variable_list(node.num_outputs());
  }
  variable_list grad_inputs_copy = node.post_hooks_.empty() ? variable_list() : inputs;
  variable_list outputs;
  try {
    outputs = node.apply(std::move(inputs));
  } catch (Error& e) {
    if (g_anomaly && !node.forward_trace_.empty())
      e.append_note("\nTraceback of forward call that caused the error:\n" + node.forward_trace_);
    throw;
  }
  if (dynamic_cast<AccumulateGrad*>(&node)) {
    // no outputs to validate or replace, but its post hooks run (after the accumulation)
    for (auto& [id, hook] : node.post_hooks_) hook(outputs, grad_inputs_copy);
    return outputs;
  }
  validate_outputs(node, outputs);
  if (g_anomaly && g_anomaly_check_nan) check_nan(node, outputs);
  for (auto& [id, hook] : node.post_hooks_) {
    variable_list r = hook(outputs, grad_inputs_copy);
    if (!r.empty()) outputs = std::move(r);
  }
  return outputs;
}

}  // namespace

bool anomaly_enabled() { return g_anomaly; }
bool anomaly_check_nan_enabled() { return g_anomaly_check_nan; }
void set_anomaly_enabled(bool enabled, bool check) {
  g_anomaly = enabled;
  g_anomaly_check_nan = check;
}
void set_forward_trace_provider(std::function<std::string()> provider) {
  *g_trace_provider = std::move(provider);
}
std::string current_forward_trace() {
  return g_anomaly && *g_trace_provider ? (*g_trace_provider)() : std::string();
}

// Note [Autograd streams]
// A node remembers the current stream of its output's accelerator when the forward op ran
// (Node::stream_, from add_input_metadata) and its backward runs on that stream, as in
// PyTorch. A gradient made on one stream and consumed on another of the same device is
// ordered by an event (the consumer waits for the producer); nodes without a stream run
// on the caller's current streams. When the backward ends, the caller's current stream of
// each device waits for every other stream a node ran on, so the caller sees finished
// gradients. With one stream (the usual case) nothing is set and nothing waits.
namespace {

class Streams {
 public:
  explicit Streams(const StreamHooks* hooks) : hooks_(hooks) {}

  /// The stream node n runs on; none (device < 0) when it runs on the caller's streams.
  StreamRef of(const Node& n) {
    if (!hooks_ || n.stream_.device < 0) return {};
    return n.stream_;
  }

  /// Orders a gradient from `from` (ran on stream p) before its consumer `to`.
  void hand_over(const Node& from, const Node& to) {
    const StreamRef p = of(from), c = of(to);
    if (p.device < 0 && c.device < 0) return;
    const int dev = p.device >= 0 ? p.device : c.device;
    const StreamRef producer = p.device >= 0 ? p : caller(dev);
    const StreamRef consumer = c.device >= 0 ? c : caller(dev);
    if (producer.device == consumer.device && producer != consumer) hooks_->wait(consumer, producer);
  }

  /// Makes n's stream current while it runs (restored by the returned guard's end).
  struct Guard {
    const StreamHooks* hooks = nullptr;
    StreamRef previous;
    ~Guard() {
      if (hooks) hooks->set_current(previous);
    }
  };
  void enter(const Node& n, Guard& g) {
    const StreamRef s = of(n);
    if (s.device < 0) return;
    if (std::find(used_.begin(), used_.end(), s) == used_.end()) used_.push_back(s);
    const StreamRef cur = hooks_->current(s.device);
    if (cur == s) return;
    g.hooks = hooks_;
    g.previous = cur;
    hooks_->set_current(s);
  }

  /// The caller's current streams wait for every other stream a node ran on.
  void finish() {
    for (const StreamRef& s : used_) {
      const StreamRef c = caller(s.device);
      if (c != s) hooks_->wait(c, s);
    }
  }

 private:
  StreamRef caller(int device) {
    for (const StreamRef& s : callers_)
      if (s.device == device) return s;
    callers_.push_back(hooks_->current(device));
    return callers_.back();
  }

  const StreamHooks* hooks_;
  std::vector<StreamRef> callers_;  // the backward caller's current streams, per device
  std::vector<StreamRef> used_;
};

}  // namespace

variable_list run_backward(const std::vector<Edge>& roots, variable_list grad_roots,
                           bool keep_graph, bool create_graph, const std::vector<Edge>& inputs,
                           bool accumulate_grad, const variable_list& input_tensors) {
  auto root = std::make_shared<GraphRoot>(roots, std::move(grad_roots));
  // Captured edges (autograd.grad / backward(inputs=)): node -> [(slot, result index)].
  std::unordered_map<Node*, std::vector<std::pair<uint32_t, size_t>>> captures;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].valid()) captures[inputs[i].fn.get()].push_back({inputs[i].input_nr, i});
  bool capturing = !inputs.empty();

  // Dependencies of every reachable node, and which nodes lead to a captured edge.
  std::unordered_map<Node*, int> deps;
  std::vector<Node*> order;  // reverse topological (DFS post-order)
  {
    std::unordered_set<Node*> seen{root.get()};
    std::vector<std::pair<Node*, size_t>> stack{{root.get(), 0}};
    while (!stack.empty()) {
      auto& [n, i] = stack.back();
      if (i < n->next_edges_.size()) {
        Node* c = n->next_edges_[i++].fn.get();
        if (!c) continue;
        deps[c]++;
        if (seen.insert(c).second) stack.push_back({c, 0});
      } else {
        order.push_back(n);
        stack.pop_back();
      }
    }
  }
  std::unordered_set<Node*> needed;
  if (capturing) {
    for (Node* n : order) {  // children come before parents in post-order
      bool need = false;
      for (auto& e : n->next_edges_)
        if (e.fn && (needed.count(e.fn.get()) || captures.count(e.fn.get()))) need = true;
      if (need) needed.insert(n);
    }
  }
  auto runs = [&](Node* n) {
    if (!capturing) return true;
    if (needed.count(n)) return true;
    // backward(inputs=leaf): the leaf's own accumulator runs.
    return accumulate_grad && captures.count(n) && dynamic_cast<AccumulateGrad*>(n);
  };

  variable_list captured(inputs.size());
  Streams streams(stream_hooks());
  std::unordered_map<Node*, variable_list> buffers;
  std::priority_queue<std::shared_ptr<Node>, std::vector<std::shared_ptr<Node>>, ReadyOrder> ready;
  ready.push(root);
  while (!ready.empty()) {
    std::shared_ptr<Node> node = ready.top();
    ready.pop();
    variable_list in;
    if (auto it = buffers.find(node.get()); it != buffers.end()) {
      in = std::move(it->second);
      buffers.erase(it);
    } else {
      in.resize(node->num_inputs());
    }
    if (auto it = captures.find(node.get()); it != captures.end()) {
      for (auto& [slot, idx] : it->second) {
        Tensor g = in[slot];
        for (auto& [id, s, hook] : node->tensor_pre_hooks_)
          if (s == slot && g.defined()) {
            Tensor r = hook(g);
            if (r.defined()) g = r;
          }
        captured[idx] = g;
      }
    }
    if (node.get() != root.get() && !runs(node.get())) continue;
    variable_list out;
    {
      Streams::Guard on_stream;
      streams.enter(*node, on_stream);
      out = call_node(*node, std::move(in), create_graph);
    }
    if (!keep_graph) node->release_variables();
    for (size_t i = 0; i < node->next_edges_.size() && i < out.size(); ++i) {
      const Edge& e = node->next_edges_[i];
      if (!e.valid()) continue;
      Node* next = e.fn.get();
      if (capturing && !needed.count(next) && !captures.count(next)) continue;
      variable_list& buf = buffers[next];
      if (buf.empty()) buf.resize(next->num_inputs());
      Tensor& slot = buf[e.input_nr];
      if (out[i].defined()) {
        streams.hand_over(*node, *next);
        if (slot.defined()) {  // summed on the consumer's stream, after both producers
          Streams::Guard on_consumer;
          streams.enter(*next, on_consumer);
          slot = add(slot, out[i]);
        } else {
          slot = out[i];
        }
      }
      if (--deps[next] == 0) ready.push(e.fn);
    }
  }
  streams.finish();
  if (capturing && accumulate_grad) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!captured[i].defined() || is_leaf(input_tensors[i])) continue;  // leaves accumulated
      AutogradMeta& m = meta_or_create(input_tensors[i]);
      m.grad_ = m.grad_.defined() ? add(m.grad_, captured[i]) : detached(captured[i]);
    }
  }
  return captured;
}

}  // namespace tp::autograd
