"""alpha * x + y written into `out` (destination-passing style)."""
from .axpy_math import axpy


def run(x, y, alpha, out):
    out[:] = axpy(alpha, x, y)
