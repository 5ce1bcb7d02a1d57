// autograd.Function in C++: the node of a custom Function (whose Python object is the ctx
// the user's forward, setup_context and backward receive, and the outputs' grad_fn) and
// Function.apply, one call from Python: node creation, input unpacking, forward,
// setup_context, output wrapping and saving. See docs/architecture.md, "autograd.Function".
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "autograd/engine.h"
#include "autograd/forward_ad.h"
#include "autograd/functions.h"
#include "autograd/grad_mode.h"
#include "autograd/saved_variable.h"
#include "autograd/variable.h"
#include "core/error.h"
#include "python/bindings.h"
#include "python/python_function.h"
#include "tensorplay/ops_api.h"

namespace tp::python {

using autograd::Node;

using autograd::variable_list;

namespace {

bool is_tensor(nb::handle h) { return nb::isinstance<Tensor>(h); }
const Tensor& as_tensor(nb::handle h) { return *nb::inst_ptr<Tensor>(h); }

/// The TensorImpls of the tensors in a tuple given to mark_dirty / mark_non_differentiable.
std::vector<TensorImpl*> impls_of(const nb::object& tuple) {
  std::vector<TensorImpl*> v;
  if (!tuple.is_valid() || tuple.is_none()) return v;
  for (nb::handle h : tuple)
    if (is_tensor(h)) v.push_back(as_tensor(h).impl());
  return v;
}

bool contains(const std::vector<TensorImpl*>& v, TensorImpl* p) {
  return std::find(v.begin(), v.end(), p) != v.end();
}

/// `args` must all be tensors or None (save_for_backward, mark_dirty, ...).
void check_tensor_args(nb::args args, const char* what) {
  for (size_t i = 0; i < args.size(); ++i) {
    nb::handle a = args[i];
    TP_CHECK_TYPE(a.is_none() || is_tensor(a), what, " can only save variables, but argument ",
                  i, " is of type ", nb::inst_name(a).c_str());
  }
}

}  // namespace

std::string PyFunctionNode::name() const {
  nb::gil_scoped_acquire gil;
  nb::object self = nb::find(this);
  if (!self.is_valid()) return "FunctionBackward";
  return nb::cast<std::string>(self.type().attr("__name__"));
}

void PyFunctionNode::release_variables() {
  for (auto& v : saved_) v.reset_data();
  released_ = true;
}

variable_list PyFunctionNode::apply(variable_list&& grads) {
  nb::gil_scoped_acquire gil;
  nb::object self = nb::find(this);
  nb::object fn = self.type().attr("_tp_backward");
  size_t n_out = output_slot_.size();
  std::vector<nb::object> owned(n_out);
  std::vector<PyObject*> argv(n_out + 1);
  argv[0] = self.ptr();
  for (size_t k = 0; k < n_out; ++k) {
    int slot = output_slot_[k];
    if (slot >= 0 && grads[slot].defined()) {
      owned[k] = nb::cast(std::move(grads[slot]));
    } else if (slot >= 0 && materialize_grads_) {
      const auto& md = input_metadata_[slot];
      owned[k] = nb::cast(zeros(IntArrayRef(md.sizes.data(), md.sizes.size()), md.dtype, md.device));
    } else {
      owned[k] = nb::none();
    }
    argv[k + 1] = owned[k].ptr();
  }
  nb::object r = nb::steal(PyObject_Vectorcall(fn.ptr(), argv.data(), argv.size(), nullptr));
  if (!r.is_valid()) throw nb::python_error();
  if (!PyTuple_Check(r.ptr())) r = nb::make_tuple(r);
  size_t n_in = is_tensor_input_.size();
  size_t got = nb::len(r);
  size_t used = got;
  while (used > n_in && r[used - 1].is_none()) --used;  // surplus trailing Nones are dropped
  TP_CHECK(used == n_in, "function ", name(), " returned an incorrect number of gradients "
           "(expected ", n_in, ", got ", got, ")");
  variable_list out;
  out.reserve(num_outputs());
  for (size_t i = 0; i < n_in; ++i) {
    nb::handle g = r[i];
    if (!is_tensor_input_[i]) {
      TP_CHECK(g.is_none(), "function ", name(), " returned a gradient different than None at "
               "position ", i + 1, ", but the corresponding forward input was not a Variable");
      continue;
    }
    if (g.is_none()) {
      out.emplace_back();
    } else {
      TP_CHECK(is_tensor(g), "expected Variable or None (got ", nb::inst_name(g).c_str(), ")");
      out.push_back(as_tensor(g));
    }
  }
  return out;
}

nb::object PyFunctionNode::saved_tensors() {
  TP_CHECK(!released_,
           "Trying to backward through the graph a second time (or directly access saved tensors "
           "after they have already been freed). Saved intermediate values of the graph are freed "
           "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need "
           "to backward through the graph a second time or if you need to access saved tensors "
           "after calling backward.");
  if (to_save_.is_valid() && !to_save_.is_none() && !in_jvp_) return to_save_;  // in forward
  std::shared_ptr<Node> self = weak_from_this().lock();
  nb::list l;
  for (const auto& v : in_jvp_ ? saved_for_forward_ : saved_) {
    Tensor t = v.unpack(self);
    l.append(t.defined() ? nb::cast(std::move(t)) : nb::none());
  }
  return nb::tuple(l);
}

namespace {

/// Wraps the forward's outputs (PyTorch's rules: outputs that are inputs become aliases,
/// dirty inputs get the node as their new history, non-differentiable ones are detached),
/// records their gradient slots on the node, and saves what save_for_backward named.
/// The Function's class name (the node's class is "<Name>Backward").
std::string function_name(const PyFunctionNode& node) {
  std::string name = node.name();
  const std::string suffix = "Backward";
  if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
    name.resize(name.size() - suffix.size());
  return name;
}

nb::object wrap_outputs(PyFunctionNode& node, const std::shared_ptr<Node>& sp, nb::object out,
                        const variable_list& inputs) {
  bool is_tuple = PyTuple_Check(out.ptr());
  size_t n = is_tuple ? nb::len(out) : 1;
  std::vector<TensorImpl*> dirty = impls_of(node.dirty_);
  std::vector<TensorImpl*> non_diff = impls_of(node.non_differentiable_);
  auto is_input = [&](TensorImpl* p) {
    for (const Tensor& t : inputs)
      if (t.impl() == p) return true;
    return false;
  };
  auto aliases_input = [&](const Tensor& v) {  // a view of an input, or the input itself
    for (const Tensor& t : inputs)
      if (t.impl()->storage() == v.impl()->storage()) return true;
    return false;
  };
  size_t seen_dirty = 0;
  nb::object result = nb::steal(PyTuple_New(Py_ssize_t(n)));
  node.output_slot_.assign(n, -1);
  for (size_t k = 0; k < n; ++k) {
    nb::object o = is_tuple ? nb::borrow(out[k]) : out;
    if (!is_tensor(o)) {
      PyTuple_SET_ITEM(result.ptr(), k, o.release().ptr());
      continue;
    }
    Tensor var = as_tensor(o);
    bool input = is_input(var.impl());
    bool modified = contains(dirty, var.impl());
    seen_dirty += modified;
    bool differentiable = sp && !contains(non_diff, var.impl()) && is_floating_or_complex(var.dtype());
    bool replaced = false;
    if (!differentiable) {
      if (sp) node.output_slot_[k] = int(node.add_input_metadata(var));
      if (!var.requires_grad()) {
        if (input && !modified) var = autograd::detached(var), replaced = true;
      } else if (input) {
        var = autograd::detached(var), replaced = true;
      } else if (auto* m = autograd::meta(var); !(m && m->is_view_)) {
        if (m) m->grad_fn_.reset();
        var.impl()->set_requires_grad(false);
      }
    } else if (modified) {
      TP_CHECK(!(autograd::is_leaf(var) && var.requires_grad()),
               "a leaf Variable that requires grad has been used in an in-place operation.");
      auto* m = autograd::meta(var);
      TP_CHECK(!(m && m->is_view_ && n > 1), "If your Function modifies inplace an input that is "
               "a view of another Tensor, your Function cannot return more than one Tensor. This "
               "is not supported by the current autograd engine. You should either make sure the "
               "input is not a view (using .clone() for example) or make your Function only "
               "return one Tensor (potentially splitting it into two Functions: one doing the "
               "inplace that returns a single Tensor and a second one that does the other "
               "operations). You can ask on the forum https://discuss.pytorch.org/ if you need "
               "help to do this change.");
      if (m) m->grad_ = Tensor();
      autograd::rebase_history(var, sp);
      node.output_slot_[k] = int(autograd::meta(var)->output_nr_);
    } else {
      if (input) var = autograd::detached(var), replaced = true;
      autograd::set_history(var, sp);
      node.output_slot_[k] = int(autograd::meta(var)->output_nr_);
      if (aliases_input(var))
        autograd::meta(var)->view_error_ =
            "Output " + std::to_string(k) + " of " + function_name(node) + " is a view and is being "
            "modified inplace. This view was created inside a custom Function (or because an "
            "input was returned as-is) and the autograd logic to handle view+inplace would "
            "override the custom backward associated with the custom Function, leading to "
            "incorrect gradients. This behavior is forbidden. You can fix this by cloning the "
            "output of the custom Function.";
    }
    nb::object r = replaced ? nb::cast(std::move(var)) : o;
    gc_track(r.ptr());  // its grad_fn is this ctx (Note [Tensors and the cycle collector])
    PyTuple_SET_ITEM(result.ptr(), k, r.release().ptr());
  }
  TP_CHECK(seen_dirty >= dirty.size(), "Some elements marked as dirty during the forward method "
           "were not returned as output. The inputs that are modified inplace must all be "
           "outputs of the Function.");
  if (sp && node.to_save_.is_valid() && !node.to_save_.is_none()) {
    for (nb::handle h : node.to_save_) {
      if (h.is_none()) {
        node.saved_.emplace_back();
        continue;
      }
      const Tensor& t = as_tensor(h);
      node.saved_.emplace_back(t, autograd::grad_fn(t) == sp);
    }
  }
  if (node.to_save_for_forward_.is_valid() && !node.to_save_for_forward_.is_none()) {
    for (nb::handle h : node.to_save_for_forward_) {
      if (h.is_none()) node.saved_for_forward_.emplace_back();
      else node.saved_for_forward_.emplace_back(as_tensor(h), autograd::grad_fn(as_tensor(h)) == sp);
    }
  }
  node.to_save_for_forward_ = nb::none();
  node.to_save_ = nb::none();
  node.dirty_ = nb::none();
  node.non_differentiable_ = nb::none();
  return is_tuple ? result : nb::borrow(nb::handle(PyTuple_GET_ITEM(result.ptr(), 0)));
}

/// Forward-mode AD through a Function: its outputs' tangents are jvp(ctx, *input tangents)
/// (None for inputs without one), computed with tangent propagation off.
void set_output_tangents(nb::handle cls, nb::handle ctx, nb::tuple args, nb::handle result) {
  size_t n = args.size();
  std::vector<nb::object> tangents(n);
  std::vector<PyObject*> argv(n + 1);
  argv[0] = ctx.ptr();
  for (size_t i = 0; i < n; ++i) {
    Tensor t = is_tensor(args[i]) ? autograd::fw_grad(as_tensor(args[i])) : Tensor();
    tangents[i] = t.defined() ? nb::cast(std::move(t)) : nb::none();
    argv[i + 1] = tangents[i].ptr();
  }
  std::vector<uint32_t> versions(n, 0);  // a dirty input's tangent must change in place
  for (size_t i = 0; i < n; ++i)
    if (!tangents[i].is_none()) versions[i] = as_tensor(tangents[i]).impl()->version();
  nb::object jvp = cls.attr("jvp");
  nb::object r;
  PyFunctionNode& node = *nb::inst_ptr<PyFunctionNode>(ctx);
  {
    autograd::FwGradDisabledGuard fw_off;
    node.in_jvp_ = true;
    r = nb::steal(PyObject_Vectorcall(jvp.ptr(), argv.data(), argv.size(), nullptr));
    node.in_jvp_ = false;
  }
  if (!r.is_valid()) throw nb::python_error();
  bool single = !PyTuple_Check(result.ptr());
  if (!PyTuple_Check(r.ptr())) r = nb::make_tuple(r);
  size_t n_out = single ? 1 : nb::len(result);
  TP_CHECK(nb::len(r) == n_out, "jvp: expected ", n_out, " output tangents, got ", nb::len(r));
  for (size_t k = 0; k < n_out; ++k) {
    nb::handle o = single ? result : nb::handle(result[k]);
    nb::handle t = r[k];
    if (!is_tensor(o) || t.is_none()) continue;
    TP_CHECK_TYPE(is_tensor(t), "jvp: expected a Tensor or None, got ", nb::inst_name(t).c_str());
    for (size_t i = 0; i < n; ++i) {  // an input modified in place keeps its tangent object
      if (!is_tensor(args[i]) || tangents[i].is_none() ||
          as_tensor(args[i]).impl() != as_tensor(o).impl())
        continue;
      const TensorImpl* given = as_tensor(tangents[i]).impl();
      TP_CHECK(as_tensor(t).impl() == given && given->version() != versions[i],
               "An inplace custom Function is not modifying the forward mode gradients inplace. "
               "If the forward is modifying an input inplace, then the jvp function must modify "
               "the corresponding gradient inplace.");
    }
    if (is_floating_or_complex(as_tensor(o).dtype())) autograd::set_fw_grad(as_tensor(o), as_tensor(t));
  }
}

// While a tp.func.vmap runs somewhere, Function.apply hands its calls to this hook (Note
// [autograd.Function under vmap] in tensorplay/func/_vmap.py); otherwise a null test.
PyObject* g_apply_hook = nullptr;

nb::object function_apply_direct(nb::args call_args, nb::kwargs kwargs);

/// Function.apply(*args, **kwargs), bound as a classmethod of tp.autograd.Function.
nb::object function_apply(nb::args call_args, nb::kwargs kwargs) {
  if (g_apply_hook) [[unlikely]] {
    PyObject* r = PyObject_Call(g_apply_hook, call_args.ptr(), kwargs.ptr());
    if (!r) throw nb::python_error();
    return nb::steal(r);
  }
  return function_apply_direct(std::move(call_args), std::move(kwargs));
}

/// Function.apply without the vmap hook (what the hook calls for calls it does not take).
nb::object function_apply_direct(nb::args call_args, nb::kwargs kwargs) {
  TP_CHECK_TYPE(call_args.size() >= 1, "apply: expected the Function class");
  nb::handle cls = call_args[0];
  nb::object ctx = cls.attr("_backward_cls")();
  PyFunctionNode& node = *nb::inst_ptr<PyFunctionNode>(ctx);
  size_t n = call_args.size() - 1;
  bool setup_style = nb::cast<bool>(cls.attr("_tp_setup_context_style"));
  nb::tuple args;
  if (setup_style) {
    // forward(*args) + setup_context: PyTorch binds keywords and defaults to positions.
    args = nb::cast<nb::tuple>(cls.attr("_tp_bind_args")(call_args, kwargs));
    n = args.size();
    kwargs = nb::kwargs();
  } else {
    args = nb::steal<nb::tuple>(PyTuple_GetSlice(call_args.ptr(), 1, Py_ssize_t(n + 1)));
  }
  variable_list inputs;
  node.is_tensor_input_.assign(n, false);
  bool any_requires_grad = false;
  for (size_t i = 0; i < n; ++i) {
    nb::handle a = args[i];
    if (!is_tensor(a)) continue;
    node.is_tensor_input_[i] = true;
    inputs.push_back(as_tensor(a));
    any_requires_grad = any_requires_grad || inputs.back().requires_grad();
  }
  bool executable = autograd::grad_enabled() && any_requires_grad;
  nb::object needs = nb::steal(PyTuple_New(Py_ssize_t(n)));
  for (size_t i = 0, j = 0; i < n; ++i) {
    bool need = executable && node.is_tensor_input_[i] && inputs[j++].requires_grad();
    PyTuple_SET_ITEM(needs.ptr(), i, nb::bool_(need).release().ptr());
  }
  node.needs_input_grad_ = needs;
  std::shared_ptr<Node> sp;
  if (executable) {
    sp = nb::cast<std::shared_ptr<Node>>(ctx);
    node.next_edges_.reserve(inputs.size());
    for (const Tensor& t : inputs) node.next_edges_.push_back(autograd::gradient_edge(t));
    node.forward_trace_ = autograd::current_forward_trace();
  }
  // Forward-mode AD: the inputs' tangents go to the Function's jvp after forward.
  bool fw = autograd::fw_grad_enabled() && std::any_of(inputs.begin(), inputs.end(),
                                                        autograd::has_fw_grad);
  nb::object out;
  {
    autograd::GradModeGuard no_grad(false);
    autograd::FwGradDisabledGuard fw_off;
    nb::object forward = cls.attr("forward");
    PyObject* kw = kwargs.size() ? kwargs.ptr() : nullptr;
    if (setup_style) {
      out = nb::steal(PyObject_Call(forward.ptr(), args.ptr(), kw));
      if (!out.is_valid()) throw nb::python_error();
      cls.attr("setup_context")(ctx, args, out);
    } else {
      std::vector<PyObject*> argv(n + 1);
      argv[0] = ctx.ptr();
      for (size_t i = 0; i < n; ++i) argv[i + 1] = PyTuple_GET_ITEM(args.ptr(), i);
      out = nb::steal(PyObject_VectorcallDict(forward.ptr(), argv.data(), argv.size(), kw));
      if (!out.is_valid()) throw nb::python_error();
    }
  }
  nb::object result = wrap_outputs(node, sp, std::move(out), inputs);
  if (fw) set_output_tangents(cls, ctx, args, result);
  return result;
}

/// Aliases of `outputs` whose history is one DelayedError node raising `msg`.
nb::list delayed_error(const std::string& msg, nb::handle outputs) {
  auto node = std::make_shared<autograd::DelayedError>(msg);
  nb::list result;
  for (nb::handle h : outputs) {
    if (!is_tensor(h)) {
      result.append(h);
      continue;
    }
    const Tensor& t = as_tensor(h);
    node->next_edges_.push_back(autograd::gradient_edge(t));
    Tensor alias = autograd::detached(t);
    if (is_floating_or_complex(t.dtype())) autograd::set_history(alias, node);
    result.append(nb::cast(std::move(alias)));
  }
  return result;
}

}  // namespace

void bind_function(nb::module_& m) {
  nb::class_<PyFunctionNode, Node>(m, "_FunctionBase")
      .def(nb::init<>())
      .def("save_for_backward", [](PyFunctionNode& n, nb::args args) {
        check_tensor_args(args, "save_for_backward");
        n.to_save_ = args;
      })
      .def("mark_dirty", [](PyFunctionNode& n, nb::args args) { n.dirty_ = args; })
      .def("mark_non_differentiable", [](PyFunctionNode& n, nb::args args) {
        n.non_differentiable_ = args;
      })
      .def("set_materialize_grads", [](PyFunctionNode& n, bool v) { n.materialize_grads_ = v; },
           nb::arg("value"))
      .def_prop_ro("materialize_grads", [](PyFunctionNode& n) { return n.materialize_grads_; })
      .def_prop_ro("saved_tensors", &PyFunctionNode::saved_tensors)
      .def("_save_for_forward", [](PyFunctionNode& n, nb::tuple tensors) {
        n.to_save_for_forward_ = tensors;
      })
      .def_prop_ro("saved_variables", &PyFunctionNode::saved_tensors)
      .def_prop_rw("needs_input_grad",
                   [](PyFunctionNode& n) -> nb::object {
                     return n.needs_input_grad_.is_valid() ? n.needs_input_grad_ : nb::none();
                   },
                   [](PyFunctionNode& n, nb::object v) { n.needs_input_grad_ = std::move(v); })
      .def_prop_ro("to_save", [](PyFunctionNode& n) -> nb::object {
        return n.to_save_.is_valid() ? n.to_save_ : nb::none();
      })
      .def_prop_ro("dirty_tensors", [](PyFunctionNode& n) -> nb::object {
        return n.dirty_.is_valid() ? n.dirty_ : nb::none();
      })
      .def_prop_ro("non_differentiable", [](PyFunctionNode& n) -> nb::object {
        return n.non_differentiable_.is_valid() ? n.non_differentiable_ : nb::none();
      });
  m.def("_function_apply", &function_apply);
  m.def("_function_apply_direct", &function_apply_direct);
  m.def("_set_function_apply_hook", [](nb::handle fn) {
    PyObject* old = g_apply_hook;
    g_apply_hook = fn.is_none() ? nullptr : fn.inc_ref().ptr();
    Py_XDECREF(old);
  }, nb::arg("fn").none());
  m.def("_delayed_error", &delayed_error);
}

}  // namespace tp::python
