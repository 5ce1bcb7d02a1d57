"""PassManager: runs a list of passes once or until none changes the module, checking
the graph after each pass."""
from tensorplay.fx.passes.infra.pass_base import PassResult

__all__ = ['PassManager']


class PassManager:
    """Runs ``passes`` (PassBase objects or functions ``gm -> PassResult | GraphModule |
    None``) in order. ``steps``: how many rounds at most; with ``steps=None`` it runs
    rounds until no pass reports a change (a fixed point; ``max_steps`` bounds it).
    ``run_checks_after_each_pass``: ``check(gm)`` (lint, then ``constraints``) after each
    pass, failing with the pass's name.

        pm = PassManager([CSE(), DeadCodeElimination()], steps=None,
                         run_checks_after_each_pass=True)
        gm = pm(gm).graph_module
    """

    def __init__(self, passes=None, constraints=None, steps=1, run_checks_after_each_pass=False,
                 suppress_check_failures=False, max_steps=100):
        self.passes = list(passes or [])
        self.constraints = list(constraints or [])
        self.steps = steps
        self.max_steps = max_steps
        self.run_checks_after_each_pass = run_checks_after_each_pass
        self.suppress_check_failures = suppress_check_failures

    def add_pass(self, p):
        self.passes.append(p)

    def add_constraint(self, c):
        self.constraints.append(c)

    def check(self, module):
        """The graph checker: ``lint()`` and every constraint ``c(module)`` (a false result
        fails)."""
        module.graph.lint()
        for c in self.constraints:
            if c(module) is False:
                raise RuntimeError(f'PassManager: constraint {getattr(c, "__name__", c)} failed')

    def __call__(self, module):
        if self.run_checks_after_each_pass:
            self.check(module)
        rounds = self.steps if self.steps is not None else self.max_steps
        overall = False
        for _ in range(rounds):
            modified = False
            for p in self.passes:
                name = getattr(p, '__name__', type(p).__name__)
                res = p(module)
                if isinstance(res, PassResult):
                    module, changed = res.graph_module, res.modified
                else:
                    module, changed = (res if res is not None else module), True
                modified |= changed
                if changed:
                    module.recompile()
                if self.run_checks_after_each_pass:
                    try:
                        self.check(module)
                    except Exception as e:
                        if not self.suppress_check_failures:
                            raise RuntimeError(f'PassManager: the graph check failed after '
                                               f'pass {name}: {e}') from e
            overall |= modified
            if not modified:
                break
        return PassResult(module, overall)
