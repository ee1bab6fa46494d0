"""alpha * x + y written into `out` (destination-passing style)."""


def run(x, y, alpha, out):
    out[:] = alpha * x + y
