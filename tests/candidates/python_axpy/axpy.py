"""alpha * x + y with a planted fault chosen by KH_PARAMS["FAULT"] (set by kh before import).

Works on numpy arrays (the cpu backend without torch) and torch tensors alike."""

FAULT = KH_PARAMS["FAULT"]  # noqa: F821 - injected by kh's Python worker
_cache = []


def run(x, y, alpha):
    if FAULT == "raise":
        raise ValueError("planted failure in the candidate")
    if FAULT == "raise_long":  # longer than kh's message buffer, multi-byte characters
        raise ValueError("é" * 50000 + " planted failure at the end")
    if FAULT == "write_input":
        y[:] = y * 2  # corrupts an input, which kh must notice
    if FAULT == "cache_outputs":
        if not _cache:
            _cache.append(alpha * x + y)
        return _cache[0]  # the first call's result, whatever the inputs
    out = alpha * x + y
    if FAULT == "wrong_shape":
        return out[:-1] if out.shape[0] > 1 else (out * 0)[None]
    if FAULT == "wrong_dtype":
        return out.astype("float64") if hasattr(out, "astype") else out.double()
    if FAULT == "wrong_count":
        return out, out
    return out
