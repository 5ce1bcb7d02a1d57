"""RNN, LSTM, GRU and their cells, with PyTorch's parameter names, layout and initialisation.

The input projections of a whole sequence are one GEMM per layer and direction. LSTM layers
(float32/float64, no projection, unpacked) then run the time loop in C++ (_FusedLSTMLayer);
otherwise the loop is Python, one hidden-state GEMM and a few pointwise ops per step.
PackedSequence inputs run padded with a per-step mask (finished sequences keep their state).
"""
import math
import numbers

import tensorplay as tp
from tensorplay.autograd import forward_ad
from tensorplay.nn import functional as F
from tensorplay.nn import init
from tensorplay.nn.modules.module import Module
from tensorplay.nn.parameter import Parameter
from tensorplay.nn.utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence


class _StepSplit(tp.autograd.Function):
    """The time steps of a sequence that requires grad, with one backward (a stack) instead
    of one sequence-sized gradient per step."""

    @staticmethod
    def forward(ctx, x):
        ctx.step_shape, ctx.dtype, ctx.device = tuple(x.shape[1:]), x.dtype, x.device
        return tuple(s.clone() for s in x.unbind(0))

    @staticmethod
    def backward(ctx, *grads):
        return tp.stack([g if g is not None else tp.zeros(ctx.step_shape, dtype=ctx.dtype, device=ctx.device)
                         for g in grads])


def _lstm_step(gi_t, h, c, w_hh, b_hh, w_hr=None):
    """One LSTM step from the precomputed input projection gi_t (b_ih included)."""
    gates = gi_t + F.linear(h, w_hh, b_hh)
    i, f, g, o = gates.chunk(4, 1)
    c_new = tp.sigmoid(f) * c + tp.sigmoid(i) * tp.tanh(g)
    h_new = tp.sigmoid(o) * tp.tanh(c_new)
    return (h_new if w_hr is None else F.linear(h_new, w_hr)), c_new


def _lstm_layer_composed(gi, h0, c0, w_hh, b_hh, reverse):
    """_lstm_layer written with differentiable ops (for create_graph backward)."""
    outs, h, c = [None] * gi.size(0), h0, c0
    for t in (range(gi.size(0) - 1, -1, -1) if reverse else range(gi.size(0))):
        h, c = _lstm_step(gi[t], h, c, w_hh, b_hh)
        outs[t] = h
    return tp.stack(outs), h, c


class _FusedLSTMLayer(tp.autograd.Function):
    """One LSTM layer and direction through the C++ time loop (_lstm_layer). Backward runs
    _lstm_layer_backward; under create_graph it differentiates the composed layer instead,
    so double backward works."""

    @staticmethod
    def forward(ctx, gi, h0, c0, w_hh, b_hh, reverse):
        out, gates, cells = tp._C._lstm_layer(gi, h0, c0, w_hh, b_hh, reverse)
        ctx.reverse = reverse
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(gi, h0, c0, w_hh, b_hh, out, gates, cells)
        last = 0 if reverse else -1
        return out, out[last].clone(), cells[last].clone()

    @staticmethod
    def backward(ctx, g_out, g_hy, g_cy):
        gi, h0, c0, w_hh, b_hh, out, gates, cells = ctx.saved_tensors
        if tp.is_grad_enabled():
            inputs = (gi, h0, c0, w_hh, b_hh)
            wanted = [k for k, need in enumerate(ctx.needs_input_grad[:5]) if need]
            with tp.enable_grad():
                outs = _lstm_layer_composed(gi, h0, c0, w_hh, b_hh, ctx.reverse)
            pairs = [(o, g) for o, g in zip(outs, (g_out, g_hy, g_cy)) if g is not None]
            grads = tp.autograd.grad([o for o, _ in pairs], [inputs[k] for k in wanted],
                                     [g for _, g in pairs], create_graph=True, allow_unused=True)
            result = [None] * 6
            for k, g in zip(wanted, grads):
                result[k] = g
            return tuple(result)
        d_gi, d_h0, d_c0, d_w = tp._C._lstm_layer_backward(g_out, g_hy, g_cy, gates, cells, out,
                                                           h0, c0, w_hh, ctx.reverse)
        d_b = d_gi.sum((0, 1)) if b_hh is not None and ctx.needs_input_grad[4] else None
        return d_gi, d_h0, d_c0, d_w, d_b, None


def _gate_count(mode):
    return {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}[mode]


class RNNBase(Module):
    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional, self.proj_size = float(dropout), bidirectional, proj_size
        num_directions = 2 if bidirectional else 1
        if not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 or \
                isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if dropout > 0 and num_layers == 1:
            import warnings
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so "
                          "non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}", stacklevel=2)
        if not isinstance(hidden_size, int) or hidden_size <= 0:
            raise ValueError("hidden_size must be an integer greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        gate_size = _gate_count(mode) * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        kw = dict(dtype=dtype, device=device)
        self._flat_weights_names = []
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input = input_size if layer == 0 else real_hidden * num_directions
                suffix = "_reverse" if direction == 1 else ""
                names = [f"weight_ih_l{layer}{suffix}", f"weight_hh_l{layer}{suffix}"]
                shapes = [(gate_size, layer_input), (gate_size, real_hidden)]
                if bias:
                    names += [f"bias_ih_l{layer}{suffix}", f"bias_hh_l{layer}{suffix}"]
                    shapes += [(gate_size,), (gate_size,)]
                if proj_size > 0:
                    names.append(f"weight_hr_l{layer}{suffix}")
                    shapes.append((proj_size, hidden_size))
                for name, shape in zip(names, shapes):
                    setattr(self, name, Parameter(tp.empty(shape, **kw)))
                self._flat_weights_names += names
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    @property
    def _flat_weights(self):
        return [getattr(self, n) for n in self._flat_weights_names]

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    # ---------------------------------------------------------------- the recurrence
    def _cell(self, gi_t, h, c, w_hh, b_hh, w_hr):
        """One step: gi_t is the precomputed input projection (with b_ih)."""
        mode = self.mode
        if mode == "LSTM":
            return _lstm_step(gi_t, h, c, w_hh, b_hh, w_hr)
        if mode == "GRU":
            gh = F.linear(h, w_hh, b_hh)
            ir, iz, inn = gi_t.chunk(3, 1)
            hr, hz, hn = gh.chunk(3, 1)
            r = tp.sigmoid(ir + hr)
            z = tp.sigmoid(iz + hz)
            n = tp.tanh(inn + r * hn)
            return (1 - z) * n + z * h, None
        pre = gi_t + F.linear(h, w_hh, b_hh)
        return (tp.tanh(pre) if mode == "RNN_TANH" else tp.relu(pre)), None

    def _run_direction(self, xs, h, c, weights, reverse, lengths):
        """Runs one direction over the per-step inputs `xs`; returns the per-step outputs.

        Steps are kept as separate tensors: slicing one sequence-sized tensor that requires
        grad would give every step a backward that fills a whole sequence-sized gradient."""
        w_ih, w_hh, b_ih, b_hh, w_hr = weights
        T = len(xs)
        outs = [None] * T
        # the input projections of every step: one GEMM, split with one backward
        gi = F.linear(tp.stack(xs), w_ih, b_ih)
        gis = _StepSplit.apply(gi) if gi.requires_grad else gi.unbind(0)
        steps = range(T - 1, -1, -1) if reverse else range(T)
        for t in steps:
            h_new, c_new = self._cell(gis[t], h, c, w_hh, b_hh, w_hr)
            if lengths is not None:  # packed: rows past their length keep their state
                alive = (lengths > t).unsqueeze(1)
                h_new = tp.where(alive, h_new, h)
                if c_new is not None:
                    c_new = tp.where(alive, c_new, c)
                outs[t] = tp.where(alive, h_new, tp.zeros((), dtype=h_new.dtype, device=h_new.device))
            else:
                outs[t] = h_new
            h, c = h_new, c_new
        return outs, h, c

    def _weights_of(self, layer, direction):
        suffix = "_reverse" if direction == 1 else ""
        get = lambda n: getattr(self, f"{n}_l{layer}{suffix}", None)  # noqa: E731
        return (get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh"),
                get("weight_hr") if self.proj_size > 0 else None)

    def _can_fuse(self, x, lengths):
        """Whether the C++ LSTM layer (_FusedLSTMLayer) can run this input."""
        return (self.mode == "LSTM" and self.proj_size == 0 and lengths is None
                and x.dtype in (tp.float32, tp.float64) and x.device.type in ("cpu", "meta")
                and forward_ad._current_level < 0)

    def _layer_dropout(self, layer, shape, dtype, device):
        """The noise between layers (None where none applies): F.dropout's draws over the
        stacked layer output."""
        if not (self.dropout > 0 and self.training and layer < self.num_layers - 1):
            return None
        noise = tp.empty(shape, dtype=dtype, device=device).bernoulli_(1 - self.dropout)
        return noise.div_(1 - self.dropout)

    def _forward_fused(self, x, h0, c0):
        """Each layer and direction as one _FusedLSTMLayer over the whole sequence."""
        num_directions = 2 if self.bidirectional else 1
        h_n, c_n = [], []
        for layer in range(self.num_layers):
            outs = []
            for d in range(num_directions):
                k = layer * num_directions + d
                w_ih, w_hh, b_ih, b_hh, _ = self._weights_of(layer, d)
                out, h, c = _FusedLSTMLayer.apply(F.linear(x, w_ih, b_ih), h0[k], c0[k], w_hh,
                                                  b_hh, d == 1)
                outs.append(out)
                h_n.append(h)
                c_n.append(c)
            x = outs[0] if num_directions == 1 else tp.cat(outs, 2)
            noise = self._layer_dropout(layer, tuple(x.shape), x.dtype, x.device)
            if noise is not None:
                x = x * noise
        return x, tp.stack(h_n), tp.stack(c_n)

    def _forward_steps(self, x, h0, c0, lengths):
        """The time loop in Python, steps as separate tensors (every mode and option)."""
        num_directions = 2 if self.bidirectional else 1
        h_n, c_n = [], []
        steps = list(_StepSplit.apply(x)) if x.requires_grad else list(x.unbind(0))
        for layer in range(self.num_layers):
            outs = []
            for d in range(num_directions):
                k = layer * num_directions + d
                out, h, c = self._run_direction(steps, h0[k], c0[k] if c0 is not None else None,
                                                self._weights_of(layer, d), d == 1, lengths)
                outs.append(out)
                h_n.append(h)
                c_n.append(c)
            steps = outs[0] if num_directions == 1 else \
                [tp.cat([a, b], 1) for a, b in zip(outs[0], outs[1])]
            noise = self._layer_dropout(layer, (len(steps),) + tuple(steps[0].shape),
                                        steps[0].dtype, steps[0].device)
            if noise is not None:
                steps = [s_ * noise[t] for t, s_ in enumerate(steps)]
        return tp.stack(steps), tp.stack(h_n), (tp.stack(c_n) if self.mode == "LSTM" else None)

    def forward(self, input, hx=None):
        packed = isinstance(input, PackedSequence)
        lengths = None
        if packed:
            padded, lengths_cpu = pad_packed_sequence(input)
            sorted_idx = input.sorted_indices
            x = padded if sorted_idx is None else padded.index_select(1, sorted_idx)
            lengths = lengths_cpu if sorted_idx is None else lengths_cpu.index_select(0, sorted_idx)
            lengths = lengths.to(x.device)
            batched = True
        else:
            batched = input.dim() == 3
            if input.dim() not in (2, 3):
                raise ValueError(f"{self.mode.split('_')[0]}: Expected input to be 2D or 3D, got "
                                 f"{input.dim()}D tensor instead")
            x = input if batched else input.unsqueeze(1)
            if self.batch_first and batched:
                x = x.transpose(0, 1)
        if x.size(-1) != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {x.size(-1)}")
        num_directions = 2 if self.bidirectional else 1
        B = x.size(1)
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        is_lstm = self.mode == "LSTM"
        if hx is None:
            h0 = tp.zeros((self.num_layers * num_directions, B, real_hidden), dtype=x.dtype, device=x.device)
            c0 = tp.zeros((self.num_layers * num_directions, B, self.hidden_size), dtype=x.dtype,
                          device=x.device) \
                if is_lstm else None
        else:
            h0, c0 = hx if is_lstm else (hx, None)
            if not batched:
                h0 = h0.unsqueeze(1)
                c0 = c0.unsqueeze(1) if c0 is not None else None
            if packed and input.sorted_indices is not None:
                h0 = h0.index_select(1, input.sorted_indices)
                c0 = c0.index_select(1, input.sorted_indices) if c0 is not None else None
            expected = (self.num_layers * num_directions, B, real_hidden)
            if tuple(h0.shape) != expected:
                raise RuntimeError(f"Expected hidden size {expected}, got {list(h0.shape)}")
        if self._can_fuse(x, lengths):
            output, h_n, c_n = self._forward_fused(x, h0, c0)
        else:
            output, h_n, c_n = self._forward_steps(x, h0, c0, lengths)
        if packed:
            if input.unsorted_indices is not None:
                h_n = h_n.index_select(1, input.unsorted_indices)
                c_n = c_n.index_select(1, input.unsorted_indices) if c_n is not None else None
            out_packed = pack_padded_sequence(output, lengths, enforce_sorted=True)
            output = PackedSequence(out_packed.data, out_packed.batch_sizes, input.sorted_indices,
                                    input.unsorted_indices)
        else:
            if self.batch_first and batched:
                output = output.transpose(0, 1)
            if not batched:
                output = output.squeeze(1)
                h_n = h_n.squeeze(1)
                c_n = c_n.squeeze(1) if c_n is not None else None
        return output, ((h_n, c_n) if is_lstm else h_n)


class RNN(RNNBase):
    def __init__(self, *args, **kwargs):
        nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if len(args) > 3:
            nonlinearity = args[3]
            args = args[:3] + args[4:]
        if nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__(mode, *args, **kwargs)


class LSTM(RNNBase):
    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)


class GRU(RNNBase):
    def __init__(self, *args, **kwargs):
        super().__init__("GRU", *args, **kwargs)


class RNNCellBase(Module):
    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        kw = dict(dtype=dtype, device=device)
        self.weight_ih = Parameter(tp.empty((num_chunks * hidden_size, input_size), **kw))
        self.weight_hh = Parameter(tp.empty((num_chunks * hidden_size, hidden_size), **kw))
        if bias:
            self.bias_ih = Parameter(tp.empty((num_chunks * hidden_size,), **kw))
            self.bias_hh = Parameter(tp.empty((num_chunks * hidden_size,), **kw))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _batched(self, input, hx, name):
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        return input.dim() == 2


class RNNCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None,
                 dtype=None):
        self.nonlinearity = nonlinearity
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)

    def forward(self, input, hx=None):
        batched = self._batched(input, hx, "RNNCell")
        x = input if batched else input.unsqueeze(0)
        h = tp.zeros((x.size(0), self.hidden_size), dtype=x.dtype, device=x.device) if hx is None else \
            (hx if batched else hx.unsqueeze(0))
        pre = F.linear(x, self.weight_ih, self.bias_ih) + F.linear(h, self.weight_hh, self.bias_hh)
        if self.nonlinearity == "tanh":
            out = tp.tanh(pre)
        elif self.nonlinearity == "relu":
            out = tp.relu(pre)
        else:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        return out if batched else out.squeeze(0)


class LSTMCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        batched = self._batched(input, hx, "LSTMCell")
        x = input if batched else input.unsqueeze(0)
        if hx is None:
            z = tp.zeros((x.size(0), self.hidden_size), dtype=x.dtype, device=x.device)
            hx = (z, z)
        h, c = hx if batched else (hx[0].unsqueeze(0), hx[1].unsqueeze(0))
        gates = F.linear(x, self.weight_ih, self.bias_ih) + F.linear(h, self.weight_hh, self.bias_hh)
        i, f, g, o = gates.chunk(4, 1)
        c = tp.sigmoid(f) * c + tp.sigmoid(i) * tp.tanh(g)
        h = tp.sigmoid(o) * tp.tanh(c)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):
        batched = self._batched(input, hx, "GRUCell")
        x = input if batched else input.unsqueeze(0)
        h = tp.zeros((x.size(0), self.hidden_size), dtype=x.dtype, device=x.device) if hx is None else \
            (hx if batched else hx.unsqueeze(0))
        gi = F.linear(x, self.weight_ih, self.bias_ih)
        gh = F.linear(h, self.weight_hh, self.bias_hh)
        ir, iz, inn = gi.chunk(3, 1)
        hr, hz, hn = gh.chunk(3, 1)
        r = tp.sigmoid(ir + hr)
        z = tp.sigmoid(iz + hz)
        n = tp.tanh(inn + r * hn)
        h = (1 - z) * n + z * h
        return h if batched else h.squeeze(0)
