"""A sibling module, imported relatively: the candidate is a package, as in FlashInfer-Bench."""


def axpy(alpha, x, y):
    return alpha * x + y
