#pragma once
// The backward engine: runs the graph from root gradients to leaves (or to captured
// inputs for autograd.grad), with dependency counting and a ready queue.
#include <functional>
#include <string>
#include <vector>

#include "autograd/node.h"

namespace tp::autograd {

/// Runs backward from `roots` seeded with `grad_roots`. `keep_graph` keeps saved tensors;
/// `create_graph` records the backward itself. With `inputs` empty, gradients accumulate
/// into leaves' .grad; otherwise only the gradients flowing into `inputs` (edges) are
/// computed: returned in order (undefined where none flows) and, if `accumulate_grad`,
/// accumulated into the input tensors `input_tensors` too.
variable_list run_backward(const std::vector<Edge>& roots, variable_list grad_roots,
                           bool keep_graph, bool create_graph, const std::vector<Edge>& inputs,
                           bool accumulate_grad, const variable_list& input_tensors);

/// Anomaly mode (tp.autograd.set_detect_anomaly): nodes record the forward trace and
/// backward checks every gradient for NaN.
bool anomaly_enabled();
/// Whether anomaly mode checks backward results for NaN (torch.is_anomaly_check_nan_enabled).
bool anomaly_check_nan_enabled();
void set_anomaly_enabled(bool enabled, bool check_nan = true);
/// The Python bindings install the function that captures the current forward trace.
void set_forward_trace_provider(std::function<std::string()> provider);
/// The forward trace for a node being recorded (empty unless anomaly mode is on).
std::string current_forward_trace();

}  // namespace tp::autograd
