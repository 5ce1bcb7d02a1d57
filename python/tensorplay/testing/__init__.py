"""Testing utilities for TensorPlay: the op database used by tests/python."""
from . import opdb
from .opdb import (ALL_DTYPES, ErrorInput, FLOATS, INTEGRAL, INTS, Maker, NO_BOOL, OpInfo, Raw,
                   Sample, op_db)

__all__ = ['opdb', 'op_db', 'OpInfo', 'Sample', 'ErrorInput', 'Raw', 'Maker',
           'ALL_DTYPES', 'FLOATS', 'INTEGRAL', 'INTS', 'NO_BOOL']
