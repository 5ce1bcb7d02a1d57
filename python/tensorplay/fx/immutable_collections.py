"""The list and dict types of Node arguments: edits go through Node.args / Node.kwargs
(which keep users up to date), so the containers themselves refuse changes."""

__all__ = ['immutable_list', 'immutable_dict']


def _no_mutation(self, *args, **kwargs):
    raise TypeError(f"'{type(self).__name__}' object does not support mutation. If you are "
                    'trying to modify the kwargs of a Node, set node.kwargs (or node.args) '
                    'to a new value instead')


class immutable_list(list):
    """A list that cannot be changed in place (Node arguments)."""
    __delitem__ = __iadd__ = __imul__ = __setitem__ = append = clear = extend = insert = \
        pop = remove = reverse = sort = _no_mutation

    def __hash__(self):
        return hash(tuple(self))

    def __reduce__(self):
        return immutable_list, (tuple(self),)


class immutable_dict(dict):
    """A dict that cannot be changed in place (Node keyword arguments)."""
    __delitem__ = __setitem__ = __ior__ = clear = pop = popitem = setdefault = update = \
        _no_mutation

    def __hash__(self):
        return hash(tuple(self.items()))

    def __reduce__(self):
        return immutable_dict, (tuple(self.items()),)
