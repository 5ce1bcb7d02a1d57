"""tp.func: composable function transforms (PyTorch's ``torch.func``): vmap, grad,
grad_and_value, vjp, jvp, linearize, jacrev, jacfwd, hessian, functional_call,
stack_module_state, replace_all_batch_norm_modules_, functionalize."""
from tensorplay.nn.utils.stateless import functional_call

from . import _batch_rules, _batch_rules_linalg, _batch_rules_nn  # noqa: F401  (the rules)
from ._eager_transforms import (grad, grad_and_value, hessian, jacfwd, jacrev, jvp, linearize,
                                vjp)
from ._functionalize import functionalize
from ._module_state import replace_all_batch_norm_modules_, stack_module_state
from ._vmap import vmap

__all__ = ['vmap', 'grad', 'grad_and_value', 'vjp', 'jvp', 'linearize', 'jacrev', 'jacfwd',
           'hessian', 'functional_call', 'stack_module_state', 'replace_all_batch_norm_modules_',
           'functionalize']
