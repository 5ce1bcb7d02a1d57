"""nn.parallel.DistributedDataParallel over tensorplay.distributed.

Note [DDP buckets]: parameters are grouped, in reverse registration order (roughly the
order backward produces their gradients), into buckets of at most bucket_cap_mb. A post
accumulate-grad hook marks a parameter ready; when a bucket's last parameter is ready its
gradients are flattened and all-reduced asynchronously while backward goes on. The hook
that readies the last bucket waits for every bucket and writes the averaged gradients back
into .grad. With find_unused_parameters=True, forward walks the autograd graph from the
outputs and marks the parameters it does not reach ready at once (they contribute zeros).
"""
from contextlib import contextmanager

import tensorplay as tp
from tensorplay.nn.modules.module import Module

__all__ = ["DistributedDataParallel"]


def _tensors_in(obj, out):
    if isinstance(obj, tp.Tensor):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            _tensors_in(o, out)
    elif isinstance(obj, dict):
        for o in obj.values():
            _tensors_in(o, out)
    return out


class DistributedDataParallel(Module):
    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
                 process_group=None, bucket_cap_mb=None, find_unused_parameters=False,
                 check_reduction=False, gradient_as_bucket_view=False, static_graph=False,
                 delay_all_reduce_named_params=None, param_to_hook_all_reduce=None,
                 mixed_precision=None, device_mesh=None, init_sync=True):
        super().__init__()
        import tensorplay.distributed as dist
        self._dist = dist
        if not dist.is_initialized():
            raise ValueError("Default process group has not been initialized, please make sure "
                             "to call init_process_group.")
        params = [p for p in module.parameters() if p.requires_grad]
        if not params:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have "
                               "any parameter that requires a gradient.")
        self.module = module
        self.process_group = process_group
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self.bucket_bytes_cap = int((25 if bucket_cap_mb is None else bucket_cap_mb) * 1024 * 1024)
        self._params = params
        if init_sync:
            self._sync_module_states()
        # buckets: reverse order, split by dtype and size
        self._buckets = []
        cur, cur_bytes = [], 0
        for p in reversed(params):
            nbytes = p.numel() * p.element_size()
            if cur and (cur_bytes + nbytes > self.bucket_bytes_cap or cur[0].dtype != p.dtype):
                self._buckets.append(cur)
                cur, cur_bytes = [], 0
            cur.append(p)
            cur_bytes += nbytes
        if cur:
            self._buckets.append(cur)
        self._bucket_of = {}
        for b, ps in enumerate(self._buckets):
            for p in ps:
                self._bucket_of[id(p)] = b
        # the hook's argument may be another Python object for the same tensor: bind each
        # parameter to its own hook
        self._handles = [p.register_post_accumulate_grad_hook(self._hook_for(p)) for p in params]
        self._reset()
        self._expect_sync = False

    # ---- state sync ----
    def _broadcast_coalesced(self, tensors):
        dist = self._dist
        by_dtype = {}
        for t in tensors:
            by_dtype.setdefault(t.dtype, []).append(t)
        with tp.no_grad():
            for ts in by_dtype.values():
                flat = tp.cat([t.detach().reshape(-1) for t in ts])
                dist.broadcast(flat, src=dist.get_global_rank(self.process_group, 0)
                               if self.process_group is not None else 0, group=self.process_group)
                off = 0
                for t in ts:
                    n = t.numel()
                    t.detach().copy_(flat[off:off + n].view(t.shape))
                    off += n

    def _sync_module_states(self):
        states = list(self.module.parameters()) + list(self.module.buffers())
        if states:
            self._broadcast_coalesced(states)

    # ---- gradient reduction ----
    def _reset(self):
        self._ready = [0] * len(self._buckets)
        self._seen = set()
        self._works = [None] * len(self._buckets)
        self._launched = 0

    def _hook_for(self, p):
        def hook(_):
            self._on_grad(p)
        return hook

    def _on_grad(self, p):
        if not self.require_backward_grad_sync or not self._expect_sync:
            return
        self._mark_ready(p)

    def _mark_ready(self, p):
        if id(p) in self._seen:
            return
        self._seen.add(id(p))
        b = self._bucket_of[id(p)]
        self._ready[b] += 1
        if self._ready[b] == len(self._buckets[b]):
            self._launch(b)

    def _launch(self, b):
        ps = self._buckets[b]
        with tp.no_grad():
            flat = tp.cat([(p.grad if p.grad is not None else tp.zeros_like(p)).reshape(-1)
                           for p in ps])
        self._works[b] = (flat, self._dist.all_reduce(flat, group=self.process_group, async_op=True))
        self._launched += 1
        if self._launched == len(self._buckets):
            self._finalize()

    def _finalize(self):
        n = self._dist.get_world_size(self.process_group)
        with tp.no_grad():
            for b, (flat, work) in enumerate(self._works):
                work.wait()
                flat.div_(n)
                off = 0
                for p in self._buckets[b]:
                    k = p.numel()
                    g = flat[off:off + k].view(p.shape)
                    if p.grad is None:
                        p.grad = g.clone()
                    else:
                        p.grad.copy_(g)
                    off += k
        self._expect_sync = False
        self._reset()

    # ---- forward ----
    def forward(self, *inputs, **kwargs):
        if self._expect_sync and self._launched < len(self._buckets) and self._seen:
            raise RuntimeError(
                "Expected to have finished reduction in the prior iteration before starting a new "
                "one. This error indicates that your module has parameters that were not used in "
                "producing loss. You can enable unused parameter detection by passing the keyword "
                "argument `find_unused_parameters=True` to `torch.nn.parallel.DistributedDataParallel`.")
        self._reset()
        if self.broadcast_buffers and self.require_forward_param_sync:
            bufs = list(self.module.buffers())
            if bufs:
                self._broadcast_coalesced(bufs)
        out = self.module(*inputs, **kwargs)
        if tp.is_grad_enabled() and self.require_backward_grad_sync:
            self._expect_sync = True
            if self.find_unused_parameters:
                used = self._reachable(out)
                for p in self._params:
                    if self._key(p) not in used:
                        self._mark_ready(p)
        else:
            self._expect_sync = False
        return out

    @staticmethod
    def _key(t):
        # the graph hands back other Python objects for the same leaf: match by storage
        return (t.data_ptr(), tuple(t.shape), t.dtype)

    def _reachable(self, out):
        seen_nodes, used = set(), set()
        stack = [t.grad_fn for t in _tensors_in(out, []) if t.grad_fn is not None]
        for t in _tensors_in(out, []):
            if t.grad_fn is None and t.requires_grad:
                used.add(self._key(t))
        while stack:
            f = stack.pop()
            if id(f) in seen_nodes:
                continue
            seen_nodes.add(id(f))
            v = getattr(f, "variable", None)
            if v is not None:
                used.add(self._key(v))
            for nxt, _ in f.next_functions:
                if nxt is not None:
                    stack.append(nxt)
        return used

    @contextmanager
    def no_sync(self):
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def state_dict(self, *args, **kwargs):
        return super().state_dict(*args, **kwargs)
