"""Packed sequences: PackedSequence and the pack / pad helpers (PyTorch's nn.utils.rnn)."""
from collections import namedtuple

import tensorplay as tp

_PackedSequenceBase = namedtuple("PackedSequence",
                                 ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])


class PackedSequence(_PackedSequenceBase):
    """Variable-length sequences stored time step by time step: data holds, for each step,
    the rows of the sequences still running (longest first); batch_sizes counts them."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None and sorted_indices is not None:
            unsorted_indices = _invert_permutation(sorted_indices)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        data = self.data.to(*args, **kwargs)
        return self if data is self.data else type(self)(data, self.batch_sizes,
                                                         self.sorted_indices, self.unsorted_indices)

    @property
    def is_cuda(self):
        return self.data.is_cuda


def _invert_permutation(permutation):
    if permutation is None:
        return None
    out = tp.empty_like(permutation)
    out.scatter_(0, permutation, tp.arange(0, permutation.numel(), dtype=permutation.dtype))
    return out


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Packs a padded batch (T x B x * or B x T x *) given each sequence's length."""
    if not isinstance(lengths, tp.Tensor):
        lengths = tp.tensor(list(lengths), dtype=tp.int64)
    lengths = lengths.to(tp.int64)
    if enforce_sorted:
        sorted_indices = None
        lens = lengths.tolist()
        if any(lens[i] < lens[i + 1] for i in range(len(lens) - 1)):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when "
                               "`enforce_sorted` is True. You can pass `enforce_sorted=False` to "
                               "pack_padded_sequence and/or pack_sequence to sidestep this "
                               "requirement if you do not need ONNX exportability.")
    else:
        lengths, sorted_indices = tp.sort(lengths, descending=True)
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    if batch_first:
        input = input.transpose(0, 1)
    lens = lengths.tolist()
    if lens and lens[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element "
                           "in 'lengths' that is <= 0")
    if lens and lens[0] > input.size(0):
        raise RuntimeError(f"Expected sequence length to be larger than or equal to {lens[0]}, "
                           f"got {input.size(0)}")
    steps, batch_sizes = [], []
    for t in range(lens[0] if lens else 0):
        b = sum(1 for n in lens if n > t)
        steps.append(input[t, :b])
        batch_sizes.append(b)
    data = tp.cat(steps) if steps else input.reshape((0,) + tuple(input.shape[2:]))
    return PackedSequence(data, tp.tensor(batch_sizes, dtype=tp.int64), sorted_indices, None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """The padded batch and the lengths of a PackedSequence (in the original order)."""
    data, batch_sizes = sequence.data, sequence.batch_sizes.tolist()
    max_len = len(batch_sizes)
    if total_length is not None:
        if total_length < max_len:
            raise ValueError("Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and max "
                             f"sequence length being {max_len}")
        max_len = total_length
    bsz = batch_sizes[0] if batch_sizes else 0
    out = tp.full((max_len, bsz) + tuple(data.shape[1:]), padding_value, dtype=data.dtype)
    offset = 0
    for t, b in enumerate(batch_sizes):
        out[t, :b] = data[offset:offset + b]
        offset += b
    lengths = [sum(1 for b in batch_sizes if b > i) for i in range(bsz)]
    lengths = tp.tensor(lengths, dtype=tp.int64)
    if sequence.unsorted_indices is not None:
        out = out.index_select(1, sequence.unsorted_indices)
        lengths = lengths.index_select(0, sequence.unsorted_indices)
    if batch_first:
        out = out.transpose(0, 1)
    return out, lengths


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stacks tensors of different lengths (dim 0), padding the short ones."""
    max_len = max(s.size(0) for s in sequences)
    trailing = tuple(sequences[0].shape[1:])
    out = tp.full((len(sequences), max_len) + trailing, padding_value, dtype=sequences[0].dtype)
    for i, s in enumerate(sequences):
        n = s.size(0)
        if padding_side == "right":
            out[i, :n] = s
        else:
            out[i, max_len - n:] = s
    return out if batch_first else out.transpose(0, 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [padded_sequences[i, :int(n)] for i, n in enumerate(lengths.tolist())]


def pack_sequence(sequences, enforce_sorted=True):
    lengths = tp.tensor([s.size(0) for s in sequences], dtype=tp.int64)
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
