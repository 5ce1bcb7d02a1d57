"""tp.optim against torch.optim: updates, state_dicts (also across the two libraries), closures,
LBFGS, hooks, the multi-tensor kernels' edge cases, swa_utils and bad input."""
import copy
import importlib
import pickle
import warnings

import numpy as np
import pytest
import torch

import tensorplay as tp

SHAPES = [(7, 5), (33,), (2, 3, 4)]
TOL = {"float32": dict(rtol=2e-5, atol=2e-6), "float64": dict(rtol=1e-12, atol=1e-13)}


def np_of(t):
    t = t.detach()
    if isinstance(t, torch.Tensor):
        return t.float().numpy() if t.dtype in (torch.float16, torch.bfloat16) else t.numpy()
    return t.to(tp.float32).numpy() if t.dtype in (tp.float16, tp.bfloat16) else t.numpy()


def to_lib(lib, x):
    """A NumPy array, or a tensor of either library, as a `lib` tensor (through NumPy)."""
    if not isinstance(x, np.ndarray):
        x = x.detach().numpy()
    return lib.from_numpy(x.copy())


def params_of(lib, dtype="float32", seed=0):
    rng = np.random.default_rng(seed)
    return [lib.nn.Parameter(lib.from_numpy(rng.standard_normal(s).astype(dtype))) for s in SHAPES]


def grads_of(lib, params, rng, dtype):
    for p in params:
        p.grad = lib.from_numpy(rng.standard_normal(tuple(p.shape)).astype(dtype))


def train(lib, name, kw, dtype, steps, groups=False, skip=None):
    """`steps` optimizer steps with seeded gradients; with `groups` the last tensor is its
    own group with half the lr; `skip` leaves one parameter without a gradient on even
    steps (optimizers skip it and create its state late)."""
    params = params_of(lib, dtype)
    spec = params if not groups else [{"params": params[:2]}, {"params": params[2:], "lr": kw.get("lr", 1e-2) / 2}]
    opt = getattr(lib.optim, name)(spec, **kw)
    rng = np.random.default_rng(1)
    for k in range(steps):
        grads_of(lib, params, rng, dtype)
        if skip is not None and k % 2 == 0:
            params[skip].grad = None
        opt.step()
    return params, opt


CONFIGS = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9, weight_decay=0.05)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, maximize=True)),
    ("SGD", dict(lr=0.1, momentum=0.5, dampening=0.3, weight_decay=0.1)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, betas=(0.8, 0.99), weight_decay=0.1, amsgrad=True)),
    ("Adam", dict(lr=0.01, maximize=True, eps=1e-6)),
    ("Adam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.02, weight_decay=0.3, amsgrad=True, maximize=True)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.1, initial_accumulator_value=0.5, maximize=True)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.8, weight_decay=0.1, maximize=True)),
    ("Adamax", dict(lr=0.01)),
    ("Adamax", dict(lr=0.01, weight_decay=0.1, maximize=True)),
    ("NAdam", dict(lr=0.01)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, momentum_decay=0.01)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("RAdam", dict(lr=0.01)),
    ("RAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, betas=(0.9, 0.9))),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, centered=True, momentum=0.5, weight_decay=0.1, maximize=True)),
    ("Rprop", dict(lr=0.01)),
    ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.1), maximize=True)),
    ("ASGD", dict(lr=0.01)),
    ("ASGD", dict(lr=0.01, lambd=0.01, alpha=0.5, t0=10, weight_decay=0.1, maximize=True)),
]
CONFIG_IDS = [f"{n}-{i}" for i, (n, _) in enumerate(CONFIGS)]
FUSED = ("SGD", "Adam", "AdamW", "Adagrad")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name, kw", CONFIGS, ids=CONFIG_IDS)
def test_updates_match_torch(name, kw, dtype):
    """40 steps, two groups, one parameter skipped on even steps, against torch's default
    (for-loop) path; the fused-kernel optimizers also through the per-tensor path."""
    ref, ref_opt = train(torch, name, kw, dtype, 40, groups=True, skip=1)
    paths = [{}] + ([{"foreach": False}] if name in FUSED else [])
    for extra in paths:
        ours, opt = train(tp, name, dict(kw, **extra), dtype, 40, groups=True, skip=1)
        for a, b in zip(ours, ref):
            np.testing.assert_allclose(np_of(a), np_of(b), **TOL[dtype], err_msg=str(extra))


@pytest.mark.parametrize("name", FUSED)
def test_fused_true(name):
    """fused=True: float32 like torch's fused=True; float16/bfloat16 are computed in float
    and stay close to torch's float32 run (torch 2.13's own fused float16 SGD updates only
    the last few elements of each tensor, so it is no reference)."""
    kw = dict(lr=0.01) if name != "SGD" else dict(lr=0.1, momentum=0.9)

    def run(lib, dtype):
        rng = np.random.default_rng(0)
        cast = getattr(lib, dtype)
        params = [lib.nn.Parameter(lib.from_numpy(rng.standard_normal(s).astype(np.float32)).to(cast))
                  for s in SHAPES]
        opt = getattr(lib.optim, name)(params, fused=True, **kw)
        for _ in range(10):
            for p in params:
                p.grad = lib.from_numpy(rng.standard_normal(tuple(p.shape)).astype(np.float32)).to(cast)
            opt.step()
        return params, opt
    ref, _ = run(torch, "float32")
    for dtype, tol in [("float32", dict(rtol=2e-5, atol=2e-6)), ("float16", dict(rtol=0, atol=1e-2)),
                       ("bfloat16", dict(rtol=0, atol=6e-2))]:
        ours, opt = run(tp, dtype)
        if name != "SGD":
            assert opt.state[ours[0]]["step"].dtype == tp.float32
        for a, b in zip(ours, ref):
            assert a.dtype == getattr(tp, dtype)
            np.testing.assert_allclose(np_of(a), np_of(b), **tol)


def state_as_numpy(sd):
    return {k: {n: (np_of(v) if hasattr(v, "detach") else v) for n, v in s.items()} for k, s in sd["state"].items()}


@pytest.mark.parametrize("name, kw", CONFIGS, ids=CONFIG_IDS)
def test_state_dict_matches_torch(name, kw):
    ours, opt = train(tp, name, kw, "float64", 5, groups=True, skip=2)
    _, ref_opt = train(torch, name, kw, "float64", 5, groups=True, skip=2)
    a, b = opt.state_dict(), ref_opt.state_dict()
    assert a["param_groups"] == b["param_groups"]
    assert list(a["state"]) == list(b["state"])
    for k in b["state"]:
        assert list(a["state"][k]) == list(b["state"][k])
        for key, vb in b["state"][k].items():
            va = a["state"][k][key]
            if isinstance(vb, torch.Tensor):
                assert isinstance(va, tp.Tensor) and str(va.dtype)[11:] == str(vb.dtype)[6:]
                assert tuple(va.shape) == tuple(vb.shape)
                np.testing.assert_allclose(np_of(va), np_of(vb), rtol=1e-12, atol=1e-13)
            else:
                assert va == vb


def convert_state_dict(sd, lib):
    """A state_dict of one library as the other's (tensors through NumPy)."""
    out = copy.deepcopy({"param_groups": sd["param_groups"]})
    out["state"] = {k: {n: (to_lib(lib, v) if hasattr(v, "detach") else v) for n, v in s.items()}
                    for k, s in sd["state"].items()}
    return out


@pytest.mark.parametrize("name, kw", CONFIGS[1::2], ids=CONFIG_IDS[1::2])
@pytest.mark.parametrize("direction", ["torch_to_tp", "tp_to_torch"])
def test_load_state_dict_across_libraries(name, kw, direction):
    """Train 6 steps in one library, move parameters and optimizer state to the other
    through NumPy, continue 6 steps in both: the same parameters."""
    src_lib, dst_lib = (torch, tp) if direction == "torch_to_tp" else (tp, torch)
    src_params, src_opt = train(src_lib, name, kw, "float64", 6)
    dst_params = [dst_lib.nn.Parameter(to_lib(dst_lib, p)) for p in src_params]
    dst_opt = getattr(dst_lib.optim, name)(dst_params, **kw)
    dst_opt.load_state_dict(convert_state_dict(src_opt.state_dict(), dst_lib))
    for lib, params, opt in ((src_lib, src_params, src_opt), (dst_lib, dst_params, dst_opt)):
        rng = np.random.default_rng(7)
        for _ in range(6):
            grads_of(lib, params, rng, "float64")
            opt.step()
    # loose: loading casts scalar state such as NAdam's float32 mu_product to the
    # parameters' float64 (torch does the same), which the source run keeps in float32
    for a, b in zip(src_params, dst_params):
        np.testing.assert_allclose(np_of(a), np_of(b), rtol=1e-9, atol=1e-11)


def test_load_state_dict_casts_like_torch():
    """Floating state follows the parameter's dtype; `step` keeps its own (float32 when
    the group is fused)."""
    for fused in (None, True):
        p = tp.nn.Parameter(tp.zeros(3))
        opt = tp.optim.Adam([p], fused=fused)
        sd = {"state": {0: {"step": tp.tensor(4.0, dtype=tp.float64), "exp_avg": tp.ones(3, dtype=tp.float64),
                            "exp_avg_sq": tp.ones(3, dtype=tp.float64)}},
              "param_groups": [dict(opt.state_dict()["param_groups"][0])]}
        opt.load_state_dict(sd)
        state = opt.state[p]
        assert state["exp_avg"].dtype == tp.float32 and state["exp_avg_sq"].dtype == tp.float32
        assert state["step"].dtype == (tp.float32 if fused else tp.float64)
    assert opt.param_groups[0]["params"] == [p]


# the group options each optimizer gained over PyTorch's releases, and its scalar state entries
NEWER_OPTIONS = ("foreach", "maximize", "differentiable", "capturable", "fused", "decoupled_weight_decay",
                 "amsgrad", "nesterov", "momentum", "centered")
SCALAR_STATE = ("step", "eta", "mu", "mu_product")


@pytest.mark.parametrize("name, kw", CONFIGS[::2], ids=CONFIG_IDS[::2])
def test_load_older_checkpoint_matches_torch(name, kw):
    """A state_dict from an older release: groups without the newer options, scalar state as
    Python numbers. Loading fills the options with their defaults and makes the numbers
    scalar tensors, as torch does; so does unpickling the optimizer (its __setstate__)."""
    def older(sd, lib):
        sd = convert_state_dict(sd, lib)
        for g in sd["param_groups"]:
            for key in NEWER_OPTIONS:
                g.pop(key, None)
        for st in sd["state"].values():
            for key in SCALAR_STATE:
                if key in st:
                    st[key] = float(st[key].item())
        return sd

    _, opt = train(tp, name, kw, "float64", 3)
    loaded = []
    for lib in (tp, torch):
        fresh = getattr(lib.optim, name)(params_of(lib, "float64"), **kw)
        fresh.load_state_dict(older(opt.state_dict(), lib))
        loaded.append(fresh)
    ours, ref = loaded
    groups = [[{k: v for k, v in g.items() if k != "params"} for g in o.param_groups] for o in (ours, ref)]
    assert groups[0] == groups[1]
    for (_, sa), (_, sb) in zip(ours.state.items(), ref.state.items()):
        assert sorted(sa) == sorted(sb)
        for key in SCALAR_STATE:
            if key in sb:
                assert isinstance(sa[key], tp.Tensor) == isinstance(sb[key], torch.Tensor)
                assert float(sa[key]) == float(sb[key])
    again = pickle.loads(pickle.dumps(ours))
    assert [{k: v for k, v in g.items() if k != "params"} for g in again.param_groups] == groups[0]


def test_state_dict_is_independent_of_later_changes():
    ours, opt = train(tp, "Adam", dict(lr=0.01), "float32", 2)
    sd = opt.state_dict()
    sd["param_groups"][0]["lr"] = 5.0
    assert opt.param_groups[0]["lr"] == 0.01
    assert sd["state"][0]["exp_avg"] is opt.state[ours[0]]["exp_avg"]  # tensors are shared, as in torch


def load_error(lib, groups_saved, groups_loaded):
    def opt_for(groups):
        return lib.optim.SGD([{"params": [lib.nn.Parameter(lib.zeros(1)) for _ in range(n)]} for n in groups], lr=0.1)
    try:
        opt_for(groups_loaded).load_state_dict(opt_for(groups_saved).state_dict())
    except Exception as e:  # noqa: BLE001 - compared below
        return type(e), str(e)


@pytest.mark.parametrize("saved, loaded", [((1, 2), (1,)), ((1, 2), (1, 3)), ((2,), (1,))])
def test_load_state_dict_mismatch_errors(saved, loaded):
    ours = load_error(tp, saved, loaded)
    assert ours is not None and ours == load_error(torch, saved, loaded)


def test_param_names_round_trip():
    a, b = tp.nn.Parameter(tp.ones(2)), tp.nn.Parameter(tp.ones(3))
    opt = tp.optim.SGD([("w", a), ("b", b)], lr=0.1, momentum=0.9)
    sd = opt.state_dict()
    assert sd["param_groups"][0]["param_names"] == ["w", "b"]
    other = tp.optim.SGD([tp.nn.Parameter(tp.ones(2)), tp.nn.Parameter(tp.ones(3))], lr=0.2)
    other.load_state_dict(sd)
    assert other.param_groups[0]["param_names"] == ["w", "b"] and other.param_groups[0]["lr"] == 0.1


@pytest.mark.parametrize("set_to_none", [True, False])
def test_zero_grad(set_to_none):
    p = tp.nn.Parameter(tp.ones(3))
    (p * p).sum().backward()
    opt = tp.optim.SGD([p], lr=0.1)
    opt.zero_grad(set_to_none=set_to_none)
    if set_to_none:
        assert p.grad is None
    else:
        assert p.grad is not None and p.grad.tolist() == [0.0, 0.0, 0.0] and not p.grad.requires_grad


@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop", "Adagrad"])
def test_step_with_closure(name):
    """The closure runs with grad enabled; step returns its loss; the parameters follow
    torch's."""
    results = []
    for lib in (tp, torch):
        w = lib.nn.Parameter(lib.tensor([1.5, -0.5], dtype=lib.float64))
        opt = getattr(lib.optim, name)([w], lr=0.1)
        seen = []

        def closure():
            opt.zero_grad()
            seen.append(lib.is_grad_enabled())
            loss = ((w - 3) ** 2).sum()
            loss.backward()
            return loss
        with lib.no_grad():
            losses = [float(opt.step(closure)) for _ in range(5)]
        results.append((losses, w.detach().numpy().copy(), seen))
    assert results[0][2] == [True] * 5
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-12)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-12)


def rosenbrock(x):
    return (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_lbfgs_rosenbrock_matches_torch(line_search_fn):
    runs = []
    for lib in (tp, torch):
        x = lib.nn.Parameter(lib.tensor([-1.5, 2.0], dtype=lib.float64))
        opt = lib.optim.LBFGS([x], lr=1 if line_search_fn else 0.1, max_iter=20, history_size=10,
                              line_search_fn=line_search_fn)

        def closure():
            opt.zero_grad()
            loss = rosenbrock(x)
            loss.backward()
            return loss
        losses = [float(opt.step(closure)) for _ in range(4)]
        state = opt.state[x]
        runs.append((losses, x.detach().numpy().copy(), state["func_evals"], state["n_iter"], len(state["old_dirs"])))
    ours, ref = runs
    np.testing.assert_allclose(ours[0], ref[0], rtol=1e-6)
    np.testing.assert_allclose(ours[1], ref[1], rtol=1e-5)
    assert ours[2:] == ref[2:]
    if line_search_fn:
        np.testing.assert_allclose(ours[1], [1.0, 1.0], atol=1e-4)


def test_lbfgs_state_dict_round_trip():
    x = tp.nn.Parameter(tp.tensor([-1.0, 1.0], dtype=tp.float64))
    opt = tp.optim.LBFGS([x], max_iter=3, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = rosenbrock(x)
        loss.backward()
        return loss
    opt.step(closure)
    sd = opt.state_dict()
    assert set(sd["state"][0]) == {"func_evals", "n_iter", "d", "t", "old_dirs", "old_stps", "ro", "H_diag",
                                   "prev_flat_grad", "prev_loss", "al"} - ({"al"} if "al" not in sd["state"][0] else set())
    y = tp.nn.Parameter(x.detach().clone())
    other = tp.optim.LBFGS([y], max_iter=3, line_search_fn="strong_wolfe")
    other.load_state_dict(copy.deepcopy(sd))  # loading shares the tensors, as in torch
    opt.step(closure)

    def closure_y():
        other.zero_grad()
        loss = rosenbrock(y)
        loss.backward()
        return loss
    other.step(closure_y)
    np.testing.assert_allclose(np_of(x), np_of(y), rtol=1e-12)


def test_step_hooks_order_and_removal():
    calls = []
    p = tp.nn.Parameter(tp.ones(2))
    opt = tp.optim.SGD([p], lr=0.1)
    g_pre = tp.optim.optimizer.register_optimizer_step_pre_hook(lambda o, a, k: calls.append("global pre"))
    g_post = tp.optim.optimizer.register_optimizer_step_post_hook(lambda o, a, k: calls.append("global post"))
    try:
        h_pre = opt.register_step_pre_hook(lambda o, a, k: calls.append(("pre", o is opt, a, k)))
        opt.register_step_post_hook(lambda o, a, k: calls.append("post"))
        opt.step()
        assert calls == ["global pre", ("pre", True, (opt,), {}), "post", "global post"]
        h_pre.remove()
        calls.clear()
        opt.step()
        assert calls == ["global pre", "post", "global post"]
    finally:
        g_pre.remove()
        g_post.remove()
    calls.clear()
    opt.step()
    assert calls == ["post"]


def test_step_pre_hook_replaces_arguments():
    p = tp.nn.Parameter(tp.ones(2))
    opt = tp.optim.SGD([p], lr=0.1)
    opt.register_step_pre_hook(lambda o, a, k: (a, {"closure": lambda: 42.0}))
    assert opt.step() == 42.0


def test_state_dict_hooks():
    p = tp.nn.Parameter(tp.ones(2))
    opt = tp.optim.SGD([p], lr=0.1, momentum=0.9)
    calls = []
    opt.register_state_dict_pre_hook(lambda o: calls.append("pre"))
    opt.register_state_dict_pre_hook(lambda o: calls.append("pre first"), prepend=True)
    opt.register_state_dict_post_hook(lambda o, sd: dict(sd, extra=1))
    sd = opt.state_dict()
    assert calls == ["pre first", "pre"] and sd["extra"] == 1
    opt.register_load_state_dict_pre_hook(lambda o, sd: {k: v for k, v in sd.items() if k != "extra"})
    opt.register_load_state_dict_post_hook(lambda o: calls.append("loaded"))
    sd["param_groups"][0]["lr"] = 0.5
    opt.load_state_dict(sd)
    assert calls[-1] == "loaded" and opt.param_groups[0]["lr"] == 0.5


def differentiable_run(lib, name, kw):
    """Four differentiable steps of a non-leaf parameter, then the gradients of the result
    with respect to the initial values and the gradient stream."""
    w = lib.tensor([1.0, -2.0, 0.5], dtype=lib.float64, requires_grad=True)
    g = lib.tensor([0.3, 0.1, -0.4], dtype=lib.float64, requires_grad=True)
    p = w.clone()
    opt = getattr(lib.optim, name)([p], differentiable=True, **kw)
    try:
        for k in range(4):
            p.grad = g * (k + 1)
            opt.step()
        (p * p).sum().backward()
    except RuntimeError as e:  # in-place updates of saved state: both libraries refuse alike
        return str(e).split("is at version")[1].split(".")[0]
    return [w.grad.numpy().copy(), g.grad.numpy().copy(), p.detach().numpy().copy()]


# Adam-like updates compute `lr / bias_correction` with a float32 0-dim tensor, which torch
# evaluates as reciprocal() * lr and tensorplay as one division: a float32 ulp apart.
LOOSE = dict(rtol=1e-5, atol=1e-6)
EXACT = dict(rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name, kw, tol", [
    ("SGD", dict(lr=0.1, momentum=0.9, weight_decay=0.2), EXACT),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, maximize=True), EXACT),
    ("Adam", dict(lr=0.1, weight_decay=0.1), LOOSE), ("AdamW", dict(lr=0.1), LOOSE),
    ("Adam", dict(lr=0.1, amsgrad=True), None), ("Adagrad", dict(lr=0.1, weight_decay=0.1), EXACT),
    ("Adadelta", dict(weight_decay=0.1), EXACT), ("NAdam", dict(lr=0.1), LOOSE),
    ("RAdam", dict(lr=0.1, betas=(0.9, 0.9)), LOOSE), ("ASGD", dict(lr=0.1), EXACT),
    ("RMSprop", dict(lr=0.1, centered=True, momentum=0.5), None), ("Adamax", dict(lr=0.1), None),
    ("Rprop", dict(), None)])
def test_differentiable_matches_torch(name, kw, tol):
    """differentiable=True keeps the update in the graph (or fails as torch fails: tol None)."""
    ours, ref = differentiable_run(tp, name, kw), differentiable_run(torch, name, kw)
    assert isinstance(ref, str) == (tol is None)
    if tol is None:
        assert ours == ref
    else:
        for a, b in zip(ours, ref):
            np.testing.assert_allclose(a, b, **tol)


def test_repr_matches_torch():
    names = ["Adadelta", "Adagrad", "Adam", "AdamW", "Adamax", "ASGD", "LBFGS", "NAdam", "RAdam", "RMSprop",
             "Rprop", "SGD"]
    for name in names:
        ours = getattr(tp.optim, name)([{"params": [tp.nn.Parameter(tp.ones(1))]},
                                        {"params": [tp.nn.Parameter(tp.ones(1))], "lr": 0.5}]) \
            if name != "LBFGS" else tp.optim.LBFGS([tp.nn.Parameter(tp.ones(1))])
        ref = getattr(torch.optim, name)([{"params": [torch.nn.Parameter(torch.ones(1))]},
                                          {"params": [torch.nn.Parameter(torch.ones(1))], "lr": 0.5}]) \
            if name != "LBFGS" else torch.optim.LBFGS([torch.nn.Parameter(torch.ones(1))])
        assert repr(ours) == repr(ref)
        assert ours.defaults == ref.defaults


def P(lib, n=3):
    return lib.nn.Parameter(lib.ones(n))


def stepped(lib, opt_fn):
    p = P(lib)
    p.grad = lib.ones(3)
    opt_fn(lib, p).step()


BAD_INPUT = {
    "tensor_as_params": lambda lib: lib.optim.SGD(lib.ones(2), lr=0.1),
    "empty": lambda lib: lib.optim.SGD([], lr=0.1),
    "non_leaf": lambda lib: lib.optim.SGD([P(lib) * 2], lr=0.1),
    "group_as_set": lambda lib: lib.optim.SGD([{"params": {P(lib)}}], lr=0.1),
    "not_a_tensor": lambda lib: lib.optim.Adam([P(lib), 1.0]),
    "same_param_twice": lambda lib: (lambda p: lib.optim.SGD([{"params": [p]}, {"params": [p]}], lr=0.1))(P(lib)),
    "group_not_dict": lambda lib: lib.optim.SGD([P(lib)], lr=0.1).add_param_group([P(lib)]),
    "names_missing": lambda lib: lib.optim.SGD([("a", P(lib)), P(lib)], lr=0.1),
    "names_in_one_group": lambda lib: lib.optim.SGD([("a", P(lib))], lr=0.1).add_param_group({"params": [P(lib)]}),
    "required": lambda lib: type("Opt", (lib.optim.Optimizer,), {})(
        [P(lib)], {"lr": importlib.import_module(f"{lib.__name__}.optim.optimizer").required}),
    "sgd_lr": lambda lib: lib.optim.SGD([P(lib)], lr=-1.0),
    "sgd_momentum": lambda lib: lib.optim.SGD([P(lib)], momentum=-0.5),
    "sgd_weight_decay": lambda lib: lib.optim.SGD([P(lib)], weight_decay=-0.5),
    "sgd_nesterov": lambda lib: lib.optim.SGD([P(lib)], nesterov=True, momentum=0.9, dampening=0.1),
    "adam_lr": lambda lib: lib.optim.Adam([P(lib)], lr=-1.0),
    "adam_eps": lambda lib: lib.optim.Adam([P(lib)], eps=-1.0),
    "adam_beta0": lambda lib: lib.optim.Adam([P(lib)], betas=(1.0, 0.9)),
    "adam_beta1": lambda lib: lib.optim.AdamW([P(lib)], betas=(0.9, -0.1)),
    "adam_weight_decay": lambda lib: lib.optim.Adam([P(lib)], weight_decay=-1e-2),
    "adam_betas_mixed": lambda lib: lib.optim.Adam([P(lib)], betas=(0.9, lib.tensor(0.99))),
    "adam_tensor_lr_foreach": lambda lib: lib.optim.Adam([P(lib)], lr=lib.tensor(0.1), foreach=True),
    "tensor_lr_size": lambda lib: lib.optim.RMSprop([P(lib)], lr=lib.tensor([0.1, 0.2])),
    "fused_and_foreach": lambda lib: lib.optim.SGD([P(lib)], fused=True, foreach=True),
    "fused_differentiable": lambda lib: lib.optim.Adagrad([P(lib)], fused=True, differentiable=True),
    "capturable_on_cpu": lambda lib: stepped(lib, lambda l, p: l.optim.Adam([p], capturable=True)),
    "capturable_nadam": lambda lib: stepped(lib, lambda l, p: l.optim.NAdam([p], capturable=True)),
    "capturable_asgd": lambda lib: stepped(lib, lambda l, p: l.optim.ASGD([p], capturable=True)),
    "capturable_adadelta": lambda lib: stepped(lib, lambda l, p: l.optim.Adadelta([p], capturable=True)),
    "adagrad_lr_decay": lambda lib: lib.optim.Adagrad([P(lib)], lr_decay=-1.0),
    "adagrad_accumulator": lambda lib: lib.optim.Adagrad([P(lib)], initial_accumulator_value=-1.0),
    "adagrad_eps": lambda lib: lib.optim.Adagrad([P(lib)], eps=-1.0),
    "adadelta_rho": lambda lib: lib.optim.Adadelta([P(lib)], rho=1.1),
    "adamax_beta": lambda lib: lib.optim.Adamax([P(lib)], betas=(0.9, 1.0)),
    "nadam_momentum_decay": lambda lib: lib.optim.NAdam([P(lib)], momentum_decay=-1.0),
    "radam_eps": lambda lib: lib.optim.RAdam([P(lib)], eps=-1.0),
    "rmsprop_alpha": lambda lib: lib.optim.RMSprop([P(lib)], alpha=-0.1),
    "rmsprop_momentum": lambda lib: lib.optim.RMSprop([P(lib)], momentum=-0.1),
    "rprop_etas": lambda lib: lib.optim.Rprop([P(lib)], etas=(0.5, 0.9)),
    "asgd_weight_decay": lambda lib: lib.optim.ASGD([P(lib)], weight_decay=-1.0),
    "lbfgs_groups": lambda lib: lib.optim.LBFGS([{"params": [P(lib)]}, {"params": [P(lib)]}]),
    "lbfgs_line_search": lambda lib: (lambda p: lib.optim.LBFGS([p], line_search_fn="armijo").step(
        lambda: (p.grad is None and (p * p).sum().backward()) or (p * p).sum()))(P(lib)),
    "base_step": lambda lib: lib.optim.Optimizer([P(lib)], {}).step(),
    "hook_bad_return": lambda lib: (lambda o: (o.register_step_pre_hook(lambda *a: 5), o.step()))(
        lib.optim.Rprop([P(lib)])),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUT))
def test_bad_input_matches_torch(case):
    outcome = []
    for lib in (tp, torch):
        try:
            BAD_INPUT[case](lib)
            outcome.append(None)
        except Exception as e:  # noqa: BLE001 - the type and message are compared
            # messages that name the library or a function's address say so in both
            outcome.append((type(e), str(e).split(" at 0x")[0].replace("torch.", "").replace("tensorplay.", "")))
    assert outcome[1] is not None
    assert outcome[0] == outcome[1]


def test_duplicate_parameters_warn_like_torch():
    caught = []
    for lib in (tp, torch):
        p = P(lib)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            lib.optim.SGD([p, p], lr=0.1)
        caught.append([str(x.message) for x in w])
    assert caught[0] == caught[1] and len(caught[0]) == 1


def test_parameter_without_grad_is_skipped():
    a, b = P(tp), P(tp)
    opt = tp.optim.Adam([a, b])
    a.grad = tp.ones(3)
    opt.step()
    assert b not in opt.state and b.tolist() == [1.0, 1.0, 1.0]
    assert opt.state[a]["step"].item() == 1.0


# ------------------------------------------------------------------ the kernels themselves

def test_fused_kernels_handle_layouts_and_dtypes():
    """A group with transposed, strided, empty and float64 parameters: the kernel (default
    path) against the per-tensor path, bit for bit."""
    def group(lib_fn, extra):
        rng = np.random.default_rng(3)
        base = [rng.standard_normal((6, 8)), rng.standard_normal((5, 9)), np.zeros((0, 3)), rng.standard_normal(4)]
        params = [tp.nn.Parameter(tp.from_numpy(base[0].astype(np.float32)).t()),  # transposed
                  tp.nn.Parameter(tp.from_numpy(base[1].astype(np.float32))[:, ::2]),  # strided view
                  tp.nn.Parameter(tp.from_numpy(base[2].astype(np.float32))),
                  tp.nn.Parameter(tp.from_numpy(base[3]))]  # float64 in the same group
        opt = lib_fn(params, **extra)
        for k in range(5):
            for p in params:
                g = rng.standard_normal(tuple(p.shape)).astype(np.float64 if p.dtype == tp.float64 else np.float32)
                p.grad = tp.from_numpy(g).t().contiguous().t() if k % 2 and p.dim() == 2 else tp.from_numpy(g)
            opt.step()
        return params
    for fn in (lambda ps, **e: tp.optim.Adam(ps, lr=0.1, amsgrad=True, weight_decay=0.1, **e),
               lambda ps, **e: tp.optim.AdamW(ps, lr=0.1, **e),
               lambda ps, **e: tp.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.1, **e),
               lambda ps, **e: tp.optim.Adagrad(ps, lr=0.1, weight_decay=0.1, **e)):
        fused, loop = group(fn, {}), group(fn, {"foreach": False})
        for a, b in zip(fused, loop):
            assert a.stride() == b.stride()
            np.testing.assert_allclose(np_of(a), np_of(b), rtol=1e-6, atol=1e-7)


def test_fused_kernel_threads_agree():
    """A group large enough to be split across threads gives the single-thread result."""
    results = []
    threads = tp.get_num_threads()
    try:
        for n in (1, 2):
            tp.set_num_threads(n)
            rng = np.random.default_rng(0)
            params = [tp.nn.Parameter(tp.from_numpy(rng.standard_normal(s).astype(np.float32)))
                      for s in [(300, 300), (70000,), (17,)]]
            opt = tp.optim.Adam(params, lr=0.01, weight_decay=0.1)
            for _ in range(3):
                for p in params:
                    p.grad = tp.from_numpy(rng.standard_normal(tuple(p.shape)).astype(np.float32))
                opt.step()
            results.append([np_of(p) for p in params])
    finally:
        tp.set_num_threads(threads)
    for a, b in zip(*results):
        assert np.array_equal(a, b)


def test_fused_kernel_bumps_versions():
    p = tp.nn.Parameter(tp.ones(4))
    p.grad = tp.ones(4)
    opt = tp.optim.SGD([p], lr=0.1, momentum=0.9)
    opt.step()
    buf = opt.state[p]["momentum_buffer"]
    v_p, v_buf = p._version, buf._version
    opt.step()
    assert p._version > v_p and buf._version > v_buf


@pytest.mark.parametrize("call, message", [
    (lambda: tp._C._fused_adam_([tp.zeros(2)], [], [], [], [], [], lr=0.1, beta1=0.9, beta2=0.99, weight_decay=0.0,
                                eps=1e-8, amsgrad=False, maximize=False),
     "_fused_adam_: expected every tensor list to have 1 tensors (as params), but list 1 has 0"),
    (lambda: tp._C._fused_sgd_([tp.zeros(2)], [tp.zeros(2, dtype=tp.float64)], [], weight_decay=0.0, momentum=0.0,
                               lr=0.1, dampening=0.0, nesterov=False, maximize=False, is_first_step=False),
     "_fused_sgd_: tensor 0 of list 1 has dtype float64, but its parameter has float32"),
    (lambda: tp._C._fused_adagrad_([tp.zeros(2)], [tp.zeros(3)], [tp.zeros(2)], [tp.zeros(())], lr=0.1, lr_decay=0.0,
                                   weight_decay=0.0, eps=1e-10, maximize=False),
     "_fused_adagrad_: tensor 0 of list 1 does not have its parameter's shape"),
    (lambda: tp._C._fused_adagrad_([tp.zeros(2, dtype=tp.long)], [tp.zeros(2, dtype=tp.long)],
                                   [tp.zeros(2, dtype=tp.long)], [tp.zeros(())], lr=0.1, lr_decay=0.0,
                                   weight_decay=0.0, eps=1e-10, maximize=False),
     "_fused_adagrad_: expected floating-point parameters, but got int64"),
    (lambda: tp._C._fused_adam_([tp.zeros(2)], [tp.zeros(2)], [tp.zeros(2)], [tp.zeros(2)], [],
                                [tp.zeros((), dtype=tp.long)], lr=0.1, beta1=0.9, beta2=0.99, weight_decay=0.0,
                                eps=1e-8, amsgrad=False, maximize=False),
     ("_fused_adam_: each state_steps tensor must be a one-element float32 or float64 tensor, all on "
      "the CPU or all on the parameters' device")),
])
def test_fused_kernel_errors(call, message):
    with pytest.raises((RuntimeError, ValueError, TypeError)) as info:
        call()
    assert str(info.value) == message


def test_fused_kernel_rejects_leaf_in_grad_mode():
    p = tp.zeros(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        tp._C._fused_sgd_([p], [tp.ones(2)], [], weight_decay=0.0, momentum=0.0, lr=0.1, dampening=0.0,
                          nesterov=False, maximize=False, is_first_step=False)
    assert p.tolist() == [0.0, 0.0]


# ------------------------------------------------------------------ swa_utils

def averaged_run(lib, kind):
    lib.manual_seed(0)
    model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4), lib.nn.Linear(4, 2))
    su = lib.optim.swa_utils
    kw = {"swa": {}, "ema": {"multi_avg_fn": su.get_ema_multi_avg_fn(0.9)},
          "ema_fn": {"avg_fn": su.get_ema_avg_fn(0.8)}, "swa_fn": {"avg_fn": su.get_swa_avg_fn()},
          "buffers": {"use_buffers": True},
          "ema_buffers": {"multi_avg_fn": su.get_ema_multi_avg_fn(0.9), "use_buffers": True}}[kind]
    avg = su.AveragedModel(model, **kw)
    opt = lib.optim.SGD(model.parameters(), lr=0.1)
    rng = np.random.default_rng(0)
    for _ in range(4):
        x = lib.from_numpy(rng.standard_normal((8, 3)).astype(np.float32))
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
        avg.update_parameters(model)
    x = lib.from_numpy(rng.standard_normal((5, 3)).astype(np.float32))
    loader = [lib.from_numpy(rng.standard_normal((8, 3)).astype(np.float32)) for _ in range(3)]
    su.update_bn(loader, avg)
    return [np_of(t) for t in avg.state_dict().values()] + [np_of(avg.eval()(x))]


@pytest.mark.parametrize("kind", ["swa", "ema", "ema_fn", "swa_fn", "buffers", "ema_buffers"])
def test_averaged_model_and_update_bn_match_torch(kind):
    ours, ref = averaged_run(tp, kind), averaged_run(torch, kind)
    assert len(ours) == len(ref)
    for a, b in zip(ours, ref):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_averaged_model_rejects_two_averaging_functions():
    su = tp.optim.swa_utils
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn should be provided"):
        su.AveragedModel(tp.nn.Linear(1, 1), avg_fn=su.get_swa_avg_fn(), multi_avg_fn=su.get_swa_multi_avg_fn())
    with pytest.raises(ValueError, match=r"Invalid decay value 1.5 provided. Please provide a value in \[0,1\] range."):
        su.get_ema_multi_avg_fn(1.5)
