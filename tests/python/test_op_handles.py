"""Schemas as data and op handles (tp.ops), against PyTorch's torch.ops and FunctionSchema."""
import pickle

import pytest
import torch

import tensorplay as tp

# Our ops whose schema still differs from PyTorch's op of the same name and overload, by
# why. Each is a real difference of the op's signature (not of printing); the test below
# fails when one is fixed, so the list only shrinks.
KNOWN_SCHEMA_DIFFERENCES = {
    # factories take requires_grad (PyTorch's binding handles it) and no layout / pin_memory
    'factory arguments': {
        'arange.default', 'arange.out', 'empty.memory_format', 'empty.out',
        'empty_strided.default', 'eye.default', 'eye.out', 'full.default', 'full.out', 'linspace.default', 'linspace.out',
        'logspace.default', 'logspace.out', 'ones.default', 'ones.out', 'rand.default',
        'rand.out', 'rand_like.default', 'randint.default', 'randint.out', 'randint.low',
        'randint.low_out', 'randint_like.default', 'randint_like.low_dtype', 'randn.default', 'randn.out',
        'randn_like.default', 'randperm.default', 'randperm.out', 'zeros.default', 'zeros.out',
        'normal.float_float', 'normal.float_float_out', 'tril_indices.default',
        'triu_indices.default'},
    # one op of ours covers two of PyTorch's overloads (an optional dim, rounding mode,
    # decimals, reduce, stable, padding='same', memory_format; div's rounding_mode defaults
    # to None, so div.Tensor_mode also serves div.Tensor)
    'merged overloads': {
        'sum.default', 'sum.out', 'mean.default', 'mean.out', 'prod.default', 'prod.out',
        'amax.default', 'amax.out', 'amin.default', 'amin.out', 'count_nonzero.default',
        'div.Tensor_mode', 'div.out_mode', 'div_.Tensor_mode', 'divide.Tensor_mode',
        'divide.out_mode', 'divide_.Tensor_mode', 'round.default', 'round.out',
        'round_.default', 'scatter.src', 'scatter.src_out', 'scatter.value',
        'scatter.value_out', 'scatter_.src', 'scatter_.value', 'sort.default',
        'argsort.default',
        'clone.default', 'contiguous.default', 'expand.default', 'nan_to_num.default',
        'nan_to_num.out', 'nan_to_num_.default', 'einsum.default', 'batch_norm.default',
        'resize_.default'},
    # (std, mean) and (var, mean) name their results (PyTorch's are unnamed)
    'named results': {
        'std_mean.default', 'std_mean.dim', 'std_mean.correction', 'var_mean.default',
        'var_mean.dim', 'var_mean.correction'},
    # int[] defaults written as one int (stride=1) where PyTorch lists them ([1, 1])
    'list defaults': {
        'conv1d.default', 'conv1d.padding', 'conv2d.default', 'conv2d.padding',
        'conv3d.default', 'conv3d.padding', 'conv_transpose1d.default',
        'conv_transpose2d.input', 'conv_transpose3d.input', 'avg_pool1d.default',
        'max_pool1d.default', 'max_pool1d_with_indices.default',
        'max_pool2d_with_indices.default', 'max_pool3d_with_indices.default',
        'adaptive_max_pool1d.default', 'adaptive_max_pool2d.default'},
    # linalg ops name their matrix argument A (PyTorch's Python name), PyTorch's aten
    # schema says self / input, or takes other tolerance types
    'linalg argument names': {
        'linalg_eigvals.default', 'linalg_eigvals.out', 'linalg_eig.default',
        'linalg_cholesky.default', 'linalg_cholesky.out', 'linalg_cholesky_ex.default',
        'linalg_eigh.default', 'linalg_eigvalsh.default', 'linalg_eigvalsh.out',
        'linalg_lstsq.default', 'linalg_matrix_exp.default', 'linalg_matrix_power.default',
        'linalg_matrix_power.out', 'linalg_matrix_rank.default', 'linalg_matrix_rank.out',
        'linalg_pinv.default', 'linalg_pinv.out'},
    # our internal forms of PyTorch's ops: other arguments or results
    'internal signatures': {
        '_embedding_bag.default', '_embedding_bag_backward.default',
        '_embedding_bag_forward_only.default', '_embedding_bag_per_sample_weights_backward.default',
        'embedding_bag.default', '_flash_attention_backward.default',
        '_flash_attention_forward.default', '_fused_adagrad_.default', '_fused_adam_.default',
        '_fused_sgd_.default', '_fused_rms_norm.default', '_fused_rms_norm_backward.default',
        '_softmax_backward_data.default', '_unique.default', 'grid_sampler_2d_backward.default',
        'grid_sampler_3d_backward.default', 'native_batch_norm.default',
        'native_batch_norm_backward.default', 'native_dropout.default',
        'native_group_norm.default', 'native_layer_norm.default',
        'native_layer_norm_backward.default'},
}


def _handles():
    for name, packet in sorted(tp.ops.aten._packets.items()):
        for overload, handle in packet._overloads.items():
            yield f'{name}.{overload}', handle


def test_parser_prints_every_pytorch_schema_as_pytorch():
    # every aten schema of tensor types parses and prints back character for character
    checked = 0
    for s in torch._C._jit_get_all_schemas():
        text = str(s)
        if not text.startswith('aten::'):
            continue
        try:
            ours = tp._C.parse_schema(text)
        except RuntimeError as e:  # TorchScript-only types (Dict, t, Future, ...)
            assert 'unknown type' in str(e) or 'expected' in str(e), (text, e)
            continue
        assert str(ours) == text
        checked += 1
    assert checked > 3000


def test_schema_objects():
    s = tp.ops.aten.add.Tensor._schema
    t = torch.ops.aten.add.Tensor._schema
    assert str(s) == str(t) == 'aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor'
    assert s.name == t.name and s.overload_name == t.overload_name
    assert [a.name for a in s.arguments] == [a.name for a in t.arguments]
    assert [a.kwarg_only for a in s.arguments] == [a.kwarg_only for a in t.arguments]
    assert [a.default_value for a in s.arguments] == [a.default_value for a in t.arguments]
    out = tp.ops.aten.add.out._schema
    assert out.arguments[-1].is_out and out.arguments[-1].alias_info.is_write
    assert out.is_mutable and not s.is_mutable
    view = tp.ops.aten.view.default._schema.arguments[0].alias_info
    assert view.before_set == {'a'} and not view.is_write
    assert tp.ops.aten.view.default.is_view and not tp.ops.aten.add.Tensor.is_view
    with pytest.raises(RuntimeError, match='invalid schema'):
        tp._C.parse_schema('add(Tensor self')


def test_schemas_match_pytorch():
    known = set().union(*KNOWN_SCHEMA_DIFFERENCES.values())
    differ, extra, same = set(), set(), 0
    for full, handle in _handles():
        name, overload = full.split('.')
        packet = getattr(torch.ops.aten, name, None)
        if packet is None:
            continue  # our internal ops (_gelu_backward, ...): no PyTorch counterpart
        if not hasattr(packet, overload):
            extra.add(full)
            continue
        if str(getattr(packet, overload)._schema) == str(handle._schema):
            same += 1
        else:
            differ.add(full)
    assert differ - known == set(), 'new schema differences'
    assert known - differ == set(), 'fixed: remove them from KNOWN_SCHEMA_DIFFERENCES'
    assert extra == set(), 'overload names PyTorch does not have'
    assert same > 500


def test_every_form_has_a_handle():
    forms = tp._C._op_forms()
    assert len(forms) == sum(1 for _ in _handles())
    for _op, _form, ns, name, overload, text, _tags in forms:
        h = getattr(getattr(getattr(tp.ops, ns), name), overload or 'default')
        assert str(h._schema) == str(tp._C.parse_schema(text))


def test_handle_calls():
    a, b = tp.tensor([1.0, 2.0]), tp.tensor([3.0, 4.0])
    assert tp.ops.aten.add.Tensor(a, b, alpha=2).tolist() == [7.0, 10.0]
    assert tp.ops.aten.add.Tensor(self=a, other=b).tolist() == [4.0, 6.0]
    assert tp.ops.aten.add.Tensor(a, 1).tolist() == [2.0, 3.0]  # a number for a Tensor
    c = a.clone()
    assert tp.ops.aten.add_.Tensor(c, b) is not None and c.tolist() == [4.0, 6.0]
    out = tp.empty(2)
    r = tp.ops.aten.add.out(a, b, out=out)
    assert r.data_ptr() == out.data_ptr() and out.tolist() == [4.0, 6.0]
    v, i = tp.ops.aten.max.dim(tp.tensor([[1.0, 5.0], [7.0, 2.0]]), 1)
    assert v.tolist() == [5.0, 7.0] and i.tolist() == [1, 0]
    assert tp.ops.aten.sum.default(tp.ones(2, 3), [1]).tolist() == [3.0, 3.0]
    assert tp.ops.aten.view.default(tp.ones(6), [2, 3]).shape == (2, 3)
    assert tp.ops.aten.add(a, b).tolist() == [4.0, 6.0]  # the packet picks the overload


def test_handle_bad_arguments_match_pytorch():
    a = tp.ones(2)
    cases = [((a,), {}, "is missing value for argument 'other'"),
             ((a, 'x'), {}, "Expected a value of type 'Tensor' for argument 'other' but instead found type 'str'"),
             ((a, a, 1, 2), {}, 'expected at most 3 argument(s) but received 4 argument(s)'),
             ((a, a, 1), {}, 'takes 2 positional argument(s) but 3 was/were given'),
             ((a, a), {'self': a}, "Argument 'self' specified both as positional and keyword argument"),
             ((a, a), {'bogus': 1}, "Unknown keyword argument 'bogus' for operator 'aten::add'")]
    ta = torch.ones(2)
    for args, kwargs, msg in cases:
        targs = tuple(ta if x is a else x for x in args)
        tkwargs = {k: ta if v is a else v for k, v in kwargs.items()}
        with pytest.raises(RuntimeError) as theirs:
            torch.ops.aten.add.Tensor(*targs, **tkwargs)
        with pytest.raises(RuntimeError) as ours:
            tp.ops.aten.add.Tensor(*args, **kwargs)
        assert msg in str(ours.value) and msg in str(theirs.value)
    with pytest.raises(RuntimeError, match='failed to match any schema'):
        tp.ops.aten.add(a, 'x')


def test_handles_are_named_unique_hashable_picklable():
    h = tp.ops.aten.add.Tensor
    th = torch.ops.aten.add.Tensor
    assert h is tp.ops.aten.add.Tensor and hash(h) == hash(tp.ops.aten.add.Tensor)
    assert h.name() == th.name() == 'aten::add.Tensor'
    assert str(h) == str(th) and repr(h) == repr(th) and h.__name__ == th.__name__
    assert h.overloadpacket is tp.ops.aten.add and h.namespace == 'aten'
    assert repr(tp.ops.aten.add) == repr(torch.ops.aten.add)
    assert str(tp.ops.aten.add) == str(torch.ops.aten.add)
    assert tp.ops.aten.add.name() == 'aten::add'
    assert pickle.loads(pickle.dumps(h)) is h
    assert pickle.loads(pickle.dumps(tp.ops.aten.add)) is tp.ops.aten.add
    assert {h: 1}[tp.ops.aten.add.Tensor] == 1
    assert set(tp.ops.aten.add.overloads()) == {'Tensor', 'out'}
    assert tp.Tag.pointwise in h.tags and h.tags == sorted(h.tags)
    assert tp.Tag.inplace in tp.ops.aten.add_.Tensor.tags and tp.Tag.out in tp.ops.aten.add.out.tags
    assert tp.Tag.nondeterministic_seeded in tp.ops.aten.bernoulli.default.tags
    with pytest.raises(AttributeError, match="has no overload name 'nosuch'"):
        tp.ops.aten.add.nosuch
    with pytest.raises(AttributeError, match="object has no attribute 'nosuchop'"):
        tp.ops.aten.nosuchop
    assert type(tp.ops.mylib) is type(tp.ops.aten)  # any namespace resolves (tp.library)
