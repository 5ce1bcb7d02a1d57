"""tp.optim.lr_scheduler and SWALR against torch's: identical lr sequences, closed forms,
state_dict round trips, warnings and errors."""
import math
import warnings

import pytest
import torch

import tensorplay as tp


def make_optimizer(lib, name="SGD", **kw):
    """Two parameter groups with different lrs."""
    a = lib.nn.Parameter(lib.zeros(2))
    b = lib.nn.Parameter(lib.zeros(3))
    kw.setdefault("lr", 0.1)
    if name == "SGD":
        kw.setdefault("momentum", 0.9)
    return getattr(lib.optim, name)([{"params": [a]}, {"params": [b], "lr": 0.05}], **kw)


def sched_module(lib, name):
    return lib.optim.swa_utils if name == "SWALR" else lib.optim.lr_scheduler


def lrs_of(opt):
    """Each group's lr, momentum and betas (what schedulers write)."""
    return [(g["lr"], g.get("momentum"), g.get("betas")) for g in opt.param_groups]


def scale_half(x):
    return 0.5 ** x


# (scheduler name, optimizer name, constructor kwargs); every one runs 40 steps.
CONFIGS = [
    ("LambdaLR", "SGD", dict(lr_lambda=lambda e: 0.95 ** e)),
    ("LambdaLR", "SGD", dict(lr_lambda=[lambda e: 1 / (e + 1), lambda e: math.cos(e / 7)])),
    ("MultiplicativeLR", "SGD", dict(lr_lambda=lambda e: 0.97)),
    ("StepLR", "SGD", dict(step_size=7, gamma=0.3)),
    ("MultiStepLR", "SGD", dict(milestones=[3, 10, 10, 25], gamma=0.5)),
    ("ConstantLR", "SGD", dict(factor=0.3, total_iters=6)),
    ("LinearLR", "SGD", dict(start_factor=0.1, end_factor=0.9, total_iters=13)),
    ("LinearLR", "Adam", dict(start_factor=1.0, end_factor=0.0, total_iters=50)),
    ("ExponentialLR", "SGD", dict(gamma=0.93)),
    ("CosineAnnealingLR", "SGD", dict(T_max=9, eta_min=0.001)),
    ("CosineAnnealingLR", "Adam", dict(T_max=50)),
    ("PolynomialLR", "SGD", dict(total_iters=17, power=2.0)),
    ("PolynomialLR", "SGD", dict(total_iters=45, power=0.5)),
    ("CyclicLR", "SGD", dict(base_lr=0.01, max_lr=0.1, step_size_up=4)),
    ("CyclicLR", "SGD", dict(base_lr=[0.01, 0.02], max_lr=0.2, step_size_up=3, step_size_down=5,
                             mode="triangular2")),
    ("CyclicLR", "Adam", dict(base_lr=0.001, max_lr=0.01, step_size_up=5, mode="exp_range", gamma=0.97)),
    ("CyclicLR", "SGD", dict(base_lr=0.01, max_lr=0.1, step_size_up=6, scale_fn=scale_half,
                             scale_mode="iterations", cycle_momentum=False)),
    ("CosineAnnealingWarmRestarts", "SGD", dict(T_0=5, eta_min=0.002)),
    ("CosineAnnealingWarmRestarts", "SGD", dict(T_0=3, T_mult=2)),
    ("OneCycleLR", "SGD", dict(max_lr=0.5, total_steps=41)),
    ("OneCycleLR", "Adam", dict(max_lr=[0.01, 0.02], epochs=4, steps_per_epoch=11, anneal_strategy="linear",
                                pct_start=0.25)),
    ("OneCycleLR", "SGD", dict(max_lr=0.3, total_steps=45, three_phase=True, div_factor=10.0)),
    ("SWALR", "SGD", dict(swa_lr=0.01, anneal_epochs=6)),
    ("SWALR", "SGD", dict(swa_lr=[0.01, 0.3], anneal_epochs=0, anneal_strategy="linear")),
]


def run_config(lib, sched_name, opt_name, kw, steps=40):
    opt = make_optimizer(lib, opt_name)
    sched = getattr(sched_module(lib, sched_name), sched_name)(opt, **kw)
    seq = [(sched.get_last_lr(), lrs_of(opt))]
    for _ in range(steps):
        opt.step()
        sched.step()
        seq.append((sched.get_last_lr(), lrs_of(opt)))
    return seq


@pytest.mark.parametrize("sched_name, opt_name, kw", CONFIGS,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CONFIGS)])
def test_sequence_matches_torch(sched_name, opt_name, kw):
    assert run_config(tp, sched_name, opt_name, kw) == run_config(torch, sched_name, opt_name, kw)


def composite_sequence(lib, kind):
    opt = make_optimizer(lib)
    ls = lib.optim.lr_scheduler
    if kind == "sequential":
        sched = ls.SequentialLR(opt, [ls.LinearLR(opt, start_factor=0.2, total_iters=5),
                                      ls.ExponentialLR(opt, gamma=0.9),
                                      ls.CosineAnnealingLR(opt, T_max=6)], milestones=[5, 12])
    elif kind == "chained":
        sched = ls.ChainedScheduler([ls.ConstantLR(opt, factor=0.5, total_iters=4),
                                     ls.ExponentialLR(opt, gamma=0.95), ls.StepLR(opt, 3, gamma=0.8)])
    else:  # nested: a SequentialLR of a ChainedScheduler
        chain = ls.ChainedScheduler([ls.LinearLR(opt, start_factor=0.5, total_iters=3),
                                     ls.ExponentialLR(opt, gamma=0.9)])
        sched = ls.SequentialLR(opt, [chain, ls.StepLR(opt, 4, 0.5)], milestones=[6])
    seq = [(sched.get_last_lr(), lrs_of(opt))]
    for _ in range(25):
        opt.step()
        sched.step()
        seq.append((sched.get_last_lr(), lrs_of(opt)))
    return seq


@pytest.mark.parametrize("kind", ["sequential", "chained", "nested"])
def test_composite_schedulers_match_torch(kind):
    assert composite_sequence(tp, kind) == composite_sequence(torch, kind)


def plateau_sequence(lib, kw):
    opt = make_optimizer(lib)
    sched = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, **kw)
    metrics = [1.0, 0.9, 0.95, 0.95, 0.96, 0.97, 0.8, 0.81, 0.82, 0.83, 0.84, 0.85, 0.2, 0.3, 0.4, 0.5,
               0.6, 0.7, 0.8, 0.9, 1.0, 1.1]
    seq = []
    for m in metrics:
        opt.step()
        sched.step(m)
        seq.append((sched.get_last_lr(), lrs_of(opt), sched.num_bad_epochs, sched.best))
    return seq


@pytest.mark.parametrize("kw", [dict(patience=2), dict(mode="max", factor=0.5, patience=1, cooldown=2),
                                dict(threshold_mode="abs", threshold=0.05, patience=1, min_lr=[0.02, 0.001]),
                                dict(mode="max", threshold_mode="abs", patience=0, eps=0.5)])
def test_reduce_lr_on_plateau_matches_torch(kw):
    assert plateau_sequence(tp, kw) == plateau_sequence(torch, kw)


CLOSED_FORM = [("StepLR", dict(step_size=3)), ("MultiStepLR", dict(milestones=[2, 5, 5])),
               ("ConstantLR", dict(factor=0.5, total_iters=3)), ("LinearLR", dict(total_iters=4)),
               ("ExponentialLR", dict(gamma=0.8)), ("CosineAnnealingLR", dict(T_max=5)),
               ("PolynomialLR", dict(total_iters=6)), ("CosineAnnealingWarmRestarts", dict(T_0=3, T_mult=2)),
               ("LambdaLR", dict(lr_lambda=lambda e: 1.0 / (1 + e)))]


def closed_form_sequence(lib, name, kw):
    opt = make_optimizer(lib)
    sched = getattr(lib.optim.lr_scheduler, name)(opt, **kw)
    out = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for epoch in [0, 3, 1, 7, 2.5 if name == "CosineAnnealingWarmRestarts" else 2, 11, 4]:
            opt.step()
            sched.step(epoch)
            out.append((sched.get_last_lr(), sched.last_epoch))
    return out, [str(w.message) for w in caught]


@pytest.mark.parametrize("name, kw", CLOSED_FORM, ids=[c[0] for c in CLOSED_FORM])
def test_step_with_epoch_matches_torch(name, kw):
    ours, our_warnings = closed_form_sequence(tp, name, kw)
    theirs, their_warnings = closed_form_sequence(torch, name, kw)
    assert ours == theirs
    assert our_warnings == their_warnings
    if name != "CosineAnnealingWarmRestarts":  # it takes epochs without the deprecation
        assert tp.optim.lr_scheduler.EPOCH_DEPRECATION_WARNING in our_warnings


def state_keys(sched):
    return sorted(sched.state_dict().keys())


@pytest.mark.parametrize("sched_name, opt_name, kw", [c for c in CONFIGS if c[0] != "LambdaLR"] + [CONFIGS[0]],
                         ids=lambda c: c if isinstance(c, str) else "")
def test_state_dict_round_trip(sched_name, opt_name, kw):
    """Save after 7 steps, load into a fresh scheduler: the rest of the sequence is the
    uninterrupted one; the saved keys are torch's."""
    def make(lib):
        opt = make_optimizer(lib, opt_name)
        return opt, getattr(sched_module(lib, sched_name), sched_name)(opt, **kw)

    opt, sched = make(tp)
    _, torch_sched = make(torch)
    assert state_keys(sched) == state_keys(torch_sched)
    for _ in range(7):
        opt.step()
        sched.step()
    saved_state, saved_opt = sched.state_dict(), opt.state_dict()
    expected = []
    for _ in range(10):
        opt.step()
        sched.step()
        expected.append(lrs_of(opt))
    opt2, sched2 = make(tp)
    opt2.load_state_dict(saved_opt)
    sched2.load_state_dict(saved_state)
    got = []
    for _ in range(10):
        opt2.step()
        sched2.step()
        got.append(lrs_of(opt2))
    assert got == expected


def test_lambda_state_dict_keeps_callable_object_state():
    class Decay:
        def __init__(self, rate):
            self.rate = rate

        def __call__(self, epoch):
            return self.rate ** epoch

    opt = make_optimizer(tp)
    sched = tp.optim.lr_scheduler.LambdaLR(opt, [Decay(0.9), lambda e: 1.0])
    state = sched.state_dict()
    assert state["lr_lambdas"] == [{"rate": 0.9}, None]
    other = tp.optim.lr_scheduler.LambdaLR(make_optimizer(tp), [Decay(0.5), lambda e: 1.0])
    other.load_state_dict(state)
    assert other.lr_lambdas[0].rate == 0.9


def captured(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [(w.category, str(w.message)) for w in caught]


def warnings_of(lib, case):
    opt = make_optimizer(lib)
    sched = lib.optim.lr_scheduler.StepLR(opt, 2)
    if case == "scheduler_first":
        return captured(sched.step)
    if case == "get_lr_outside_step":
        return captured(sched.get_lr)
    if case == "overridden_step":
        opt.step = lambda *a, **k: None
        return captured(sched.step)
    opt.step()
    return captured(sched.step)  # the right order: no warning


@pytest.mark.parametrize("case", ["scheduler_first", "get_lr_outside_step", "overridden_step", "right_order"])
def test_warnings_match_torch(case):
    ours, theirs = warnings_of(tp, case), warnings_of(torch, case)
    assert ours == theirs
    assert (len(ours) == 0) == (case == "right_order")


def error_of(lib, make):
    try:
        make(lib, make_optimizer(lib))
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return type(e), str(e)
    return None


ERRORS = {
    "not_optimizer": lambda lib, opt: lib.optim.lr_scheduler.StepLR(object(), 3),
    "resume_without_initial_lr": lambda lib, opt: lib.optim.lr_scheduler.StepLR(opt, 3, last_epoch=4),
    "constant_factor": lambda lib, opt: lib.optim.lr_scheduler.ConstantLR(opt, factor=1.5),
    "linear_start": lambda lib, opt: lib.optim.lr_scheduler.LinearLR(opt, start_factor=0),
    "linear_end": lambda lib, opt: lib.optim.lr_scheduler.LinearLR(opt, end_factor=2),
    "lambda_count": lambda lib, opt: lib.optim.lr_scheduler.LambdaLR(opt, [lambda e: 1.0]),
    "multiplicative_not_callable": lambda lib, opt: lib.optim.lr_scheduler.MultiplicativeLR(opt, 0.5),
    "plateau_factor": lambda lib, opt: lib.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=1.0),
    "plateau_mode": lambda lib, opt: lib.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="up"),
    "plateau_threshold_mode": lambda lib, opt: lib.optim.lr_scheduler.ReduceLROnPlateau(opt, threshold_mode="x"),
    "plateau_min_lrs": lambda lib, opt: lib.optim.lr_scheduler.ReduceLROnPlateau(opt, min_lr=[0.1]),
    "cyclic_mode": lambda lib, opt: lib.optim.lr_scheduler.CyclicLR(opt, 0.1, 1.0, mode="sine"),
    "cyclic_lengths": lambda lib, opt: lib.optim.lr_scheduler.CyclicLR(opt, [0.1], 1.0),
    "cyclic_no_momentum": lambda lib, opt: lib.optim.lr_scheduler.CyclicLR(
        lib.optim.Adagrad([lib.nn.Parameter(lib.zeros(1))]), 0.1, 1.0),
    "warm_restarts_T_0": lambda lib, opt: lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=0),
    "warm_restarts_T_mult": lambda lib, opt: lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, 2, T_mult=0),
    "warm_restarts_eta_min": lambda lib, opt: lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, 2, eta_min="0"),
    "warm_restarts_negative_epoch": lambda lib, opt: lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(
        opt, 2).step(-1),
    "one_cycle_no_length": lambda lib, opt: lib.optim.lr_scheduler.OneCycleLR(opt, 0.1),
    "one_cycle_total_steps": lambda lib, opt: lib.optim.lr_scheduler.OneCycleLR(opt, 0.1, total_steps=0),
    "one_cycle_epochs": lambda lib, opt: lib.optim.lr_scheduler.OneCycleLR(opt, 0.1, epochs=0, steps_per_epoch=2),
    "one_cycle_pct": lambda lib, opt: lib.optim.lr_scheduler.OneCycleLR(opt, 0.1, total_steps=5, pct_start=1),
    "one_cycle_anneal": lambda lib, opt: lib.optim.lr_scheduler.OneCycleLR(opt, 0.1, total_steps=5,
                                                                           anneal_strategy="exp"),
    "one_cycle_overrun": lambda lib, opt: [lib.optim.lr_scheduler.OneCycleLR(opt, 0.1, total_steps=2).step()
                                           for _ in range(1)] and
    [s.step() for s in [lib.optim.lr_scheduler.OneCycleLR(opt, 0.1, total_steps=1)] for _ in range(2)],
    "sequential_empty": lambda lib, opt: lib.optim.lr_scheduler.SequentialLR(opt, [], []),
    "sequential_milestones": lambda lib, opt: lib.optim.lr_scheduler.SequentialLR(
        opt, [lib.optim.lr_scheduler.StepLR(opt, 2)], milestones=[3]),
    "sequential_plateau": lambda lib, opt: lib.optim.lr_scheduler.SequentialLR(
        opt, [lib.optim.lr_scheduler.ReduceLROnPlateau(opt)], milestones=[]),
    "chained_empty": lambda lib, opt: lib.optim.lr_scheduler.ChainedScheduler([]),
    "chained_not_scheduler": lambda lib, opt: lib.optim.lr_scheduler.ChainedScheduler([object()]),
    "swalr_strategy": lambda lib, opt: lib.optim.swa_utils.SWALR(opt, 0.1, anneal_strategy="exp"),
    "swalr_epochs": lambda lib, opt: lib.optim.swa_utils.SWALR(opt, 0.1, anneal_epochs=-1),
    "swalr_lengths": lambda lib, opt: lib.optim.swa_utils.SWALR(opt, [0.1, 0.2, 0.3]),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_errors_match_torch(case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours, theirs = error_of(tp, ERRORS[case]), error_of(torch, ERRORS[case])
    assert theirs is not None
    assert ours == theirs


def test_lr_scheduler_alias_and_exports():
    assert issubclass(tp.optim.lr_scheduler._LRScheduler, tp.optim.lr_scheduler.LRScheduler)
    assert sorted(tp.optim.lr_scheduler.__all__) == sorted(torch.optim.lr_scheduler.__all__)
