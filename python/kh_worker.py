#!/usr/bin/env python3
"""kh's Python worker: runs Python/Triton candidates and definitions' PyTorch references.

It speaks the same protocol as `kh worker` because it *is* kh's worker loop: libkh_worker.so
(include/kh/python_worker.h) reads the requests, draws the inputs, poisons and checks the
buffers, runs the references and the timers. This file only loads Python callables and calls
them on views of kh's buffers:

- torch tensors when torch imports (device tensors on the cuda backend), else numpy arrays
  (cpu backend only: bfloat16 shows as raw uint16, fp8 as raw uint8);
- inputs in the definition's order, then outputs for destination-passing functions; a scalar is
  a Python number, an absent optional input None; the call runs on kh's stream (made torch's
  current stream) under torch.no_grad();
- a value-returning function's results are checked (count, shape, dtype) and copied into kh's
  output buffers, except in timed calls, where they are dropped.

    python3 kh_worker.py --backend cpu|cuda --device N --runtime path/to/libkh_worker.so
"""

import argparse
import ctypes
import importlib.machinery
import importlib.util
import json
import linecache
import os
import sys
import traceback

import kh_tensors

# Return codes (include/kh/abi.h, include/kh/python_worker.h).
KH_OK = 0
KH_PYTHON_EXCEPTION = -1000
KH_PYTHON_WRONG_SHAPE = -1001
KH_PYTHON_WRONG_DTYPE = -1002
KH_PYTHON_WRONG_COUNT = -1003
KH_PYTHON_CALL_TIMED = 1

LOAD_FN = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_uint64)
CALL_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int32,
                           ctypes.c_void_p, ctypes.c_int32, ctypes.c_void_p, ctypes.c_uint64)
RELEASE_FN = ctypes.CFUNCTYPE(None, ctypes.c_int64)


class CallFailure(Exception):
    """A failure with a verdict of its own (wrong shape, dtype or output count)."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def write_message(buffer, size, text):
    """Copies text into kh's buffer; a long one keeps its end (a traceback's last line says what
    was raised), cut on a character boundary."""
    data = text.encode("utf-8", "replace")
    if len(data) > size - 1:
        data = data[len(data) - (size - 1):].decode("utf-8", "ignore").encode("utf-8")
    ctypes.memmove(buffer, data + b"\0", len(data) + 1)


class Callable:
    """One loaded function with its calling style and the definition's input/output names."""

    def __init__(self, fn, destination_passing, definition, label, reference=False):
        self.fn = fn
        self.destination_passing = destination_passing
        self.inputs = definition["inputs"]
        self.outputs = definition["outputs"]
        self.scalars = definition["scalar_inputs"]  # per input: shape null in the definition
        self.label = label
        self.reference = reference


def load_module(folder, entry_file, package, params):
    """Imports a candidate's entry file as a module of its own package (`package`, rooted at the
    candidate's folder), as FlashInfer-Bench imports a solution: relative imports reach its other
    files, and two candidates with files of the same name never share a module. KH_PARAMS holds
    its param values before its code runs."""
    root = importlib.util.module_from_spec(
        importlib.machinery.ModuleSpec(package, None, is_package=True))
    root.__path__ = [folder]
    sys.modules[package] = root
    name = package + "." + os.path.splitext(entry_file)[0].replace("/", ".")
    spec = importlib.util.find_spec(name)
    if spec is None:
        raise ImportError("cannot find %s in %s" % (entry_file, folder))
    module = importlib.util.module_from_spec(spec)
    module.KH_PARAMS = dict(params)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def load_reference(definition):
    """The definition's `reference` code, as FlashInfer-Bench builds it: its `run`, value-returning."""
    namespace = {"__name__": "kh_reference_" + definition["name"]}
    filename = "<reference of %s>" % definition["name"]
    source = definition["reference"]
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)  # tracebacks
    code = compile(source, filename, "exec")
    exec(code, namespace)
    if not callable(namespace.get("run")):
        raise RuntimeError("the reference of %s defines no function run" % definition["name"])
    return namespace["run"]


class Bridge:
    def __init__(self, backend, device):
        self.tensors = kh_tensors.TensorViews(backend, device)
        self.callables = {}
        self.next_handle = 1

    def load(self, request_json, error, error_size):
        try:
            request = json.loads(request_json.decode("utf-8"))
            definition = request["definition"]
            reference = request["kind"] == "reference"
            if reference:
                fn, dps = load_reference(definition), False
                label = "reference of " + definition["name"]
            else:
                manifest_path = request["manifest"]
                with open(manifest_path) as f:
                    manifest = json.load(f)
                package = "kh_candidate_%d" % self.next_handle
                module = load_module(os.path.dirname(manifest_path), manifest["entry_file"],
                                     package, manifest.get("params", {}))
                fn = getattr(module, manifest["function"], None)
                if not callable(fn):
                    raise RuntimeError("%s defines no function %s" %
                                       (manifest["entry_file"], manifest["function"]))
                dps = bool(manifest["destination_passing_style"])
                label = manifest["name"]
            handle = self.next_handle
            self.next_handle += 1
            self.callables[handle] = Callable(fn, dps, definition, label, reference)
            return handle
        except BaseException:  # noqa: BLE001 - everything becomes the load's message
            write_message(error, error_size, traceback.format_exc())
            return 0

    def release(self, handle):
        self.callables.pop(handle, None)

    def call(self, handle, tensors, count, stream, flags, error, error_size):
        try:
            target = self.callables[handle]
            n_in, n_out = len(target.inputs), len(target.outputs)
            if count != n_in + n_out:
                raise RuntimeError("%d tensors for %d inputs and %d outputs" % (count, n_in, n_out))
            timed = bool(flags & KH_PYTHON_CALL_TIMED)
            array = (kh_tensors.DLTensor * count).from_address(tensors)
            views = [self.tensors.view(array[i]) for i in range(count)]
            args = [self.tensors.argument(array[i], views[i], target.scalars[i])
                    for i in range(n_in)]
            outs = views[n_in:]
            # A reference computes with torch's numerics as they were when the worker started,
            # whatever a candidate's import changed (TF32, matmul precision, default dtype).
            with self.tensors.calling_on(stream, pristine_numerics=target.reference):
                if target.destination_passing:
                    target.fn(*args, *outs)
                else:
                    result = target.fn(*args)
                    if not timed:
                        self.store_results(target, result, outs)
            if not timed:
                self.tensors.synchronize()  # work on other streams too, as FlashInfer-Bench waits
            return KH_OK
        except CallFailure as failure:
            write_message(error, error_size, str(failure))
            return failure.code
        except BaseException:  # noqa: BLE001 - a Python exception is the candidate's failure
            write_message(error, error_size, traceback.format_exc())
            return KH_PYTHON_EXCEPTION

    def store_results(self, target, result, outs):
        """FlashInfer-Bench's normalisation: a 1-tuple is unwrapped, a single value is accepted
        for one output only, a tuple/list must have one item per output."""
        items = list(result) if isinstance(result, (tuple, list)) else [result]
        if len(items) != len(outs):
            raise CallFailure(KH_PYTHON_WRONG_COUNT,
                              "%s returned %d outputs; the definition has %d (%s)" %
                              (target.label, len(items), len(outs), ", ".join(target.outputs)))
        for name, value, out in zip(target.outputs, items, outs):
            problem = self.tensors.mismatch(value, out)
            if problem is not None:
                code = KH_PYTHON_WRONG_SHAPE if problem[0] == "shape" else KH_PYTHON_WRONG_DTYPE
                raise CallFailure(code, "output %s: %s" % (name, problem[1]))
            self.tensors.store(value, out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", required=True, choices=["cpu", "cuda"])
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--runtime", required=True, help="path of libkh_worker.so")
    args = parser.parse_args()

    # kh finds its headers and CUPTI from its home, the folder above this file's; numpy unpacked
    # by scripts/bootstrap.sh (for a python3 without one) is last on the path.
    home = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.environ.setdefault("KH_HOME", home)
    sys.path.append(os.path.join(home, ".deps", "python"))
    bridge = Bridge(args.backend, args.device)
    kh_tensors.share_cupti_with_torch()
    runtime = ctypes.CDLL(args.runtime)
    runtime.kh_worker_main.restype = ctypes.c_int
    runtime.kh_worker_main.argtypes = [ctypes.c_char_p, ctypes.c_int32, LOAD_FN, CALL_FN,
                                       RELEASE_FN]
    # The callbacks must outlive the loop: keep them in locals.
    load, call, release = LOAD_FN(bridge.load), CALL_FN(bridge.call), RELEASE_FN(bridge.release)
    sys.exit(runtime.kh_worker_main(args.backend.encode(), args.device, load, call, release))


if __name__ == "__main__":
    main()
