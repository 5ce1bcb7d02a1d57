"""Model ensembling helpers: stack_module_state and replace_all_batch_norm_modules_."""
__all__ = ['stack_module_state', 'replace_all_batch_norm_modules_']


def stack_module_state(models):
    """``(params, buffers)``: each parameter and buffer of the same-class ``models``
    stacked along a new leading dim, for ``vmap(functional_call)`` over the ensemble.
    Stacked parameters are new leaves that require grad where the originals did.

        >>> params, buffers = tp.func.stack_module_state(models)
        >>> out = tp.vmap(lambda p, b, x: functional_call(models[0], (p, b), (x,)),
        ...               in_dims=(0, 0, None))(params, buffers, x)
    """
    models = list(models)
    if not models:
        raise RuntimeError('stack_module_state: Expected at least one model, got 0.')
    if not (all(m.training for m in models) or not any(m.training for m in models)):
        raise RuntimeError('stack_module_state: Expected all models to have the same '
                           'training/eval mode.')
    if any(type(m) is not type(models[0]) for m in models):
        raise RuntimeError('stack_module_state: Expected all models to be of the same class.')

    def stacked(name_lists):
        out = {}
        for name, _ in name_lists[0]:
            tensors = [dict(ns)[name] for ns in name_lists]
            value = _stack(tensors)
            if any(t.requires_grad for t in tensors):
                value = value.requires_grad_()
            out[name] = value
        return out
    params = stacked([list(m.named_parameters()) for m in models])
    buffers = stacked([list(m.named_buffers()) for m in models])
    return params, buffers


def _stack(tensors):
    from tensorplay import stack
    return stack([t.detach() for t in tensors])


def replace_all_batch_norm_modules_(root):
    """Makes every BatchNorm in ``root`` stop tracking running statistics (in place), so
    that vmap over the module never writes an unbatched buffer with batched values.
    Returns ``root``."""
    from tensorplay.nn.modules.normalization import _BatchNorm
    for m in root.modules():
        if isinstance(m, _BatchNorm):
            m.running_mean = None
            m.running_var = None
            m.num_batches_tracked = None
            m.track_running_stats = False
    return root
