"""Symbolic sizes for tp.onnx (Note [Dynamic dims by multi-trace fitting]).

make_fx has no symbolic ints: every size, view shape, slice bound or arange length comes
out of a trace as a plain int. The exporter traces the model several times with different
sizes for the dynamic axes; an int that changes between traces is fitted here as a
polynomial in the axes' sizes (a ``Sym``), and the fit is checked against a trace it was not
fitted on. A ``Sym`` knows its value in the example trace, so code that only needs a number
(a rank, a broadcast check) keeps working.

Note [Dynamic dims by multi-trace fitting]
With k dynamic axes s_1..s_k, the exporter traces at the 2**k corners of a box (each axis at
its example size a_j or an alternative size b_j) and once more at a third point c (every
axis at a size different from both). An int that takes the same value at every trace is a
constant. Any other one is fitted as a multilinear polynomial sum_S coef_S * prod_{j in S} s_j
(S ranging over the subsets of the axes): the 2**k corner values determine the 2**k
coefficients exactly (a separable divided difference, axis by axis, over exact fractions),
and the value at c must match the polynomial's, else the int is not a polynomial of this
kind in the sizes (a floor division, a min, a size the model clamps or branches on) and the
export fails, naming the op and the model's source line, instead of baking in a number.
This covers what models do with sizes: the sizes themselves, sums and differences with
constants (``T - 1``, ``s1 + s2`` of a concat), products (``B * T`` for a flattening view,
``T * C`` strides), and exact divisions the traces show as fractions (``T // 2`` where every
traced T is even). The fit is exact on the corners and checked at c, so it is sound for all
sizes where the int is a multilinear polynomial of the sizes - the case of every view,
reshape, slice and factory size in the models tested - and a wrong guess is an error, not a
silently wrong graph, at every size the traces see.
"""
from fractions import Fraction
from itertools import product

__all__ = ['Sym', 'Unfit', 'fit', 'FitError', 'SymUsedAsNumber']


class FitError(ValueError):
    """An int that changes between traces but is no multilinear polynomial of the sizes."""


class SymUsedAsNumber(TypeError):
    """A size that depends on a dynamic axis, used where the translation needs a number."""

    def __init__(self, sym):
        if isinstance(sym, Unfit):
            msg = f'a size {sym.reason}'
        else:
            msg = (f'a size that depends on a dynamic axis ({sym}) is used where the ONNX '
                   f'translation needs a fixed number')
        super().__init__(msg)
        self.sym = sym


class Sym:
    """An int that depends on the dynamic sizes: ``coefs`` maps monomials (sorted tuples of
    axis names, ``()`` the constant) to Fractions; ``value`` is the int in the example
    trace, ``values`` the ints of every trace (in trace order)."""
    __slots__ = ('coefs', 'value', 'values', '_key')

    def __init__(self, coefs, value, values=None):
        self.coefs = {m: Fraction(c) for m, c in coefs.items() if c != 0}
        self.value = value
        self.values = values
        self._key = tuple(sorted(self.coefs.items()))

    # Note: no __int__ / __index__ / __float__: a Sym used where a fixed number is needed
    # raises (SymUsedAsNumber) instead of baking the example size into the graph.
    def __int__(self, *args):
        raise SymUsedAsNumber(self)

    __index__ = __float__ = __bool__ = __int__
    __lt__ = __le__ = __gt__ = __ge__ = __int__
    __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __truediv__ = __rtruediv__ = __int__
    __pow__ = __rpow__ = __abs__ = __divmod__ = __rdivmod__ = __int__

    def __eq__(self, other):
        if isinstance(other, Sym):
            return self._key == other._key
        return False

    def __hash__(self):
        return hash(self._key)

    def symbols(self):
        return sorted({s for m in self.coefs for s in m})

    def is_symbol(self):
        """The name if this is exactly one axis's size, else None."""
        if len(self.coefs) == 1:
            (m, c), = self.coefs.items()
            if len(m) == 1 and c == 1:
                return m[0]
        return None

    def evaluate(self, sizes):
        total = Fraction(0)
        for m, c in self.coefs.items():
            t = c
            for s in m:
                t *= sizes[s]
            total += t
        return total

    def __repr__(self):
        terms = []
        for m, c in sorted(self.coefs.items(), key=lambda mc: (-len(mc[0]), mc[0])):
            body = '*'.join(m)
            if not m:
                terms.append(str(c))
            elif c == 1:
                terms.append(body)
            elif c == -1:
                terms.append('-' + body)
            else:
                terms.append(f'{c}*{body}')
        s = ' + '.join(terms).replace('+ -', '- ')
        return s or '0'

    # arithmetic translators do on sizes (int or Sym); values follow along
    def _combine(self, other, f, fv):
        if isinstance(other, Sym):
            coefs = f(self.coefs, other.coefs)
            value = fv(self.value, other.value)
            values = [fv(a, b) for a, b in zip(self.values, other.values)] \
                if self.values is not None and other.values is not None else None
        else:
            coefs = f(self.coefs, {(): Fraction(other)})
            value = fv(self.value, other)
            values = [fv(a, other) for a in self.values] if self.values is not None else None
        return sym_or_int(coefs, value, values)

    def __add__(self, other):
        return self._combine(other, _poly_add, lambda a, b: a + b)

    __radd__ = __add__

    def __neg__(self):
        return sym_or_int({m: -c for m, c in self.coefs.items()}, -self.value,
                          None if self.values is None else [-v for v in self.values])

    def __sub__(self, other):
        return self + (-other)

    def __rsub__(self, other):
        return (-self) + other

    def __mul__(self, other):
        return self._combine(other, _poly_mul, lambda a, b: a * b)

    __rmul__ = __mul__


class Unfit:
    """An int slot that changes between traces but fits no polynomial of the sizes. It is
    an error only where a translation uses it (an op like a strided slice computes such a
    size itself, and never needs it); any use raises SymUsedAsNumber with the reason."""
    __slots__ = ('reason', 'value', 'values')

    def __init__(self, reason, values):
        self.reason, self.value, self.values = reason, values[0], list(values)

    def _fail(self, *args):
        raise SymUsedAsNumber(self)

    __int__ = __index__ = __float__ = __bool__ = __lt__ = __le__ = __gt__ = __ge__ = _fail
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __neg__ = _fail
    __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __truediv__ = __rtruediv__ = _fail
    __pow__ = __rpow__ = __abs__ = __divmod__ = __rdivmod__ = _fail

    def __eq__(self, other):
        return self is other

    def __hash__(self):
        return id(self)

    def __repr__(self):
        return f'<size that {self.reason}>'


def sym_or_int(coefs, value, values=None):
    coefs = {m: c for m, c in coefs.items() if c != 0}
    if not coefs:
        return 0
    if list(coefs) == [()]:
        c = coefs[()]
        return int(c) if c.denominator == 1 else c
    return Sym(coefs, value, values)


def _poly_add(a, b):
    out = dict(a)
    for m, c in b.items():
        out[m] = out.get(m, 0) + c
    return out


def _poly_mul(a, b):
    out = {}
    for m1, c1 in a.items():
        for m2, c2 in b.items():
            m = tuple(sorted(m1 + m2))
            out[m] = out.get(m, 0) + c1 * c2
    return out


def fit(values, plan):
    """An int or a Sym for one int slot. ``values``: its value in each trace, in the order of
    ``plan.points`` (the corners of the box first, the check point last)."""
    v0 = values[0]
    if all(v == v0 for v in values):
        return v0
    key = tuple(values)
    hit = plan.cache.get(key)
    if hit is None:
        hit = plan.cache[key] = _fit(values, plan)
    if isinstance(hit, FitError):
        raise hit
    return hit


def _fit(values, plan):
    try:
        return _fit_poly(values, plan)
    except FitError as e:
        return e


def _fit_poly(values, plan):
    v0 = values[0]
    names = plan.names
    k = len(names)
    table = {c: Fraction(values[i]) for i, c in enumerate(plan.corners)}
    for j in range(k):
        a, b = plan.base[j], plan.alt[j]
        new = {}
        for c in table:
            if c[j] == 0:
                c1 = c[:j] + (1,) + c[j + 1:]
                va, vb = table[c], table[c1]
                slope = (vb - va) / (b - a)
                new[c] = va - slope * a
                new[c1] = slope
        table = new
    coefs = {tuple(names[j] for j in range(k) if c[j]): v for c, v in table.items()}
    check = plan.check_sizes
    got = Sym(coefs, v0).evaluate(check)
    if got != values[-1]:
        raise FitError(f'takes the values {list(values)} at sizes {plan.describe()}, which no '
                       f'polynomial of the dynamic sizes fits')
    return sym_or_int(coefs, v0, list(values))


class Plan:
    """The sizes of each trace: ``names`` the dynamic axes, ``base``/``alt``/``check`` their
    sizes; ``points`` the size assignment of each trace (corners, then the check)."""

    def __init__(self, names, base, alt, check):
        self.names, self.base, self.alt, self.check = list(names), list(base), list(alt), list(check)
        self.corners = list(product((0, 1), repeat=len(names)))
        self.points = [{n: (self.alt[j] if c[j] else self.base[j]) for j, n in enumerate(names)}
                       for c in self.corners]
        self.check_sizes = dict(zip(names, check))
        self.points.append(self.check_sizes)
        self.cache = {}

    def describe(self):
        return '; '.join(', '.join(f'{n}={p[n]}' for n in self.names) for p in self.points)
