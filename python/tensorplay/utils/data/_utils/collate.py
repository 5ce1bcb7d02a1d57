"""default_collate (samples -> batch) and default_convert (one sample's NumPy data -> tensors),
with PyTorch's output types and messages; ``collate`` takes a map of per-type functions."""
import collections
import copy
import re

import numpy as np

import tensorplay as tp

np_str_obj_array_pattern = re.compile(r"[SaUO]")

default_collate_err_msg_format = ("default_collate: batch must contain tensors, numpy arrays, "
                                  "numbers, dicts or lists; found {}")


def _numpy_to_tensor(data):
    """``torch.as_tensor`` of a NumPy array, a NumPy scalar or a list of NumPy scalars (whose
    dtype is the promotion of the scalars' dtypes)."""
    if isinstance(data, list):
        dtypes = {np.asarray(d).dtype for d in data}
        if len(dtypes) > 1:
            names = [tp.as_tensor(np.asarray(d)).dtype for d in data]
            target = names[0]
            for d in names[1:]:
                target = tp.promote_types(target, d)
            return tp.as_tensor(np.array(data, dtype=str(target).split(".")[-1]))
    return tp.as_tensor(np.asarray(data))


def _rebuild_like(data, items):
    """A container of ``data``'s type holding ``items`` (a dict for a mapping, a list for
    a sequence): a copy updated in place for mutable types, else the type called on items;
    a plain dict / list where the type cannot be built that way."""
    mapping = isinstance(data, collections.abc.Mapping)
    try:
        if isinstance(data, (collections.abc.MutableMapping, collections.abc.MutableSequence)):
            clone = copy.copy(data)
            if mapping:
                clone.update(items)
            else:
                for i, item in enumerate(items):
                    clone[i] = item
            return clone
        return type(data)(items)
    except TypeError:
        return items


def default_convert(data):
    """Converts NumPy arrays and scalars inside ``data`` (at any depth of mappings,
    namedtuples, tuples and sequences) to tensors; everything else is left as it is. The
    DataLoader's collate_fn when automatic batching is off::

        default_convert({"x": np.zeros(2)})  # {'x': tensor([0., 0.], dtype=tensorplay.float64)}
    """
    elem_type = type(data)
    if isinstance(data, tp.Tensor):
        return data
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_"):
        if elem_type.__name__ == "ndarray" and np_str_obj_array_pattern.search(data.dtype.str):
            return data
        return _numpy_to_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return _rebuild_like(data, {key: default_convert(data[key]) for key in data})
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # namedtuple
        return elem_type(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _rebuild_like(data, [default_convert(d) for d in data])
    return data


def collate(batch, *, collate_fn_map=None):
    """Merges a list of samples into a batch: the function in ``collate_fn_map`` for the
    first sample's type (exact type first, then the first key it is an instance of),
    else element-wise through mappings, namedtuples and sequences. Each function takes the
    batch and ``collate_fn_map=`` as a keyword::

        def collate_tensor(batch, *, collate_fn_map=None):
            return tp.stack(batch)
        collate(samples, collate_fn_map={tp.Tensor: collate_tensor})
    """
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for collate_type in collate_fn_map:
            if isinstance(elem, collate_type):
                return collate_fn_map[collate_type](batch, collate_fn_map=collate_fn_map)

    def merge(samples):
        return collate(samples, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        return _rebuild_like(elem, {key: merge([d[key] for d in batch]) for key in elem})
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return elem_type(*(merge(samples) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        rest = iter(batch)
        size = len(next(rest))
        if not all(len(e) == size for e in rest):
            raise RuntimeError("each element in list of batch should be of equal size")
        merged = [merge(samples) for samples in zip(*batch)]
        return merged if isinstance(elem, tuple) else _rebuild_like(elem, merged)
    raise TypeError(default_collate_err_msg_format.format(elem_type))


def collate_tensor_fn(batch, *, collate_fn_map=None):
    """Stacks tensors along a new first dimension."""
    return tp.stack(batch, 0)


def collate_numpy_array_fn(batch, *, collate_fn_map=None):
    """Stacks NumPy arrays (numeric ones only) into a tensor."""
    elem = batch[0]
    if np_str_obj_array_pattern.search(elem.dtype.str) is not None:
        raise TypeError(default_collate_err_msg_format.format(elem.dtype))
    return collate([_numpy_to_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch, *, collate_fn_map=None):
    """NumPy scalars into a 1-D tensor of their dtype."""
    return _numpy_to_tensor(list(batch))


def collate_float_fn(batch, *, collate_fn_map=None):
    """Python floats into a float64 tensor."""
    return tp.tensor(batch, dtype=tp.float64)


def collate_int_fn(batch, *, collate_fn_map=None):
    """Python ints (or bools) into an int64 (bool) tensor."""
    return tp.tensor(batch)


def collate_str_fn(batch, *, collate_fn_map=None):
    """Strings and bytes stay a list."""
    return batch


default_collate_fn_map = {
    tp.Tensor: collate_tensor_fn,
    np.ndarray: collate_numpy_array_fn,
    (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
    float: collate_float_fn,
    int: collate_int_fn,
    str: collate_str_fn,
    bytes: collate_str_fn,
}


def default_collate(batch):
    """Merges a list of samples into a batch with an added first dimension: tensors, NumPy
    arrays and numbers become tensors (floats float64, ints int64), strings and bytes stay
    a list, and mappings, namedtuples and sequences are merged element-wise (a tuple
    becomes a list)::

        default_collate([(1, "a"), (2, "b")])  # [tensor([1, 2]), ('a', 'b')]
        default_collate([{"x": 1.0}, {"x": 2.0}])
        # {'x': tensor([1., 2.], dtype=tensorplay.float64)}
    """
    return collate(batch, collate_fn_map=default_collate_fn_map)
