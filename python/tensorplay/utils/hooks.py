"""RemovableHandle: what register_*_hook returns; `.remove()` (or leaving a `with`) unhooks."""
import weakref


def _ref(d):
    """A weak reference where the dict type allows one (OrderedDict), else a strong one."""
    try:
        return weakref.ref(d)
    except TypeError:
        return lambda: d


class RemovableHandle:
    """Removes one hook from the dict(s) it was registered in."""

    next_id = 0

    def __init__(self, hooks_dict, *, extra_dict=None):
        self.hooks_dict_ref = _ref(hooks_dict)
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1
        extras = extra_dict if isinstance(extra_dict, (list, tuple)) else \
            ([] if extra_dict is None else [extra_dict])
        self.extra_dict_ref = tuple(_ref(d) for d in extras)

    def remove(self):
        for ref in (self.hooks_dict_ref,) + self.extra_dict_ref:
            d = ref()
            if d is not None and self.id in d:
                del d[self.id]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
