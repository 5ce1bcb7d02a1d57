"""Which public names of PyTorch tensorplay lacks, namespace by namespace.

    PYTHONPATH=python python3 scripts/api_coverage.py [--write docs/api_coverage.md]

Names are the public (non-underscore) attributes of each torch namespace. A name counts as
out of scope when SKIP below gives a reason (backend internals, TorchScript, quantisation,
sparse layouts, complex dtypes, ...); the percentage is over the names left in scope.
"""
import argparse
import datetime
import fnmatch
import sys
import types

import torch

import tensorplay

NAMESPACES = ('', 'nn', 'nn.functional', 'linalg', 'fft', 'special', 'distributions', 'optim',
              'Tensor')

# (glob patterns, reason). Checked in order; the first match names the reason.
SKIP = [
    (['ao', 'quantization', 'quantized', 'quantizable', 'qat', 'intrinsic', 'q_*', 'qint*', 'quint*',
      'qscheme', 'quantize_*', 'quantized_*', 'dequantize', 'int_repr', 'per_channel_*', 'per_tensor_*',
      'fake_quantize_*', 'fused_moving_avg_obs_fake_quant', 'choose_qparams_optimized',
      'empty_quantized', 'is_quantized'],
     'quantisation (torch.ao): a separate backend'),
    (['mkldnn_*', 'to_mkldnn', 'miopen_*', 'cudnn_*', 'fbgemm_*', 'native_*', 'batch_norm_*',
      'is_vulkan_available', 'has_mkl', 'has_lapack', 'has_openmp', 'has_spectral',
      'compiled_with_cxx11_abi', 'set_flush_denormal', 'init_num_threads', 'conv_tbc',
      'profiler_allow_cudagraph_cupti_lazy_reinit_cuda12', 'prepare_multiprocessing_environment',
      'get_file_path', 'from_file'],
     'backend kernels and build flags of PyTorch\'s own libraries'),
    (['sparse', 'sparse_*', '*_indices_copy', 'indices_copy', 'values_copy', 'smm', 'hsmm', 'spmm',
      'dsmm', 'hspmm', 'saddmm', 'sspaddmm', 'to_sparse*', 'to_dense', 'coalesce', 'is_coalesced',
      'indices', 'values', 'crow_indices', 'col_indices', 'ccol_indices', 'row_indices',
      'sparse_dim', 'dense_dim', 'sparse_mask', 'sparse_resize*', 'resize_as_sparse_',
      'is_sparse', 'is_sparse_csr', 'SparseAdam', 'strided', 'layout', 'segment_reduce',
      'sparse_support_notes'],
     'sparse layouts (no sparse tensors in tensorplay)'),
    (['complex32', 'chalf', 'ComplexType', 'Complex*Storage'],
     'complex32 (a half-precision complex type tensorplay does not have) and legacy complex types'),
    (['float8_*', 'float4_*', 'uint16', 'uint32', 'uint64', 'uint[1-7]', 'int[1-7]', 'bits*',
      'bit', 'scaled_mm', 'scaled_grouped_mm', 'grouped_mm', 'ScalingType', 'SwizzleType'],
     'dtypes tensorplay does not have (float8, sub-byte, wide unsigned)'),
    (['jit', 'compile', 'compiler', 'export', 'package', 'fx', 'classes', 'cpp', 'library',
      'sym_*', 'Sym*', '*Type', 'Script*', 'Graph', 'GraphExecutorState', 'Node', 'Block', 'Value',
      'Use', 'Code', 'CompilationUnit', 'ConcreteModuleType*', 'CallStack', 'Argument',
      'ArgumentSpec', 'CompleteArgumentSpec', 'ErrorReport', 'FileCheck', 'Gradient',
      'IODescriptor', 'InferredType', 'JITException', 'LiteScriptModule', 'OperatorInfo',
      'StaticModule', 'TracingState', 'ExecutionPlan', 'Capsule', 'DeepCopyMemoTable',
      'AliasDb', '*StorageContext', 'PyTorchFile*', 'parse_ir', 'parse_type_comment',
      'import_ir_module*', 'merge_type_from_type_comment', 'unify_type_list', 'Future', 'futures',
      'fork', 'wait', 'AggregationType', 'AVG', 'SUM', 'LockingLogger', 'LoggerBase',
      'NoopLogger', 'ThroughputBenchmark', 'BenchmarkConfig', 'BenchmarkExecutionStats',
      'monitor', 'BroadcastingList*', 'boolean_dispatch', 'assert_int_or_pair', 'cond',
      'while_loop', 'PRIVATE_OPS', 'ExcludeDispatchKeyGuard', 'BufferDict', 'Type',
      'torch_version', 'classproperty', 'DispatchKey*', 'FatalError',
      # torch._C's views of a ScriptModule's submodules / parameters (built from a
      # ScriptModule), not nn.ModuleDict / nn.ParameterDict
      'torch.ModuleDict', 'torch.ParameterDict'],
     'TorchScript, torch.compile and tracing internals'),
    (['*Storage', 'StorageBase', 'storage', 'storage_type', 'is_storage', '*Tensor',
      'set_default_tensor_type', 'new', 'volatile', 'reinforce', 'symeig', 'lstsq', 'solve',
      'matrix_rank', 'chain_matmul_', 'NLLLoss2d', 'Container',
      # removed in PyTorch 2.0 (they only raise, pointing to torch.linalg.eig)
      'torch.eig', 'torch.Tensor.eig'],
     'legacy typed tensors/storages and removed APIs'),
    (['xpu', 'mps', 'mtia', 'ipu', 'maia', 'get_autocast_ipu_dtype', 'get_autocast_xla_dtype',
      'set_autocast_ipu_*', 'set_autocast_xla_*', 'is_autocast_ipu_enabled',
      'is_autocast_xla_enabled', 'is_distributed'],
     'device backends tensorplay does not target'),
    (['nested', 'jagged', 'is_nested', 'to_padded_tensor', 'masked', 'signal', 'quasirandom',
      'functional', 'testing', 'types', 'return_types', 'overrides', 'hub', 'onnx', 'utils',
      'backends', 'profiler', 'random', 'serialization', 'version', 'multiprocessing',
      'distributed', 'autograd', 'amp', 'cuda', 'cpu', 'nn', 'optim', 'linalg', 'special',
      'distributions', 'futures', 'func', 'library', 'common_types', 'factory_kwargs', 'grad',
      'attention'],
     'submodules counted on their own or out of scope here (nested, masked, signal, ...)'),
    (['*_notes', 'factory_common_args', 'torch', 'common_args', 'multi_dim_common', 'common_notes', 'Tensor', 'e', 'pi', 'inf',
      'nan', 'newaxis', 'TYPE_CHECKING', 'USE_*', 'DType', 'Callable', 'Optional',
      'GRID_SAMPLE_*'],
     'docstring fragments, constants re-exported from math, typing helpers'),
]


def _resolve(root, dotted):
    for part in filter(None, dotted.split('.')):
        root = getattr(root, part)
    return root


def _is_foreign(value):
    """A module or typing helper a namespace merely imported (os, math, typing.Optional)."""
    if isinstance(value, types.ModuleType):
        return not value.__name__.startswith('torch')
    return getattr(value, '__module__', None) in ('typing', 'dataclasses', 'collections.abc')


def skip_reason(name, namespace=''):
    """The reason `name` of torch.`namespace` is out of scope, or None. Patterns starting
    with "torch." match the qualified name (torch.ModuleDict but not torch.nn.ModuleDict)."""
    qualified = '.'.join(filter(None, ('torch', namespace, name)))
    for patterns, reason in SKIP:
        if any(fnmatch.fnmatchcase(qualified if p.startswith('torch.') else name, p) for p in patterns):
            return reason
    return None


def survey(namespace):
    """(in scope, missing in scope, skipped {reason: [names]}) for one namespace."""
    ref = _resolve(torch, namespace)
    try:
        ours = _resolve(tensorplay, namespace)
    except AttributeError:
        ours = None
    in_scope, missing, skipped = [], [], {}
    for name in sorted(dir(ref)):
        if name.startswith('_'):
            continue
        value = getattr(ref, name)
        reason = 'imported module or typing helper' if _is_foreign(value) else skip_reason(name, namespace)
        if reason:
            skipped.setdefault(reason, []).append(name)
            continue
        in_scope.append(name)
        if ours is None or not hasattr(ours, name):
            missing.append(name)
    return in_scope, missing, skipped


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--write', metavar='PATH', help='also write the markdown table to PATH')
    args = ap.parse_args(argv)
    rows, details, skip_counts = [], [], {}
    total_in, total_have = 0, 0
    for ns in NAMESPACES:
        in_scope, missing, skipped = survey(ns)
        label = 'torch' if not ns else 'torch.' + ns
        have = len(in_scope) - len(missing)
        pct = 100.0 * have / len(in_scope) if in_scope else 100.0
        total_in += len(in_scope)
        total_have += have
        print(f'{label:24s} {have:4d}/{len(in_scope):4d}  {pct:5.1f}%  '
              f'({sum(map(len, skipped.values()))} skipped)')
        rows.append(f'| `{label}` | {have} | {len(in_scope)} | {pct:.1f}% | '
                    f'{sum(map(len, skipped.values()))} |')
        details.append(f'### `{label}` ({len(missing)} missing)\n\n' +
                       (' '.join(f'`{n}`' for n in missing) if missing else 'none') + '\n')
        for reason, names in skipped.items():
            skip_counts[reason] = skip_counts.get(reason, 0) + len(names)
    pct = 100.0 * total_have / total_in
    print(f'{"all":24s} {total_have:4d}/{total_in:4d}  {pct:5.1f}%')
    if args.write:
        lines = [
            '# API coverage against PyTorch',
            '',
            f'Generated by `scripts/api_coverage.py` against PyTorch {torch.__version__} '
            f'on {datetime.date.today().isoformat()}; regenerate rather than edit.',
            'A name is one public attribute of the torch namespace; names out of scope (the '
            'skip list in the script, counted below) are left out of the percentage.',
            '',
            '| namespace | present | in scope | coverage | skipped |',
            '|---|---:|---:|---:|---:|',
            *rows,
            f'| all | {total_have} | {total_in} | {pct:.1f}% | {sum(skip_counts.values())} |',
            '',
            '## Skipped, by reason',
            '',
            *(f'- {reason}: {n}' for reason, n in sorted(skip_counts.items(), key=lambda kv: -kv[1])),
            '',
            '## Missing names in scope',
            '',
            *details,
        ]
        with open(args.write, 'w') as f:
            f.write('\n'.join(lines))
    return 0


if __name__ == '__main__':
    sys.exit(main())
