"""tp.backends.cuda: ``matmul`` holds cuBLAS's precision flags (torch.backends.cuda.matmul),
read by every CUDA matrix product at call time; ``enable_flash_sdp`` switches the fused
attention kernel."""
from tensorplay import _C
from tensorplay.backends import _check_bool


def is_built():
    """Whether TensorPlay was built with CUDA (a GPU may still be missing at run time)."""
    return bool(_C._cuda_compiled)


def _reduction_setting(value, name):
    """A bool, or a list/tuple of one or two bools: (allow_reduced_precision, allow_splitk)."""
    def as_bool(v, which):
        if isinstance(v, bool):
            return v
        raise TypeError(f'{name} expects a bool for {which}, but got {type(v)!r}')

    if isinstance(value, bool):
        return value, True
    if isinstance(value, (list, tuple)):
        if len(value) == 0:
            raise TypeError(f'{name} expects at least one boolean argument')
        if len(value) > 2:
            raise TypeError(f'{name} expects at most two boolean arguments')
        allow = as_bool(value[0], 'allow_reduced_precision')
        return allow, as_bool(value[1], 'allow_splitk') if len(value) == 2 else True
    raise TypeError(f'{name} expects a bool or a tuple/list of bools, but got {type(value)!r}')


class cuBLASModule:
    """The ``tp.backends.cuda.matmul`` flags (all process-wide):

    - ``allow_tf32`` (default False): float32 products may use TF32 tensor cores; setting
      it is ``set_float32_matmul_precision('high')`` (True) or ``('highest')`` (False).
    - ``allow_fp16_reduced_precision_reduction`` / ``allow_bf16_reduced_precision_reduction``
      (default True): float16 / bfloat16 products may reduce partial sums in their own
      type; set a bool or ``(allow, allow_splitk)``. The ``..._split_k`` names read the second.
    - ``allow_fp16_accumulation`` (default False): float16 products may accumulate in float16.
    """

    def __getattr__(self, name):
        if name == 'allow_tf32':
            return _C._get_cublas_allow_tf32()
        for half in ('fp16', 'bf16'):
            base = f'allow_{half}_reduced_precision_reduction'
            if name in (base, base + '_split_k'):
                allow, splitk = getattr(_C, f'_get_cublas_{base}')()
                return allow if name == base else splitk
        if name == 'allow_fp16_accumulation':
            return _C._get_cublas_allow_fp16_accumulation()
        raise AttributeError('Unknown attribute ' + name)

    def __setattr__(self, name, value):
        if name == 'allow_tf32':
            return _C._set_cublas_allow_tf32(_check_bool(value, 'set_allow_tf32_cublas'))
        if name in ('allow_fp16_reduced_precision_reduction',
                    'allow_bf16_reduced_precision_reduction'):
            return getattr(_C, f'_set_cublas_{name}')(*_reduction_setting(value, name))
        if name == 'allow_fp16_accumulation':
            return _C._set_cublas_allow_fp16_accumulation(
                _check_bool(value, 'set_allow_fp16_accumulation_cublas'))
        raise AttributeError('Unknown attribute ' + name)


matmul = cuBLASModule()


# On by default, as PyTorch's (Note [Flash attention] in csrc/cuda/attention_kernels.cu).
_flash_sdp = True


def enable_flash_sdp(enabled):
    """Whether scaled_dot_product_attention may use the fused (flash) CUDA kernel for
    float16 / bfloat16 inputs; otherwise it takes the math path."""
    global _flash_sdp
    _flash_sdp = _check_bool(enabled, "enable_flash_sdp")


def flash_sdp_enabled():
    """Whether the fused (flash) attention kernel may be used (enable_flash_sdp)."""
    return _flash_sdp
