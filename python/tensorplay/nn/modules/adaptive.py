"""AdaptiveLogSoftmaxWithLoss: the softmax of Grave et al. (2016) over many classes, split into
a frequent-class head and smaller tail clusters."""
from collections import namedtuple

import tensorplay as tp
from tensorplay.nn import functional as F
from tensorplay.nn.modules.container import ModuleList, Sequential
from tensorplay.nn.modules.linear import Linear
from tensorplay.nn.modules.module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """Log-probabilities over ``n_classes`` classes sorted by frequency: classes below
    ``cutoffs[0]`` and one token per tail cluster share the head Linear; a class in cluster i
    is scored by the head's cluster token plus a two-layer projection (hidden size
    ``in_features // div_value**(i+1)``). ``forward(input, target)`` returns (the target
    log-probabilities, their mean negative as the loss).

        >>> asm = tp.nn.AdaptiveLogSoftmaxWithLoss(16, 100, cutoffs=[10, 50])
        >>> out, loss = asm(tp.randn(4, 16), tp.tensor([1, 20, 70, 99]))
    """

    def __init__(self, in_features, n_classes, cutoffs, div_value=4.0, head_bias=False, device=None,
                 dtype=None):
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted in "
                             "an increasing order, where each value is between 1 and n_classes-1")
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, **factory)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            self.tail.append(Sequential(
                Linear(in_features, hidden, bias=False, **factory),
                Linear(hidden, self.cutoffs[i + 1] - self.cutoffs[i], bias=False, **factory)))

    def reset_parameters(self):
        self.head.reset_parameters()
        for to_hidden, to_classes in self.tail:
            to_hidden.reset_parameters()
            to_classes.reset_parameters()

    def forward(self, input_, target_):
        if target_.dim() == 1:
            if input_.shape[0] != target_.shape[0]:
                raise RuntimeError("Input and target should have the same size in the batch dimension.")
            if input_.dim() != 2:
                raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs "
                                   f"with size {input_.shape}")
        elif target_.dim() == 0:
            if input_.dim() != 1:
                raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs "
                                   f"with size {input_.shape}")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        batched = target_.dim() > 0
        input = input_ if batched else input_.unsqueeze(0)
        target = target_ if batched else target_.unsqueeze(0)
        rows = target.shape[0]
        # per row: the head column to read (the class itself, or its cluster's token) and
        # the log-probability within the cluster (0 for shortlist classes)
        head_column = target.clone()
        within = input.new_zeros(rows)
        covered = int(((target >= 0) & (target < self.shortlist_size)).sum())
        for i in range(self.n_clusters):
            low, high = self.cutoffs[i], self.cutoffs[i + 1]
            in_cluster = (target >= low) & (target < high)
            picked = in_cluster.nonzero().reshape(-1)
            if picked.numel() == 0:
                continue
            covered += picked.numel()
            logprob = F.log_softmax(self.tail[i](input.index_select(0, picked)), dim=1)
            local = logprob.gather(1, (target.index_select(0, picked) - low).unsqueeze(1)).squeeze(1)
            head_column = head_column.index_fill(0, picked, self.shortlist_size + i)
            within = within.index_copy(0, picked, local)
        if covered != rows:
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but values in "
                               f"range [{target.min().item()}, {target.max().item()}] were found. ")
        head_logprob = F.log_softmax(self.head(input), dim=1)
        output = within + head_logprob.gather(1, head_column.unsqueeze(1)).squeeze(1)
        loss = (-output).mean()
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    def _full_log_prob(self, input, head_output):
        head_logprob = F.log_softmax(head_output, dim=1)
        parts = [head_logprob[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster = F.log_softmax(self.tail[i](input), dim=1)
            parts.append(cluster + head_logprob[:, self.shortlist_size + i].unsqueeze(1))
        return tp.cat(parts, 1)

    def log_prob(self, input):
        """Log-probabilities of every class for a (batch, in_features) input: (batch, n_classes)."""
        return self._full_log_prob(input, self.head(input))

    def predict(self, input):
        """The most likely class of each row (cheaper than log_prob(...).argmax(1) when the
        head already picks a shortlist class)."""
        head_output = self.head(input)
        output = head_output.argmax(1)
        outside = output >= self.shortlist_size
        if bool(outside.any()):
            picked = outside.nonzero().reshape(-1)
            full = self._full_log_prob(input.index_select(0, picked), head_output.index_select(0, picked))
            output = output.index_copy(0, picked, full.argmax(1))
        return output
