"""Views of kh's call buffers (DLPack DLTensors) as torch tensors or numpy arrays.

The views alias kh's memory: nothing is copied, so what a candidate writes lands in the buffers
kh poisons, guards with red zones and checks. Memory is viewed as bytes, then reinterpreted
(`.view(dtype)`), so every dtype torch knows works, fp8 included.
"""

import contextlib
import ctypes
import os

KDL_CPU, KDL_CUDA = 1, 2


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


# (DLPack type code, bits) -> dtype name in torch; numpy has no bfloat16 or fp8, which it sees raw.
TORCH_DTYPES = {(0, 8): "int8", (0, 16): "int16", (0, 32): "int32", (0, 64): "int64",
                (1, 8): "uint8", (1, 16): "uint16", (1, 32): "uint32", (1, 64): "uint64",
                (2, 16): "float16", (2, 32): "float32", (2, 64): "float64", (4, 16): "bfloat16",
                (6, 8): "bool", (10, 8): "float8_e4m3fn", (12, 8): "float8_e5m2"}
NUMPY_DTYPES = dict(TORCH_DTYPES)
NUMPY_DTYPES.update({(4, 16): "uint16", (6, 8): "bool_", (10, 8): "uint8", (12, 8): "uint8"})
INTEGER_CODES = (0, 1)
BOOL_CODE = 6
SCALAR_CTYPES = {(0, 8): ctypes.c_int8, (0, 16): ctypes.c_int16, (0, 32): ctypes.c_int32,
                 (0, 64): ctypes.c_int64, (1, 8): ctypes.c_uint8, (1, 16): ctypes.c_uint16,
                 (1, 32): ctypes.c_uint32, (1, 64): ctypes.c_uint64, (2, 32): ctypes.c_float,
                 (2, 64): ctypes.c_double, (6, 8): ctypes.c_bool}
VIEW_CACHE_LIMIT = 256  # views kept between calls (the buffers of a trial are reused)


class CudaBytes:
    """A device allocation of kh's, shown to torch through __cuda_array_interface__."""

    def __init__(self, pointer, nbytes):
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1",
                                         "data": (pointer, False), "version": 2}


def share_cupti_with_torch():
    """kh's CUPTI timer must use the libcupti torch already loaded, if any: two copies of CUPTI in
    one process compete for the driver's callbacks."""
    if os.environ.get("KH_CUPTI_LIBRARY"):
        return
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.split()[-1]
                if os.path.basename(path).startswith("libcupti.so"):
                    os.environ["KH_CUPTI_LIBRARY"] = path
                    return
    except OSError:
        pass


class TensorViews:
    """Turns the DLTensors of one call into the arguments a Python function receives."""

    def __init__(self, backend, device):
        self.backend = backend
        self.device = device
        try:
            import torch
            self.torch = torch
        except ImportError:
            self.torch = None
            if backend == "cuda":
                raise RuntimeError("the Python worker needs torch for the cuda backend")
        if self.torch is None:
            import numpy  # the cpu backend without torch (kh's tests in CI)
            self.numpy = numpy
        elif backend == "cuda":
            self.torch.cuda.set_device(device)
        self.streams = {}
        self.cache = {}

    @property
    def library(self):
        return "torch" if self.torch is not None else "numpy"

    def argument(self, t, view):
        """What a function receives for an input: None when absent, a number for a scalar."""
        if not t.data:
            return None
        if t.ndim == 0:
            key = (t.dtype.code, t.dtype.bits)
            value = SCALAR_CTYPES[key].from_address(t.data).value if key in SCALAR_CTYPES else \
                float(view.item())
            if t.dtype.code == BOOL_CODE:
                return bool(value)
            return int(value) if t.dtype.code in INTEGER_CODES else float(value)
        return view

    def view(self, t):
        if not t.data:
            return None
        shape = tuple(t.shape[d] for d in range(t.ndim))
        key = (t.data, t.device.device_type, t.dtype.code, t.dtype.bits, shape)
        cached = self.cache.get(key)
        if cached is not None:
            return cached
        if len(self.cache) >= VIEW_CACHE_LIMIT:
            self.cache.clear()
        numel = 1
        for extent in shape:
            numel *= extent
        nbytes = (numel * t.dtype.bits * max(1, t.dtype.lanes) + 7) // 8
        dtype_key = (t.dtype.code, t.dtype.bits)
        view = self.torch_view(t, shape, nbytes, dtype_key) if self.torch is not None else \
            self.numpy_view(t, shape, nbytes, dtype_key)
        self.cache[key] = view
        return view

    def torch_view(self, t, shape, nbytes, dtype_key):
        torch = self.torch
        dtype = getattr(torch, TORCH_DTYPES.get(dtype_key, "uint8"))
        on_device = t.device.device_type == KDL_CUDA
        device = torch.device("cuda", t.device.device_id) if on_device else torch.device("cpu")
        if nbytes == 0:
            return torch.empty(shape, dtype=dtype, device=device)
        if on_device:
            raw = torch.as_tensor(CudaBytes(t.data, nbytes), device=device)
        else:
            raw = torch.frombuffer((ctypes.c_uint8 * nbytes).from_address(t.data),
                                   dtype=torch.uint8)
        return raw.view(dtype).view(shape)

    def numpy_view(self, t, shape, nbytes, dtype_key):
        np = self.numpy
        dtype = getattr(np, NUMPY_DTYPES.get(dtype_key, "uint8"))
        if nbytes == 0:
            return np.empty(shape, dtype=dtype)
        raw = np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(t.data))
        return raw.view(dtype).reshape(shape)

    @contextlib.contextmanager
    def calling_on(self, stream):
        """torch launches on kh's stream (the one kh times) without autograd bookkeeping."""
        if self.torch is None:
            yield
            return
        with self.torch.no_grad():
            if self.backend != "cuda" or not stream:
                yield
                return
            external = self.streams.get(stream)
            if external is None:
                external = self.torch.cuda.ExternalStream(stream, device=self.device)
                self.streams[stream] = external
            with self.torch.cuda.stream(external):
                yield

    def mismatch(self, value, out):
        """("shape" | "dtype", message) when a returned value cannot stand for `out`, else None."""
        if isinstance(value, (bool, int, float)):
            if tuple(out.shape) != ():
                return ("shape", "a Python number where the definition gives shape %s" %
                        (tuple(out.shape),))
            return None
        shape = getattr(value, "shape", None)
        dtype = getattr(value, "dtype", None)
        if shape is None or dtype is None:
            return ("dtype", "a %s, not a tensor" % type(value).__name__)
        if tuple(shape) != tuple(out.shape):
            return ("shape", "shape %s where the definition gives %s" %
                    (tuple(shape), tuple(out.shape)))
        if dtype != out.dtype:
            return ("dtype", "dtype %s where the definition gives %s" % (dtype, out.dtype))
        return None

    def store(self, value, out):
        if self.torch is not None:
            if isinstance(value, (bool, int, float)):
                out.fill_(value)
            else:
                out.copy_(value)
        else:
            self.numpy.copyto(out, value)
