"""The random ops against PyTorch, bit for bit: the same seed and call sequence must give
the same bits (and the generators the same 5056-byte state) in both libraries."""
import copy
import pickle

import numpy as np
import pytest
import torch

import tensorplay as tp

SEEDS = [0, 1, 2024, 67280421310721, 2**63 + 5]
SIZES = [0, 1, 7, 15, 16, 17, 1000]
FLOATS = ["float32", "float64", "float16", "bfloat16"]
INTS = ["uint8", "int8", "int16", "int32", "int64"]


def bits(x):
    """A NumPy array holding x's exact bits (bfloat16 through float32, which holds it)."""
    x = x.detach()
    if isinstance(x, torch.Tensor):
        return (x.float() if x.dtype == torch.bfloat16 else x).numpy()
    return (x.to(tp.float32) if x.dtype == tp.bfloat16 else x).numpy()


def assert_same(t, p):
    a, b = bits(t), bits(p)
    assert str(t.dtype).split(".")[-1] == str(p.dtype).split(".")[-1]
    assert a.shape == b.shape
    if a.dtype.kind == "f":  # NaN-aware, sign-of-zero-aware
        assert np.array_equal(a.view(f"u{a.itemsize}"), b.view(f"u{b.itemsize}")), \
            f"{np.sum(a != b)} of {a.size} differ"
    else:
        assert np.array_equal(a, b), f"{np.sum(a != b)} of {a.size} differ"


def assert_same_state():
    assert np.array_equal(torch.get_rng_state().numpy(), tp.get_rng_state().numpy())


def both(seed, fn):
    """fn(lib) run after seeding each library with `seed`; the results and states compared."""
    torch.manual_seed(seed)
    tp.manual_seed(seed)
    t, p = fn(torch), fn(tp)
    if isinstance(t, torch.Tensor):
        assert_same(t, p)
    assert_same_state()
    return t, p


def dt(lib, name):
    return getattr(lib, name)


# ---------------------------------------------------------------- generator and state
def test_default_seed_and_state_layout():
    g, tg = tp.Generator(), torch.Generator()
    assert g.initial_seed() == tg.initial_seed() == 67280421310721
    assert g.device == tp.device("cpu")
    s = g.get_state()
    assert s.dtype == tp.uint8 and s.shape == (5056,)
    assert np.array_equal(s.numpy(), tg.get_state().numpy())


@pytest.mark.parametrize("seed", SEEDS + [-1, -(2**63)])
def test_manual_seed_matches_state(seed):
    g = tp.Generator()
    assert g.manual_seed(seed) is g
    tg = torch.Generator().manual_seed(seed)
    assert g.initial_seed() == tg.initial_seed()
    assert np.array_equal(g.get_state().numpy(), tg.get_state().numpy())


def test_manual_seed_errors():
    for bad in (2**64, -(2**63) - 1):
        with pytest.raises(ValueError, match="Overflow"):
            tp.Generator().manual_seed(bad)
    with pytest.raises(TypeError, match="manual_seed expected a long"):
        tp.Generator().manual_seed(1.5)
    assert tp.manual_seed(3.9).initial_seed() == 3  # the module function takes int(seed)


def test_seed_is_nondeterministic_and_recorded():
    g = tp.Generator()
    s1, s2 = g.seed(), g.seed()
    assert s1 != s2 and g.initial_seed() == s2
    assert isinstance(tp.seed(), int)


def test_state_round_trips_both_ways():
    torch.manual_seed(5)
    torch.randn(3, dtype=torch.float64)  # leaves a cached normal in the state
    torch.rand(700)                      # and crosses a twist
    tp.set_rng_state(tp.from_numpy(torch.get_rng_state().numpy()))
    assert_same_state()
    assert_same(torch.randn(5, dtype=torch.float64), tp.randn(5, dtype=tp.float64))
    # and back: a TensorPlay state continues in PyTorch
    tp.manual_seed(9)
    tp.rand(1000)
    tp.randn(1, dtype=tp.float64)
    torch.set_rng_state(torch.from_numpy(tp.get_rng_state().numpy().copy()))
    assert_same(torch.randn(7, dtype=torch.float64), tp.randn(7, dtype=tp.float64))
    assert_same_state()


def test_generator_objects_are_independent_streams():
    g, tg = tp.Generator().manual_seed(11), torch.Generator().manual_seed(11)
    tp.manual_seed(0)
    torch.manual_seed(0)
    assert_same(torch.rand(20, generator=tg), tp.rand(20, generator=g))
    assert_same(torch.rand(20), tp.rand(20))  # the default stream did not move
    assert np.array_equal(g.get_state().numpy(), tg.get_state().numpy())


def test_set_state_errors():
    for n in (10, 5048):  # PyTorch 2.13 no longer takes the legacy 5048-byte form either
        with pytest.raises(RuntimeError, match="Expected a CPUGeneratorImplState of size 5056 "
                           f"but found the input RNG state size to be {n}"):
            tp.set_rng_state(tp.zeros(n, dtype=tp.uint8))
    with pytest.raises(TypeError, match="ByteTensor"):
        tp.set_rng_state(tp.zeros(5056))
    bad = tp.get_rng_state().numpy().copy()
    bad[8:12] = 0  # left = 0
    with pytest.raises(RuntimeError, match="Invalid mt19937 state"):
        tp.set_rng_state(tp.from_numpy(bad))


def test_clone_pickle_deepcopy_continue_the_stream():
    g = tp.Generator().manual_seed(4)
    g2, g3, g4 = g.clone_state(), pickle.loads(pickle.dumps(g)), copy.deepcopy(g)
    want = tp.rand(10, generator=g)
    for other in (g2, g3, g4):
        assert_same(want, tp.rand(10, generator=other))


def test_fork_rng_restores_state():
    tp.manual_seed(3)
    before = tp.get_rng_state().numpy()
    with tp.random.fork_rng():
        tp.rand(50)
    assert np.array_equal(before, tp.get_rng_state().numpy())
    with tp.random.fork_rng(enabled=False):
        tp.rand(50)
    assert not np.array_equal(before, tp.get_rng_state().numpy())


# ---------------------------------------------------------------- bitwise grid
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", FLOATS)
def test_rand_randn(seed, n, dtype):
    both(seed, lambda m: m.rand(n, dtype=dt(m, dtype)))
    both(seed, lambda m: m.randn(n, dtype=dt(m, dtype)))


@pytest.mark.parametrize("dtype", FLOATS)
def test_rand_randn_large(dtype):
    both(7, lambda m: m.randn(1_000_003, dtype=dt(m, dtype)))
    both(7, lambda m: m.rand(1_000_003, dtype=dt(m, dtype)))
    both(7, lambda m: m.empty(1_000_000, dtype=dt(m, dtype)).bernoulli_(0.3))
    both(7, lambda m: m.randint(-5, 1000, (1_000_000,), dtype=dt(m, dtype)))
    both(7, lambda m: m.randperm(1_000_000))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", FLOATS)
def test_uniform_normal_parameters(n, dtype):
    both(1, lambda m: m.empty(n, dtype=dt(m, dtype)).uniform_(-3.7, 5.1))
    both(1, lambda m: m.empty(n, dtype=dt(m, dtype)).normal_(0.3, 1.7))
    both(1, lambda m: m.normal(0.3, 1.7, (n,), dtype=dt(m, dtype)))


@pytest.mark.parametrize("dtype", FLOATS)
def test_like_factories(dtype):
    x = torch.empty(4, 5, dtype=getattr(torch, dtype))
    y = tp.empty(4, 5, dtype=getattr(tp, dtype))
    both(2, lambda m: m.rand_like(x if m is torch else y))
    both(2, lambda m: m.randn_like(x if m is torch else y))
    both(2, lambda m: m.randint_like(x if m is torch else y, 10))
    both(2, lambda m: m.randint_like(x if m is torch else y, -5, 10))


def test_like_factories_keep_a_dense_layout():
    # a channels-last input gives a channels-last result, filled in memory order
    x = torch.empty(2, 3, 4, 5).to(memory_format=torch.channels_last)
    y = tp.empty(2, 4, 5, 3).permute(0, 3, 1, 2)
    t, p = both(3, lambda m: m.randn_like(x if m is torch else y))
    assert tuple(p.stride()) == t.stride()
    both(3, lambda m: m.rand_like(x if m is torch else y))
    for fmt in ("contiguous_format", "channels_last", "preserve_format"):
        z = torch.empty(2, 3, 4, 5)
        w = tp.empty(2, 3, 4, 5)
        t, p = both(3, lambda m: m.randn_like(z if m is torch else w,
                                              memory_format=getattr(m, fmt)))
        assert tuple(p.stride()) == t.stride()
        t, p = both(3, lambda m: m.randint_like(x if m is torch else y, 3, 9,
                                                memory_format=getattr(m, fmt)))
        assert tuple(p.stride()) == t.stride()


@pytest.mark.parametrize("dtype", INTS + FLOATS + ["bool"])
@pytest.mark.parametrize("n", [1, 17, 1000])
def test_random_(dtype, n):
    both(4, lambda m: m.empty(n, dtype=dt(m, dtype)).random_())
    both(4, lambda m: m.empty(n, dtype=dt(m, dtype)).random_(2))
    if dtype != "bool":
        both(4, lambda m: m.empty(n, dtype=dt(m, dtype)).random_(3, 100))
        both(4, lambda m: m.empty(n, dtype=dt(m, dtype)).random_(5, None))
        both(4, lambda m: m.randint(-3 if dtype not in ("uint8", "bool") else 0, 90, (n,),
                                    dtype=dt(m, dtype)))
    if dtype in ("int64", "float32", "float64", "bfloat16"):
        both(4, lambda m: m.empty(n, dtype=dt(m, dtype)).random_(-2**63, None))
    if dtype in ("int64", "float64"):
        both(4, lambda m: m.randint(0, 2**40, (n,), dtype=dt(m, dtype)))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n", SIZES)
def test_randint(seed, n):
    both(seed, lambda m: m.randint(10, (n,)))
    both(seed, lambda m: m.randint(-7, 2**33, (n, 2)))


@pytest.mark.parametrize("n", [0, 1, 2, 7, 16, 17, 1000, 100_000])
@pytest.mark.parametrize("dtype", ["int64", "int32", "float32", "float64", "int16"])
def test_randperm(n, dtype):
    if dtype == "int16" and n > 32768:
        return
    both(n, lambda m: m.randperm(n, dtype=dt(m, dtype)))


@pytest.mark.parametrize("dtype", INTS + FLOATS + ["bool"])
@pytest.mark.parametrize("n", [1, 17, 1000])
def test_bernoulli(dtype, n):
    both(6, lambda m: m.empty(n, dtype=dt(m, dtype)).bernoulli_(0.3))
    both(6, lambda m: m.empty(n, dtype=dt(m, dtype)).bernoulli_())
    for pdt in ("float32", "float64", "float16", "bfloat16"):
        p = np.linspace(0, 1, n)
        both(6, lambda m: m.empty(n, dtype=dt(m, dtype)).bernoulli_(
            m.tensor(p, dtype=dt(m, pdt))))
    both(6, lambda m: m.empty(3, n, dtype=dt(m, dtype)).bernoulli_(m.tensor(0.25)))  # broadcast


@pytest.mark.parametrize("dtype", FLOATS)
def test_bernoulli_functional(dtype):
    p = np.random.default_rng(0).random((30, 7))
    both(8, lambda m: m.bernoulli(m.tensor(p, dtype=dt(m, dtype))))
    both(8, lambda m: m.tensor(p, dtype=dt(m, dtype)).bernoulli())
    both(8, lambda m: m.bernoulli(m.tensor(p, dtype=dt(m, dtype)), 0.7))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", [1, 17, 1000])
def test_continuous_samplers(dtype, n):
    both(9, lambda m: m.empty(n, dtype=dt(m, dtype)).exponential_())
    both(9, lambda m: m.empty(n, dtype=dt(m, dtype)).exponential_(2.5))
    both(9, lambda m: m.empty(n, dtype=dt(m, dtype)).log_normal_())
    both(9, lambda m: m.empty(n, dtype=dt(m, dtype)).log_normal_(0.3, 0.4))
    both(9, lambda m: m.empty(n, dtype=dt(m, dtype)).cauchy_())
    both(9, lambda m: m.empty(n, dtype=dt(m, dtype)).cauchy_(1.5, 0.25))


@pytest.mark.parametrize("dtype", INTS + FLOATS)
def test_geometric(dtype):
    both(10, lambda m: m.empty(500, dtype=dt(m, dtype)).geometric_(0.3))


@pytest.mark.parametrize("dtype", FLOATS)
def test_normal_tensor_overloads(dtype):
    mean = np.linspace(-2, 2, 40).reshape(8, 5)
    std = np.linspace(0.1, 3, 5)
    both(12, lambda m: m.normal(m.tensor(mean, dtype=dt(m, dtype)), 0.5))
    both(12, lambda m: m.normal(1.5, m.tensor(std, dtype=dt(m, dtype))))
    both(12, lambda m: m.normal(m.tensor(mean, dtype=dt(m, dtype)), m.tensor(std, dtype=dt(m, dtype))))
    both(12, lambda m: m.normal(m.tensor(mean, dtype=dt(m, dtype)), 0.5,
                                out=m.empty(8, 5, dtype=dt(m, dtype))))
    both(12, lambda m: m.normal(1.5, m.tensor(std, dtype=dt(m, dtype)),
                                out=m.empty(5, dtype=dt(m, dtype))))
    both(12, lambda m: m.normal(m.tensor(mean, dtype=dt(m, dtype)), m.tensor(std, dtype=dt(m, dtype)),
                                out=m.empty(8, 5, dtype=dt(m, dtype))))
    both(12, lambda m: m.normal(2.0, 3.0, (4, 6), dtype=dt(m, dtype), out=m.empty(0, dtype=dt(m, dtype))))


@pytest.mark.parametrize("dtype", FLOATS)
def test_multinomial(dtype):
    w = np.random.default_rng(1).random((6, 30))
    w[:, 3] = 0
    for n, repl in ((1, False), (1, True), (5, False), (30, False), (7, True), (200, True)):
        both(13, lambda m: m.multinomial(m.tensor(w, dtype=dt(m, dtype)), n, repl))
        both(13, lambda m: m.tensor(w[0], dtype=dt(m, dtype)).multinomial(n, replacement=repl))


@pytest.mark.parametrize("dtype", FLOATS)
def test_poisson(dtype):
    rates = np.concatenate([np.linspace(0, 9.9, 50), np.linspace(10, 300, 50)])
    both(14, lambda m: m.poisson(m.tensor(rates, dtype=dt(m, dtype))))


def test_interleaved_calls_share_one_stream():
    def seq(m):
        out = [m.rand(5), m.randn(3, dtype=m.float64), m.randint(0, 10, (7,)), m.randperm(10),
               m.empty(3).normal_(), m.randn(20), m.empty(4, dtype=m.float64).exponential_(),
               m.randn(1, dtype=m.float64), m.empty(9).bernoulli_(0.5), m.rand(3, dtype=m.half),
               m.multinomial(m.ones(10), 4), m.empty(2, 3).t().uniform_()]
        return out
    torch.manual_seed(77)
    tp.manual_seed(77)
    for t, p in zip(seq(torch), seq(tp)):
        assert_same(t, p)
    assert_same_state()


@pytest.mark.parametrize("make", ["transposed", "sliced", "channels_last"])
def test_non_contiguous_outputs_fill_in_memory_order(make):
    def out(m):
        if make == "transposed":
            return m.empty(6, 5).t()
        if make == "sliced":
            return m.empty(6, 10)[:, ::3]
        x = m.empty(2, 4, 5, 3)
        return x.permute(0, 3, 1, 2)
    for fill in (lambda t: t.uniform_(), lambda t: t.normal_(), lambda t: t.bernoulli_(0.4),
                 lambda t: t.random_(0, 50), lambda t: t.exponential_(),
                 lambda t: t.bernoulli_(t.new_full if False else 0.6)):
        both(15, lambda m: fill(out(m)))
    big = lambda m: m.empty(40, 30).t()  # >= 16 elements, not contiguous: the per-element path
    both(15, lambda m: big(m).normal_(0.5, 2.0))


def test_generator_keyword_everywhere():
    def calls(m, g):
        x = m.ones(4, 6) * 0.5
        return [m.rand(3, generator=g), m.randn(3, generator=g), m.randint(5, (3,), generator=g),
                m.randint(1, 5, (3,), generator=g), m.randperm(5, generator=g),
                m.rand_like(x, generator=g), m.randn_like(x, generator=g),
                m.randint_like(x, 4, generator=g), m.normal(x, 1.0, generator=g),
                m.normal(0.0, x, generator=g), m.normal(x, x, generator=g),
                m.normal(0.0, 1.0, (2,), generator=g), m.bernoulli(x, generator=g),
                m.bernoulli(x, 0.2, generator=g), m.multinomial(x, 2, generator=g),
                m.poisson(x, generator=g), m.empty(3).uniform_(generator=g),
                m.empty(3).normal_(generator=g), m.empty(3).bernoulli_(0.5, generator=g),
                m.empty(3).bernoulli_(m.ones(3) * 0.5, generator=g),
                m.empty(3).exponential_(generator=g), m.empty(3).geometric_(0.5, generator=g),
                m.empty(3).log_normal_(generator=g), m.empty(3).cauchy_(generator=g),
                m.empty(3).random_(generator=g), m.empty(3).random_(7, generator=g),
                m.empty(3).random_(2, 7, generator=g)]
    tg, g = torch.Generator().manual_seed(21), tp.Generator().manual_seed(21)
    torch.manual_seed(0)
    tp.manual_seed(0)
    for t, p in zip(calls(torch, tg), calls(tp, g)):
        assert_same(t, p)
    assert np.array_equal(g.get_state().numpy(), tg.get_state().numpy())
    assert_same_state()  # the default streams never moved


def test_inplace_samplers_return_self_and_bump_version():
    x = tp.empty(5)
    v = x._version
    for f in (x.uniform_, x.normal_, x.bernoulli_, x.exponential_, x.cauchy_, x.log_normal_,
              x.random_):
        assert f() is x
    assert x._version == v + 7


def test_gradients_are_zero_where_pytorch_defines_them():
    mean = tp.zeros(3, requires_grad=True)
    std = tp.ones(3, requires_grad=True)
    tp.normal(mean, std).sum().backward()
    assert mean.grad.tolist() == [0.0] * 3 and std.grad.tolist() == [0.0] * 3
    lam = tp.ones(3, requires_grad=True)
    tp.poisson(lam).sum().backward()
    assert lam.grad.tolist() == [0.0] * 3
    x = tp.zeros(3, requires_grad=True).clone()
    x.uniform_()
    x.sum().backward()
    with pytest.raises(NotImplementedError):
        tp.full((3,), 0.5, requires_grad=True).bernoulli(0.3).sum().backward()


# ---------------------------------------------------------------- bad arguments
@pytest.mark.parametrize("call, exc, msg", [
    (lambda m: m.randint(5, 2, (3,)), RuntimeError, "random_ expects 'from' to be less than 'to', but got from=5 >= to=2"),
    (lambda m: m.randperm(-1), RuntimeError, "negative dimension -1"),
    (lambda m: m.randperm(3000, dtype=m.half), RuntimeError, "n cannot be greater than 2049 for Half type."),
    (lambda m: m.multinomial(m.tensor([-1.0, 2.0]), 1), RuntimeError, "probability tensor contains either `inf`, `nan` or element < 0"),
    (lambda m: m.multinomial(m.tensor([-1.0, 2.0]), 2, True), RuntimeError, "invalid multinomial distribution (encountering probability entry < 0)"),
    (lambda m: m.multinomial(m.tensor([float("inf"), 2.0]), 2, True), RuntimeError, "encountering probability entry = infinity or NaN"),
    (lambda m: m.multinomial(m.zeros(3), 1), RuntimeError, "invalid multinomial distribution (sum of probabilities <= 0)"),
    (lambda m: m.multinomial(m.ones(3), 4), RuntimeError, "cannot sample n_sample > prob_dist.size(-1) samples without replacement"),
    (lambda m: m.multinomial(m.ones(3), 0), RuntimeError, "cannot sample n_sample <= 0 samples"),
    (lambda m: m.multinomial(m.ones(2, 2, 2), 1), RuntimeError, "prob_dist must be 1 or 2 dim"),
    (lambda m: m.multinomial(m.ones(3, dtype=m.int64), 1), RuntimeError, "multinomial only supports floating-point dtypes for input, got: Long"),
    (lambda m: m.empty(3).uniform_(2, 1), RuntimeError, "uniform_ expects to return a [from, to) range, but found from=2 > to=1"),
    (lambda m: m.empty(3).normal_(0, -1), RuntimeError, "normal expects std >= 0.0, but found std -1"),
    (lambda m: m.normal(m.zeros(2), m.tensor([-1.0, 1.0])), RuntimeError, "normal expects all elements of std >= 0.0"),
    (lambda m: m.normal(m.zeros(2), m.tensor([float("nan"), 1.0])), RuntimeError, "normal expects all elements of std >= 0.0"),
    (lambda m: m.normal(1.0, m.tensor([2.0, float("nan")])), RuntimeError, "normal expects all elements of std >= 0.0"),
    (lambda m: m.empty(3).bernoulli_(1.5), RuntimeError, "bernoulli_ expects p to be in [0, 1], but got p=1.5"),
    (lambda m: m.empty(3).bernoulli_(m.tensor([0.2, 1.5, 0.3])), RuntimeError, "Expected p_in >= 0 && p_in <= 1 to be true"),
    (lambda m: m.empty(3, dtype=m.int64).exponential_(), RuntimeError, "dtype must be a floating point but you specified Long"),
    (lambda m: m.empty(3).exponential_(0), RuntimeError, "exponential_ expects lambda > 0.0, but found lambda=0"),
    (lambda m: m.empty(3).geometric_(0), RuntimeError, "geometric_ expects p to be in (0, 1), but got p=0"),
    (lambda m: m.empty(3).log_normal_(0, 0), RuntimeError, "log_normal_ expects std > 0.0, but found std=0"),
    (lambda m: m.empty(3).cauchy_(0, 0), RuntimeError, "cauchy_ expects sigma > 0.0, but found sigma=0"),
    (lambda m: m.empty(3, dtype=m.int8).random_(0, 300), RuntimeError, "to - 1 is out of bounds for signed char"),
    (lambda m: m.empty(3, dtype=m.int16).random_(-1000000, 10), RuntimeError, "from is out of bounds for short int"),
    (lambda m: m.poisson(m.tensor([-1.0])), RuntimeError, "invalid Poisson rate, expected rate to be non-negative"),
    (lambda m: m.rand(3, dtype=m.int64), NotImplementedError, "\"check_uniform_bounds\" not implemented for 'Long'"),
    (lambda m: m.randn(3, dtype=m.int64), NotImplementedError, "\"normal_kernel_cpu\" not implemented for 'Long'"),
    (lambda m: m.empty(3, dtype=m.bool).normal_(), NotImplementedError, "\"normal_kernel_cpu\" not implemented for 'Bool'"),
    (lambda m: m.empty(2, 3).expand(2, 2, 3).uniform_(), RuntimeError, "more than one element of the written-to tensor refers to a single memory location"),
])
def test_bad_arguments_raise_pytorchs_errors(call, exc, msg):
    with pytest.raises(exc) as te:
        call(torch)
    assert msg in str(te.value)
    with pytest.raises(exc) as pe:
        call(tp)
    assert msg in str(pe.value)


def test_rand_rejects_a_non_generator():
    with pytest.raises(TypeError):
        tp.rand(2, generator=1)


def test_randperm_large_n_uses_the_inside_out_shuffle():
    # from n = 2^32 / 20 on, PyTorch switches to 64-bit draws and the inside-out shuffle
    n = 2**32 // 20 + 3
    torch.manual_seed(3)
    tp.manual_seed(3)
    a = torch.randperm(n, dtype=torch.int32).numpy()
    b = tp.randperm(n, dtype=tp.int32).numpy()
    assert np.array_equal(a, b)
    del a, b
    assert_same_state()


def test_factory_call_forms():
    both(1, lambda m: m.rand(size=(2, 3)))
    both(1, lambda m: m.randn(2, 3, out=m.empty(6)))
    both(1, lambda m: m.randint(high=10, size=(3,)))
    both(1, lambda m: m.randint(3, 10, size=(2,)))
    both(1, lambda m: m.randint(0, 5, (2,), out=m.empty(2, dtype=m.int64)))
    both(1, lambda m: m.randperm(5, out=m.empty(0, dtype=m.int64)))
    both(1, lambda m: m.empty(4).random_(**{"from": 2, "to": 9}))
    both(1, lambda m: m.randint_like(m.zeros(3), low=2, high=5))
    both(1, lambda m: m.empty(3).uniform_(to=2.0))
    t, p = both(1, lambda m: m.rand(2, requires_grad=True))
    assert p.requires_grad


def test_module_api():
    assert tp.manual_seed(5) is tp.default_generator
    assert tp.initial_seed() == 5 and tp.random.initial_seed() == 5
    assert isinstance(tp.Generator(), tp.random.Generator)
    assert tp.Generator("cpu").device.type == "cpu"
    if tp.cuda.is_available():  # CUDA generators: tests/python/test_cuda_random.py
        assert tp.Generator("cuda").device.type == "cuda"
    else:
        with pytest.raises(RuntimeError, match="generator|GPU"):
            tp.Generator("cuda")


BASELINE = """
import numpy as np, torch, tensorplay as tp
assert torch.backends.cpu.get_cpu_capability() == "DEFAULT"
for seed in (0, 5):
    for name in ("float32", "float64", "float16", "bfloat16"):
        for n in (7, 16, 17, 1000):
            for f in (lambda m: m.randn(n, dtype=getattr(m, name)),
                      lambda m: m.empty(n, dtype=getattr(m, name)).uniform_(-3.7, 5.1),
                      lambda m: m.empty(n, dtype=getattr(m, name)).normal_(0.3, 1.7),
                      lambda m: m.empty(n, dtype=getattr(m, name)).cauchy_(1.5, 0.25),
                      lambda m: m.empty(n, dtype=getattr(m, name)).log_normal_(0.3, 0.4),
                      lambda m: m.empty(n, 2, dtype=getattr(m, name))[:, 0].normal_(0.3, 1.7)):
                torch.manual_seed(seed); tp.manual_seed(seed)
                a, b = f(torch).float().numpy(), f(tp).to(tp.float32).numpy()
                assert np.array_equal(a.view(np.uint32), b.view(np.uint32)), (name, n)
print("ok")
"""


def test_baseline_cpu_capability_matches_too():
    # PyTorch's baseline build (no FMA, scalar Box-Muller) rounds differently from its AVX2
    # build; ATEN_CPU_CAPABILITY=default selects it in both libraries (TensorPlay reads it
    # when TP_CPU_CAPABILITY, which conftest.py sets, is unset)
    import os
    import subprocess
    import sys
    env = dict(os.environ, ATEN_CPU_CAPABILITY="default")
    env.pop("TP_CPU_CAPABILITY", None)
    r = subprocess.run([sys.executable, "-c", BASELINE], env=env, capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]
