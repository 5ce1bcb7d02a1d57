"""Generic op tests driven by the op database (python/tensorplay/testing/opdb.py).

Every opdb entry is run, for each dtype and each of its samples, in every call
form it claims (function, method, in-place, out=, Python operator) in both the
library under test and torch; results must have the same dtype, the same shape
and values close within the entry's tolerance.  Error inputs must raise the
same exception type in both, and unsupported dtypes must fail the same way.
"""
import re

import pytest
import torch

import tensorplay_opdb as opdb

OPS = opdb.op_db


def _params(pred=lambda op: True, dtypes=lambda op: op.dtypes):
    return [pytest.param(op, dt, id=f'{op.name}-{dt}')
            for op in OPS if pred(op) for dt in dtypes(op)]


def _outcome(fn):
    """('ok', result) or ('raised', exception)."""
    try:
        return 'ok', fn()
    except Exception as e:  # noqa: BLE001 - any exception is an outcome to compare
        return 'raised', e


def assert_matches(actual, expected, lib, *, tol, compare_values=True, ctx=''):
    """actual (from lib) agrees with expected (a torch result)."""
    if isinstance(expected, (tuple, list)):
        assert isinstance(actual, (tuple, list)) and len(actual) == len(expected), ctx
        for a, e in zip(actual, expected):
            assert_matches(a, e, lib, tol=tol, compare_values=compare_values, ctx=ctx)
        return
    if not isinstance(expected, torch.Tensor):
        assert actual == expected, f'{ctx}: {actual!r} != {expected!r}'
        return
    assert isinstance(actual, lib.Tensor), f'{ctx}: expected a {lib.__name__}.Tensor, got {type(actual)}'
    a_dt, e_dt = opdb.dtype_name(actual.dtype), opdb.dtype_name(expected.dtype)
    assert a_dt == e_dt, f'{ctx}: dtype {a_dt} != {e_dt}'
    assert tuple(actual.shape) == tuple(expected.shape), \
        f'{ctx}: shape {tuple(actual.shape)} != {tuple(expected.shape)}'
    if compare_values:
        rtol, atol = tol
        torch.testing.assert_close(opdb.to_torch(actual), expected, rtol=rtol, atol=atol,
                                   equal_nan=True, msg=lambda m: f'{ctx}\n{m}')


def _run(op, form, lib, sample, out_spec=None):
    args, kwargs = opdb.materialize(sample, lib)
    out = None
    if isinstance(out_spec, list):  # a tuple result: out= takes one tensor per field
        out = tuple(lib.zeros(shape, dtype=getattr(lib, dtype)) for shape, dtype in out_spec)
    elif out_spec is not None:
        shape, dtype = out_spec
        out = lib.zeros(shape, dtype=getattr(lib, dtype))
    return op.call(form, lib, args, kwargs, out=out)


def _out_spec(op, sample):
    """The out= of a sample's out form: the shapes and dtypes of torch's function result (a
    list for a tuple result); None where torch raises."""
    status, ref = _outcome(lambda: _run(op, 'function', torch, sample))
    if status == 'raised':
        return None
    if isinstance(ref, tuple):
        return [(tuple(r.shape), opdb.dtype_name(r.dtype)) for r in ref]
    return tuple(ref.shape), opdb.dtype_name(ref.dtype)


def _check_form(lib, op, dtype, form, layouts):
    """Runs every applicable sample in `form` in both libraries.  In the op's
    primary form torch must succeed (else the sample is broken); in the other
    forms a torch failure must be matched by the same exception type."""
    must_succeed = form == op.primary_form
    checked = 0
    for sample in op.sample_inputs(dtype):
        if not op.applies(form, sample) or sample.layout not in layouts:
            continue
        ctx = f'{op.name} [{form}] {sample!r}'
        out_spec = _out_spec(op, sample) if form == 'out' else None
        if form == 'out' and out_spec is None:
            continue
        t_status, expected = _outcome(lambda: _run(op, form, torch, sample, out_spec))
        if t_status == 'raised':
            assert not must_succeed, f'{ctx}: invalid sample, torch raised {expected!r}'
            with pytest.raises(opdb.lib_exception(type(expected), lib)):
                _run(op, form, lib, sample, out_spec)
            continue
        actual = _run(op, form, lib, sample, out_spec)
        # tolerance by the result's dtype: int inputs can give float results
        first = expected[0] if isinstance(expected, (tuple, list)) and expected else expected
        tol = op.tolerance(first.dtype if isinstance(first, torch.Tensor) else dtype)
        assert_matches(actual, expected, lib, tol=tol, compare_values=op.compare_values, ctx=ctx)
        checked += 1
    return checked


@pytest.mark.parametrize('op', [pytest.param(op, id=op.name) for op in OPS])
def test_api_surface(lib, op):
    """Every form the entry claims exists."""
    missing = []
    if op.function and opdb.resolve(lib, op.name) is None:
        missing.append(f'{lib.__name__}.{op.name}')
    if op.method and not hasattr(lib.Tensor, op.name):
        missing.append(f'Tensor.{op.name}')
    if op.inplace and not hasattr(lib.Tensor, op.name + '_'):
        missing.append(f'Tensor.{op.name}_')
    assert not missing, f'missing: {missing}'


@pytest.mark.parametrize('op,dtype', _params(lambda op: op.function))
def test_function(lib, layouts, op, dtype):
    assert _check_form(lib, op, dtype, 'function', layouts) > 0


@pytest.mark.parametrize('op,dtype', _params(lambda op: op.method))
def test_method(lib, layouts, op, dtype):
    _check_form(lib, op, dtype, 'method', layouts)


@pytest.mark.parametrize('op,dtype', _params(lambda op: op.inplace))
def test_inplace(lib, layouts, op, dtype):
    _check_form(lib, op, dtype, 'inplace', layouts)


@pytest.mark.parametrize('op,dtype', _params(lambda op: op.out))
def test_out(lib, layouts, op, dtype):
    _check_form(lib, op, dtype, 'out', layouts)


@pytest.mark.parametrize('op,dtype', _params(lambda op: op.operator is not None))
def test_operator(lib, layouts, op, dtype):
    _check_form(lib, op, dtype, 'operator', layouts)


def _unsafe_inplace_params():
    params = []
    for op in OPS:
        if not op.inplace:
            continue
        for dt in op.dtypes:
            samples = opdb.unsafe_inplace_samples(op, dt)
            if samples:
                params.append(pytest.param(op, samples, id=f'{op.name}-{dt}'))
    return params


@pytest.mark.parametrize('op,samples', _unsafe_inplace_params())
def test_inplace_unsafe_cast(lib, layouts, op, samples):
    """In-place into a dtype that cannot hold the result raises RuntimeError."""
    for sample in (s for s in samples if s.layout in layouts):
        with pytest.raises(RuntimeError):
            _run(op, 'inplace', torch, sample)
        with pytest.raises(RuntimeError):
            _run(op, 'inplace', lib, sample)


def _error_params():
    return [pytest.param(op, err, id=f'{op.name}-{i}')
            for op in OPS for i, err in enumerate(op.error_inputs())]


@pytest.mark.parametrize('op,err', _error_params())
def test_error_inputs(lib, lib_is_torch, layouts, op, err):
    assert op.applies(err.form, err), f'{err!r} cannot be called as {err.form}'
    if err.layout not in layouts:
        pytest.skip(f'layout {err.layout} disabled by TP_OPDB_LAYOUTS')
    with pytest.raises(err.exc_type, match=err.match) as expected:
        _run(op, err.form, torch, err)
    with pytest.raises(opdb.lib_exception(type(expected.value), lib), match=err.match) as actual:
        _run(op, err.form, lib, err)
    if not lib_is_torch:
        assert _names_op(str(actual.value), op.message_names), \
            f'error message does not name {op.name!r}: {actual.value}'


def _names_op(message, names):
    """Whether one of names occurs as a word ('_' counts as a separator, so
    'round_cpu:' names round; 'ZeroDivisionError' does not name div)."""
    return any(re.search(rf'(?<![a-z0-9]){re.escape(n)}(?![a-z0-9])', message, re.I) for n in names)


def _unsupported_params():
    return [pytest.param(op, dt, id=f'{op.name}-{dt}')
            for op in OPS for dt in opdb.ALL_DTYPES
            if dt not in op.dtypes and next(iter(op.sample_inputs(dt)), None) is not None]


@pytest.mark.parametrize('op,dtype', _unsupported_params())
def test_unsupported_dtypes(lib, layouts, op, dtype):
    """For a dtype torch rejects, each non-empty sample behaves as in torch:
    the same exception type, or (where promotion rescues it) the same result."""
    form, raised = op.primary_form, 0
    for sample in op.sample_inputs(dtype):
        if sample.layout not in layouts or any(torch.as_tensor(t).numel() == 0
                                               for t in sample.tensors()):
            continue
        ctx = f'{op.name} [{form}] {sample!r}'
        status, expected = _outcome(lambda: _run(op, form, torch, sample))
        if status == 'raised':
            raised += 1
            with pytest.raises(opdb.lib_exception(type(expected), lib)):
                _run(op, form, lib, sample)
        elif opdb.is_tensor(expected) and expected.numel() > 0:
            actual = _run(op, form, lib, sample)
            assert_matches(actual, expected, lib, tol=op.tolerance(expected.dtype), ctx=ctx)
    assert raised, f'{op.name} does support {dtype} in torch: add it to the entry dtypes'


# Samples test_complex_support runs per entry: enough to see support, cheap over ~700 entries.
COMPLEX_PROBE_SAMPLES = 3


def _complex_samples(op, dtype='complex64'):
    """op's non-empty samples in dtype; none where its sample function cannot draw them
    (samples built with real-only torch ops, such as sorted inputs for searchsorted)."""
    try:
        return [s for s in op.sample_inputs(dtype)
                if not any(torch.as_tensor(t).numel() == 0 for t in s.tensors())]
    except RuntimeError:
        return []


def _complex_support_params():
    """Entries without complex dtypes whose samples can be drawn in complex64."""
    return [pytest.param(op, id=op.name) for op in OPS
            if 'complex64' not in op.dtypes and _complex_samples(op)]


def _complex_outcome(op, lib, sample):
    """'torch-raised' (with torch's exception), 'match', 'not-implemented', or 'wrong' (with
    what went wrong) for one sample in op's primary form."""
    form = op.primary_form
    status, expected = _outcome(lambda: _run(op, form, torch, sample))
    if status == 'raised':
        return 'torch-raised', expected
    status, actual = _outcome(lambda: _run(op, form, lib, sample))
    if status == 'raised':
        return ('not-implemented', actual) if isinstance(actual, NotImplementedError) else ('wrong', actual)
    first = expected[0] if isinstance(expected, (tuple, list)) and expected else expected
    tol = op.tolerance(first.dtype if isinstance(first, torch.Tensor) else 'complex64')
    try:
        assert_matches(actual, expected, lib, tol=tol, compare_values=op.compare_values)
    except AssertionError as e:
        return 'wrong', e
    return 'match', None


@pytest.mark.parametrize('op', _complex_support_params())
def test_complex_support(lib, lib_is_torch, op):
    """Note [Complex dtypes in the op database]: an entry without complex dtypes has torch
    reject them too (the same exception in both), or is listed in COMPLEX_NOT_YET (some
    sample raises NotImplementedError, none gives a wrong result)."""
    not_yet = opdb.COMPLEX_NOT_YET.get(op.name)
    outcomes = []
    samples = _complex_samples(op)
    if not_yet and not lib_is_torch:  # the first samples may be ones that already work
        first_refused = next((i for i, s in enumerate(samples)
                              if _complex_outcome(op, lib, s)[0] == 'not-implemented'), 0)
        samples = samples[max(0, first_refused - COMPLEX_PROBE_SAMPLES + 1):]
    for sample in samples[:COMPLEX_PROBE_SAMPLES]:
        ctx = f'{op.name} {sample!r}'
        kind, detail = _complex_outcome(op, lib, sample)
        outcomes.append(kind)
        if kind == 'torch-raised':
            with pytest.raises(opdb.lib_exception(type(detail), lib)):
                _run(op, op.primary_form, lib, sample)
        elif not lib_is_torch:
            assert not_yet, (f'{ctx}: torch supports complex64, the entry lacks it: add it to '
                             f'the dtypes, or to COMPLEX_NOT_YET with the reason ({kind}: {detail!r})')
            assert kind != 'wrong', f'{ctx}: unsupported complex must raise NotImplementedError: {detail!r}'
    computed = [k for k in outcomes if k != 'torch-raised']
    assert computed or not not_yet, f'{op.name}: torch rejects complex64 too; drop it from COMPLEX_NOT_YET'
    if not lib_is_torch and not_yet:
        assert 'not-implemented' in computed, \
            f'{op.name}: complex works now (COMPLEX_NOT_YET says {not_yet!r}): add complex to the dtypes'


@pytest.mark.parametrize('op', [pytest.param(op, id=op.name) for op in OPS if op.coverage])
def test_sample_coverage(op):
    """The database itself: samples cover 0-dim, empty, non-contiguous, ... inputs."""
    for dt in op.dtypes:
        traits = set()
        for sample in op.sample_inputs(dt):
            traits |= sample.traits()
        missing = set(op.coverage) - traits
        assert not missing, f'{op.name} samples for {dt} lack {sorted(missing)}'


def test_db_integrity():
    names = [op.name for op in OPS]
    assert len(names) == len(set(names))
    for op in OPS:
        assert op.dtypes and set(op.dtypes) <= set(opdb.ALL_AND_COMPLEX), op.name
        assert op.forms, op.name
    listed = set(opdb.COMPLEX_NOT_YET)
    assert listed <= set(names) and set(opdb.COMPLEX_OPS) <= set(names), \
        (listed | set(opdb.COMPLEX_OPS)) - set(names)
    assert not any('complex64' in op.dtypes for op in OPS if op.name in listed)
