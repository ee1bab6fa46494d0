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
VIEW_CACHE_LIMIT = 256  # raw byte views kept between calls (a trial's buffers are reused)


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
        self.numerics = self.torch_numerics()

    def argument(self, t, view, scalar):
        """What a function receives for an input: None when absent, a number for a scalar (shape
        null in the definition: a 0-d host tensor); a 0-d tensor input stays a tensor."""
        if not t.data:
            return None
        if scalar:
            key = (t.dtype.code, t.dtype.bits)
            value = SCALAR_CTYPES[key].from_address(t.data).value if key in SCALAR_CTYPES else \
                float(view.item())
            if t.dtype.code == BOOL_CODE:
                return bool(value)
            return int(value) if t.dtype.code in INTEGER_CODES else float(value)
        return view

    def view(self, t):
        """A fresh typed view per call (a candidate may change a view's metadata in place) over
        raw bytes that are cached by address, so building it costs little."""
        if not t.data:
            return None
        shape = tuple(t.shape[d] for d in range(t.ndim))
        numel = 1
        for extent in shape:
            numel *= extent
        nbytes = (numel * t.dtype.bits * max(1, t.dtype.lanes) + 7) // 8
        dtype_key = (t.dtype.code, t.dtype.bits)
        if self.torch is not None:
            dtype = getattr(self.torch, TORCH_DTYPES.get(dtype_key, "uint8"))
        else:
            dtype = getattr(self.numpy, NUMPY_DTYPES.get(dtype_key, "uint8"))
        if nbytes == 0:
            return self.empty(shape, dtype, t)
        key = (t.data, t.device.device_type, t.device.device_id, nbytes)
        raw = self.cache.get(key)
        if raw is None:
            if len(self.cache) >= VIEW_CACHE_LIMIT:
                self.cache.clear()
            raw = self.raw_bytes(t, nbytes)
            self.cache[key] = raw
        if self.torch is not None:
            return raw.view(dtype).view(shape)
        return raw.view(dtype).reshape(shape)

    def empty(self, shape, dtype, t):
        if self.torch is None:
            return self.numpy.empty(shape, dtype=dtype)
        on_device = t.device.device_type == KDL_CUDA
        device = self.torch.device("cuda", t.device.device_id) if on_device else "cpu"
        return self.torch.empty(shape, dtype=dtype, device=device)

    def raw_bytes(self, t, nbytes):
        """kh's buffer as a 1-d uint8 tensor (or array) aliasing its memory."""
        host = (ctypes.c_uint8 * nbytes).from_address(t.data) \
            if t.device.device_type != KDL_CUDA else None
        if self.torch is None:
            return self.numpy.ctypeslib.as_array(host)
        if host is None:
            device = self.torch.device("cuda", t.device.device_id)
            return self.torch.as_tensor(CudaBytes(t.data, nbytes), device=device)
        return self.torch.frombuffer(host, dtype=self.torch.uint8)

    def torch_numerics(self):
        """torch's global numerics settings, or None without torch."""
        if self.torch is None:
            return None
        torch = self.torch
        return (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32,
                torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
                torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
                torch.get_float32_matmul_precision(), torch.get_default_dtype())

    def set_torch_numerics(self, numerics):
        torch = self.torch
        (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32,
         torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
         torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction) = numerics[:4]
        torch.set_float32_matmul_precision(numerics[4])
        torch.set_default_dtype(numerics[5])

    def synchronize(self):
        """Waits for the device, whatever stream the call used (kh waits only for its own)."""
        if self.torch is not None and self.backend == "cuda":
            self.torch.cuda.synchronize(self.device)

    @contextlib.contextmanager
    def calling_on(self, stream, pristine_numerics=False):
        """torch launches on kh's stream (the one kh times) without autograd bookkeeping; with
        `pristine_numerics`, under torch's settings as they were when the worker started."""
        if self.torch is None:
            yield
            return
        if pristine_numerics:
            current = self.torch_numerics()
            self.set_torch_numerics(self.numerics)
            try:
                with self.calling_on(stream):
                    yield
            finally:
                self.set_torch_numerics(current)
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
