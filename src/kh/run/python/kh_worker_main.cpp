// libkh_worker.so's one export (include/kh/python_worker.h): kh's worker loop for the Python
// worker. Built only into that library, so `kh` itself exports nothing.
#include <cstdio>
#include <exception>

#include "kh/python_worker.h"
#include "kh/run/worker_protocol.h"

KH_EXPORT int kh_worker_main(const char* backend, int32_t device, kh_python_load_fn load,
                             kh_python_call_fn call, kh_python_release_fn release) {
  try {
    return kh::run_worker(backend, device, kh::PythonHooks{load, call, release});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kh python worker: %s\n", e.what());
    return 1;
  } catch (...) {  // nothing may unwind into the ctypes frame
    std::fprintf(stderr, "kh python worker: unknown exception\n");
    return 1;
  }
}
