"""tp.stft and tp.istft (also Tensor methods): short-time Fourier transforms over the
primitives of tp.fft, with PyTorch's arguments, defaults, checks and result layout.

stft frames the (optionally centred, padded) signal with ``unfold``, multiplies each frame
by the window (zero-padded to n_fft, centred) and transforms the frames; istft inverts each
frame, windows it again and overlap-adds the frames (_overlap_add), dividing by the
overlap-added squared window (the least-squares inverse of Griffin and Lim)."""
import warnings

from tensorplay import _C

Tensor = _C.Tensor

_NO_WINDOW_STFT = ("A window was not provided. A rectangular window will be applied,which is known to cause "
                   "spectral leakage. Other windows such as tp.hann_window or tp.hamming_window are "
                   "recommended to reduce spectral leakage.To suppress this warning and use a rectangular "
                   "window, explicitly set `window=tp.ones(n_fft, device=<device>)`.")
_NO_WINDOW_ISTFT = ("A window was not provided. A rectangular window will be applied.Please provide the same "
                    "window used by stft to make the inversion lossless.To suppress this warning and use a "
                    "rectangular window, explicitly set `window=tp.ones(n_fft, device=<device>)`.")


def _window(name, window, n_fft, win_length, like):
    """The window as n_fft weights: ``window`` (or ones) zero-padded on both sides."""
    if window is None:
        w = _C.ones([win_length], dtype=like.dtype if not like.dtype.is_complex else
                    (_C.float32 if like.dtype == _C.complex64 else _C.float64), device=like.device)
    else:
        if window.dim() != 1 or window.shape[0] != win_length:
            raise RuntimeError(f"{name}: expected a 1D window tensor of size equal to win_length={win_length}, "
                               f"but got window with size {list(window.shape)}")
        w = window
    if win_length < n_fft:
        left = (n_fft - win_length) // 2
        w = _C.constant_pad_nd(w, [left, n_fft - win_length - left], 0.0)
    return w


def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode='reflect',
         normalized=False, onesided=None, return_complex=None, align_to_window=None):
    """The short-time Fourier transform: the DFT of each ``n_fft``-long frame of ``input``
    (1-D, or 2-D batch x time), frames ``hop_length`` apart (default n_fft // 4), each
    multiplied by ``window`` (``win_length`` long, centred; default a rectangle). Returns
    (batch?, freq, frames), complex (``return_complex=True``, required for real input).

        >>> tp.stft(tp.ones(8), 4, return_complex=True, window=tp.ones(4)).shape
        tp.Size([3, 3])
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"stft(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    complex_in = input.dtype.is_complex or (window is not None and window.dtype.is_complex)
    if return_complex is None:
        if not complex_in:
            raise RuntimeError("stft requires the return_complex parameter be given for real inputs, and will "
                               "further require that return_complex=True in a future PyTorch release.")
        return_complex = True
    elif not return_complex:
        warnings.warn("stft with return_complex=False is deprecated. In a future pytorch release, stft will "
                      "return complex tensors for all inputs, and return_complex=False will raise an error."
                      "\nNote: you can still call tp.view_as_real on the complex output to recover the old "
                      "return format.")
    if window is None:
        warnings.warn(_NO_WINDOW_STFT)
    if input.dim() not in (1, 2):
        raise RuntimeError(f"stft: expected a 1D or 2D tensor, but got {input.dim()}D")
    x = input if input.dim() == 2 else input.unsqueeze(0)
    if center:
        if align_to_window is not None:
            raise RuntimeError("stft: align_to_window should only be set when center = false")
        pad = n_fft // 2
        x = _pad(x, pad, pad_mode)
    length = x.shape[-1]
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    if not 0 < n_fft <= length:
        raise RuntimeError(f"stft: expected 0 < n_fft < {length}, but got n_fft={n_fft}")
    if hop <= 0:
        raise RuntimeError(f"stft: expected hop_length > 0, but got hop_length={hop}")
    if not 0 < win <= n_fft:
        raise RuntimeError(f"stft: expected 0 < win_length <= n_fft, but got win_length={win}")
    w = _window('stft', window, n_fft, win, x)
    offset = (n_fft - win) // 2 if (not center and align_to_window) else 0
    frames = x.narrow(-1, offset, length - offset).unfold(-1, n_fft, hop)  # (B, n_frames, n_fft)
    frames = frames * w
    if onesided is None:
        onesided = not frames.dtype.is_complex
    elif onesided and frames.dtype.is_complex:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    from tensorplay import fft as _fft
    norm = 'ortho' if normalized else 'backward'
    spec = _fft.rfft(frames, dim=-1, norm=norm) if onesided else _fft.fft(frames, dim=-1, norm=norm)
    spec = spec.transpose(1, 2)  # (B, freq, n_frames)
    if input.dim() == 1:
        spec = spec.squeeze(0)
    return spec if return_complex else _C.view_as_real(spec)


def _pad(x, pad, mode):
    """The centring pad of each (batch, time) row. Reflection is two flipped slices around
    the signal (one cat): F.pad's reflection kernel took 3.9 ms for a 1M-sample row where
    this takes a copy's time (PyTorch's pad: 0.45 ms)."""
    if mode == 'reflect' and 0 < pad < x.shape[-1]:
        return _C.cat([x[..., 1:pad + 1].flip(-1), x, x[..., -pad - 1:-1].flip(-1)], -1)
    from tensorplay.nn import functional as F
    return F.pad(x.unsqueeze(1), [pad, pad], mode=mode).squeeze(1)


def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False,
          onesided=None, length=None, return_complex=False):
    """The inverse of stft: each frame's inverse DFT, windowed again and overlap-added,
    divided by the overlap-added squared window. ``length`` cuts or zero-pads the result."""
    if not isinstance(input, Tensor):
        raise TypeError(f"istft(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if not input.dtype.is_complex:
        raise RuntimeError("istft requires a complex-valued input tensor matching the output from stft with "
                           "return_complex=True.")
    if window is None:
        warnings.warn(_NO_WINDOW_ISTFT)
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    if input.dim() not in (2, 3):
        raise RuntimeError(f"istft: expected a tensor with 2 or 3 dimensions of complex, but got {input.dim()}")
    x = input if input.dim() == 3 else input.unsqueeze(0)
    n_freq, n_frames = x.shape[-2], x.shape[-1]
    if onesided is None:
        onesided = n_freq != n_fft
    if onesided:
        if n_fft // 2 + 1 != n_freq:
            raise RuntimeError("istft: expected the frequency dimension (3rd to the last) of the input tensor to "
                               f"match n_fft / 2 + 1 when onesided=True, but got {n_freq}")
    elif n_fft != n_freq:
        raise RuntimeError("istft: expected the frequency dimension (3rd to the last) of the input tensor to "
                           f"match n_fft when onesided=False, but got {n_freq}")
    if not 0 < hop <= win:
        raise RuntimeError("istft: expected 0 < hop_length <= win_length")
    if not 0 < win <= n_fft:
        raise RuntimeError("istft: expected 0 < win_length <= n_fft")
    if n_frames == 0:
        raise RuntimeError("istft: input tensor cannot be empty.")
    w = _window('istft', window, n_fft, win, x)
    from tensorplay import fft as _fft
    from tensorplay.nn import functional as F
    norm = 'ortho' if normalized else 'backward'
    spec = x.transpose(1, 2)  # (B, n_frames, freq)
    if return_complex:
        if onesided:
            raise RuntimeError("cannot have onesided output if window or input is complex")
        frames = _fft.ifft(spec, n=n_fft, dim=-1, norm=norm)
    else:
        if w.dtype.is_complex:
            raise RuntimeError("Complex windows are incompatible with return_complex=False")
        frames = _fft.irfft(spec, n=n_fft, dim=-1, norm=norm) if onesided else \
            _C.real(_fft.ifft(spec, n=n_fft, dim=-1, norm=norm)).contiguous()
    frames = frames * w  # (B, n_frames, n_fft)
    expected = n_fft + hop * (n_frames - 1)
    y = _overlap_add(frames, hop)
    env = _window_envelope(w, hop, n_frames, expected)
    start = n_fft // 2 if center else 0
    if length is not None:
        end = start + length
    else:
        end = expected - n_fft // 2 if center else expected
    end_c = min(end, expected)
    y = y.narrow(-1, start, max(end_c - start, 0))
    env = env.narrow(-1, start, max(end_c - start, 0))
    if env.numel() and bool(env.min() < 1e-11):  # env is a sum of squares: never negative
        raise RuntimeError("istft: window overlap add min: 1e-11 not met (the window's overlap-added square is "
                           "zero somewhere: a window that vanishes, or hop_length too long for it)")
    y = y / env
    if end > expected:
        y = F.pad(y, [0, end - expected])
    if input.dim() == 2:
        y = y.squeeze(0)
    return y


def _overlap_add(frames, hop):
    """(B, n_frames, n_fft) frames overlap-added ``hop`` apart: (B, n_fft + hop (n_frames - 1)).

    The result as rows of ``hop`` samples: frame f's piece r (samples [r hop, (r+1) hop)) adds
    to row f + r, so R = ceil(n_fft / hop) strided in-place adds of n_frames rows each do what
    ``fold`` did (8 ms for 1M samples; this is about R copies' time)."""
    b, n_frames, n_fft = frames.shape
    r_count = -(-n_fft // hop)
    out = _C.zeros([b, n_frames + r_count - 1, hop], dtype=frames.dtype, device=frames.device)
    for r in range(r_count):
        width = min(hop, n_fft - r * hop)
        out.narrow(1, r, n_frames).narrow(2, 0, width).add_(frames.narrow(2, r * hop, width))
    return out.reshape(b, -1).narrow(1, 0, n_fft + hop * (n_frames - 1))


def _window_envelope(w, hop, n_frames, expected):
    """The squared window overlap-added as n_frames frames would be: (1, expected). Rows of
    ``hop`` samples as in _overlap_add; every row that all R pieces of the window reach is the
    same sum, so only the first and last R - 1 rows are partial sums."""
    n_fft = w.shape[0]
    wsq = (w.abs() ** 2 if w.dtype.is_complex else w * w)
    r_count = -(-n_fft // hop)
    if n_frames < r_count:  # no full row: overlap-add it as the frames
        return _overlap_add(wsq.expand(1, n_frames, n_fft), hop)
    pieces = _C.constant_pad_nd(wsq, [0, r_count * hop - n_fft], 0.0).reshape(r_count, hop)
    head = pieces.cumsum(0)  # row q < R: pieces 0..q
    tail = pieces.flip(0).cumsum(0).flip(0)  # row n_frames - 1 + q: pieces q..R-1
    rows = _C.cat([head.narrow(0, 0, r_count - 1), head.narrow(0, r_count - 1, 1).expand(n_frames - r_count + 1, hop),
                   tail.narrow(0, 1, r_count - 1)], 0)
    return rows.reshape(1, -1).narrow(1, 0, expected)
