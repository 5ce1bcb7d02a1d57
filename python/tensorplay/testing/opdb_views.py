"""Op-database entries: view ops (issue 3). Loaded after opdb.py, whose registry it extends.

Every sample runs on contiguous, transposed and strided inputs where the harness can make
them; tests/python/test_views.py checks separately that results alias their input.
"""
import importlib
import sys

import torch

db = sys.modules.get('tensorplay_opdb') or importlib.import_module('tensorplay.testing.opdb')

COVERAGE = ('0-dim', 'empty', 'noncontig')
LAYOUTS = ('contiguous', 'transposed', 'strided')


def _on_3d(*calls):
    """Samples applying each (args, kwargs) to a 2x3x4 input in every layout, plus the
    listed extra (tensor_shape, args, kwargs) cases."""
    def samples(op, mk):
        for args, kwargs in calls:
            for layout in LAYOUTS:
                yield db.Sample((mk((2, 3, 4)),) + args, kwargs, layout=layout)
    return samples


def _with_extras(base, *extras):
    def samples(op, mk):
        yield from base(op, mk)
        for shape, args, kwargs in extras:
            yield db.Sample((mk(shape),) + args, kwargs)
    return samples


def view_op(name, calls, extras=(), errors=(), coverage=COVERAGE, **kw):
    return db.register(db.OpInfo(
        name, _with_extras(_on_3d(*calls), *extras), tol=db.EXACT_TOL, coverage=coverage,
        errors=db._errors(*errors) if errors else None, **kw))


NO_0DIM = ('empty', 'noncontig')  # ops that reject 0-dim input (an error input checks it)


E = torch.ones(2, 3, 4)
view_op('permute', [(((2, 0, 1),), {}), (((-1, 1, 0),), {})], [((), ((),), {}), ((0, 3), ((1, 0),), {})],
        [db._err(E, (0, 1)), db._err(E, (0, 0, 1)), db._err(E, (0, 1, 3), exc=IndexError)])
view_op('movedim', [((0, 2), {}), (((0, 1), (2, 0)), {})], [((0, 2), (1, 0), {}), ((), (0, 0), {})],
        [db._err(E, (0, 1), (0,)), db._err(E, 3, 0, exc=IndexError)])
view_op('moveaxis', [((-1, 0), {})], [((0,), (0, 0), {}), ((), (0, 0), {})])
view_op('swapaxes', [((0, 2), {})], [((0, 2), (0, 1), {}), ((), (0, 0), {})],
        [db._err(E, 0, 5, exc=IndexError)], inplace=True)
view_op('swapdims', [((1, -1), {})], [((), (0, 0), {}), ((2, 0), (0, 1), {})], inplace=True)
view_op('transpose', [((0, 1), {}), ((-1, -3), {})], [((), (0, -1), {}), ((0, 3), (0, 1), {})],
        [db._err(E, 0, 3, exc=IndexError)], inplace=True)
view_op('unsqueeze', [((0,), {}), ((3,), {}), ((-1,), {})], [((), (0,), {}), ((0,), (1,), {})],
        [db._err(E, 4, exc=IndexError)], inplace=True)
view_op('squeeze', [((), {}), ((0,), {})], [((1, 3, 1), (), {}), ((1, 3, 1), ((0, 2),), {}),
                                          ((1, 3, 1), (-1,), {}), ((), (), {}), ((0, 1), (), {})],
        [db._err(E, 3, exc=IndexError)], inplace=True)
view_op('narrow', [((2, 1, 2), {}), ((0, -1, 1), {}), ((1, 0, 0), {})], [((0,), (0, 0, 0), {})],
        [db._err(E, 2, 3, 2), db._err(E, 2, 5, 1, exc=IndexError), db._err(torch.tensor(1.), 0, 0, 1)],
        coverage=NO_0DIM)
view_op('select', [((0, 1), {}), ((2, -1), {}), ((1, 0), {})], [((0, 2), (1, 1), {})],
        [db._err(E, 1, 3, exc=IndexError), db._err(E, 3, 0, exc=IndexError),
         db._err(torch.tensor(1.), 0, 0, exc=IndexError)], coverage=NO_0DIM)
view_op('unfold', [((2, 2, 1), {}), ((1, 3, 2), {}), ((0, 1, 3), {})], [((), (0, 1, 1), {}), ((0, 3), (1, 2, 1), {})],
        [db._err(E, 2, 5, 1, form='method'), db._err(E, 2, 2, 0, form='method')], function=False)
view_op('diagonal', [((), {}), ((1,), {}), ((-1, 1, 2), {}), ((0, 2, 0), {})],
        [((3, 3), (5,), {}), ((0, 3), (), {})],
        [db._err(torch.ones(3), exc=IndexError), db._err(E, 0, 1, 1)], coverage=NO_0DIM)
view_op('flatten', [((), {}), ((1,), {}), ((0, 1), {}), ((-2, -1), {})],
        [((), (), {}), ((0, 3), (), {})], [db._err(E, 2, 1)])
view_op('unflatten', [((2, (2, 2)), {}), ((1, (3, 1)), {}), ((-1, (-1, 2)), {})],
        [((0, 4), (1, (2, 2)), {})], [db._err(E, 2, (3, 2)), db._err(E, 2, (-1, -1))],
        coverage=NO_0DIM)
view_op('broadcast_to', [(((2, 3, 4),), {}), (((5, 2, 3, 4),), {})],
        [((1, 3), ((2, 3),), {}), ((), ((2,),), {}), ((0, 1), ((0, 4),), {})],
        [db._err(E, (2, 2, 4))])
view_op('split', [((2, 2), {}), (((1, 2), 1), {}), ((1,), {})], [((0, 4), (1,), {})],
        [db._err(E, (1, 1), 1)], coverage=NO_0DIM)
view_op('chunk', [((2,), {}), ((3, 2), {}), ((5, -1), {})], [((0, 4), (2,), {})],
        [db._err(E, 0)], coverage=NO_0DIM)
view_op('unbind', [((), {}), ((2,), {}), ((-2,), {})], [((0, 4), (1,), {})],
        [db._err(torch.tensor(1.), exc=IndexError)], coverage=NO_0DIM)
view_op('tensor_split', [((2,), {}), (((1, 3), 2), {}), ((3, -1), {}), (((-1, 9),), {})],
        [((0, 4), (2, 1), {})], [db._err(torch.tensor(1.), 2), db._err(E, 0)], coverage=NO_0DIM)
view_op('hsplit', [((3,), {}), (((1,),), {})], [((6,), (2,), {}), ((2, 0), (1,), {})],
        [db._err(E, 2)], coverage=NO_0DIM)
view_op('vsplit', [((2,), {}), (((1, 1),), {})], [((0, 2), (1,), {})], [db._err(torch.ones(3), 1)], coverage=NO_0DIM)
view_op('dsplit', [((2,), {}), (((3,),), {})], [((0, 1, 4), (4,), {})], [db._err(E, 3)], coverage=NO_0DIM)
view_op('as_strided', [(((3, 2), (1, 3)), {}), (((2, 2), (4, 1), 1), {})],
        [((0,), ((0,), (1,)), {}), ((), ((), ()), {})], [db._err(E, (5, 5), (5, 1))], inplace=True)


# t: 0-, 1- and 2-dim inputs only (t_ is its in-place form)
def _t_samples(op, mk):
    for layout in LAYOUTS:
        yield db.Sample((mk((3, 4)),), layout=layout)
    for shape in ((5,), (), (0, 3), (1, 4)):
        yield db.Sample((mk(shape),))


db.register(db.OpInfo('t', _t_samples, tol=db.EXACT_TOL, coverage=COVERAGE, inplace=True,
                      errors=db._errors(db._err(E), db._err(E, form='inplace'))))
