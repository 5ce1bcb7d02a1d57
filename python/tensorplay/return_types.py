"""Named tuples returned by ops with several results (PyTorch's torch.return_types)."""
from collections import namedtuple

from tensorplay import _C


def _return_type(name, fields):
    base = namedtuple(name, fields)

    def __repr__(self):
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(fields, self))
        return f"tensorplay.return_types.{name}(\n{body})"

    cls = type(name, (base,), {"__repr__": __repr__, "__slots__": (),
                               "__module__": "tensorplay.return_types"})
    _C._set_return_type(name, cls)
    return cls


max = _return_type("max", ["values", "indices"])
min = _return_type("min", ["values", "indices"])
sort = _return_type("sort", ["values", "indices"])
topk = _return_type("topk", ["values", "indices"])
aminmax = _return_type("aminmax", ["min", "max"])
cummax = _return_type("cummax", ["values", "indices"])
cummin = _return_type("cummin", ["values", "indices"])
kthvalue = _return_type("kthvalue", ["values", "indices"])
median = _return_type("median", ["values", "indices"])
nanmedian = _return_type("nanmedian", ["values", "indices"])
mode = _return_type("mode", ["values", "indices"])
slogdet = _return_type("slogdet", ["sign", "logabsdet"])
qr = _return_type("qr", ["Q", "R"])
svd = _return_type("svd", ["U", "S", "V"])
linalg_slogdet = _return_type("linalg_slogdet", ["sign", "logabsdet"])
linalg_inv_ex = _return_type("linalg_inv_ex", ["inverse", "info"])
linalg_cholesky_ex = _return_type("linalg_cholesky_ex", ["L", "info"])
linalg_qr = _return_type("linalg_qr", ["Q", "R"])
linalg_svd = _return_type("linalg_svd", ["U", "S", "Vh"])
linalg_eigh = _return_type("linalg_eigh", ["eigenvalues", "eigenvectors"])
linalg_eig = _return_type("linalg_eig", ["eigenvalues", "eigenvectors"])
linalg_lstsq = _return_type("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])
geqrf = _return_type("geqrf", ["a", "tau"])
histogram = _return_type("histogram", ["hist", "bin_edges"])
histogramdd = _return_type("histogramdd", ["hist", "bin_edges"])
linalg_lu_factor_ex = _return_type("linalg_lu_factor_ex", ["LU", "pivots", "info"])
linalg_lu_factor = _return_type("linalg_lu_factor", ["LU", "pivots"])
linalg_lu = _return_type("linalg_lu", ["P", "L", "U"])
lu_unpack = _return_type("lu_unpack", ["P", "L", "U"])
linalg_solve_ex = _return_type("linalg_solve_ex", ["result", "info"])
triangular_solve = _return_type("triangular_solve", ["solution", "cloned_coefficient"])
linalg_ldl_factor_ex = _return_type("linalg_ldl_factor_ex", ["LD", "pivots", "info"])
linalg_ldl_factor = _return_type("linalg_ldl_factor", ["LD", "pivots"])
_lu_with_info = _return_type("_lu_with_info", ["LU", "pivots", "info"])
