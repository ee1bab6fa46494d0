#include "kh/gpu/cupti_tracer.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>

#include <cupti.h>

#include "kh/build/kh_home.h"
#include "kh/core/error.h"

namespace kh {
namespace {

constexpr std::size_t kBufferBytes = 8 << 20;
constexpr std::size_t kBufferAlignment = 8;

// The activity kinds the official timer enables.
constexpr CUpti_ActivityKind kTracedKinds[] = {
    CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
    CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET};

struct CuptiApi {
  decltype(&cuptiActivityEnable) enable;
  decltype(&cuptiActivityDisable) disable;
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks;
  decltype(&cuptiActivityFlushAll) flush_all;
  decltype(&cuptiActivityGetNextRecord) next_record;
  decltype(&cuptiGetTimestamp) get_timestamp;
  decltype(&cuptiGetResultString) result_string;
};

// CUPTI delivers completed buffers to process-wide callbacks; one tracer exists at a time.
std::mutex g_mutex;
TraceRecords* g_sink = nullptr;
const CuptiApi* g_api = nullptr;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = kBufferBytes;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kBufferAlignment, kBufferBytes));
  *max_records = 0;
}

// The fields every kind of GPU activity record has.
template <class Record>
GpuActivity activity_of(GpuActivity::Kind kind, const Record& r) {
  GpuActivity g;
  g.kind = kind;
  g.correlation_id = r.correlationId;
  g.stream_id = r.streamId;
  g.start_ns = r.start;
  g.end_ns = r.end;
  return g;
}

void copy_record(const CUpti_Activity* r, TraceRecords& out) {
  switch (r->kind) {
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(r);
      out.api.push_back({a->correlationId, a->start, a->end});
      break;
    }
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL: {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(r);
      GpuActivity g = activity_of(GpuActivity::Kind::kKernel, *k);
      g.name = k->name ? k->name : "";
      out.activities.push_back(std::move(g));
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(r);
      GpuActivity g = activity_of(GpuActivity::Kind::kMemcpy, *m);
      g.copy_kind = m->copyKind;
      g.bytes = m->bytes;
      out.activities.push_back(std::move(g));
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(r);
      GpuActivity g = activity_of(GpuActivity::Kind::kMemset, *m);
      g.bytes = m->bytes;
      g.value = m->value;
      out.activities.push_back(std::move(g));
      break;
    }
    default:
      break;
  }
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  {
    std::lock_guard lock(g_mutex);
    if (g_sink && g_api) {
      CUpti_Activity* record = nullptr;
      while (g_api->next_record(buffer, valid, &record) == CUPTI_SUCCESS)
        copy_record(record, *g_sink);
    }
  }
  std::free(buffer);
}

std::vector<std::string> library_candidates() {
  std::vector<std::string> paths;
  if (const char* env = std::getenv("KH_CUPTI_LIBRARY")) paths.emplace_back(env);
  try {
    paths.push_back((kh_home() / ".deps" / "cupti" / "lib" / "libcupti.so.13").string());
  } catch (const Error&) {
  }
  paths.emplace_back("libcupti.so.13");
  paths.emplace_back("/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13");
  paths.emplace_back("/usr/local/cuda/lib64/libcupti.so.13");
  return paths;
}

}  // namespace

struct CuptiTracer::Impl {
  void* handle = nullptr;
  std::string path;
  CuptiApi api{};
  TraceRecords records;

  void check(CUptiResult r, const char* what) const {
    if (r == CUPTI_SUCCESS) return;
    const char* text = nullptr;
    if (api.result_string) api.result_string(r, &text);
    fail("CUPTI: {} failed: {}", what, text ? text : std::to_string(static_cast<int>(r)));
  }
};

CuptiTracer::CuptiTracer() : impl_(std::make_unique<Impl>()) {
  std::string tried;
  for (const auto& path : library_candidates()) {
    impl_->handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (impl_->handle) {
      impl_->path = path;
      break;
    }
    tried += (tried.empty() ? "" : ", ") + path;
  }
  if (!impl_->handle)
    fail(
        "CUPTI: cannot load libcupti.so.13 (tried {}); set KH_CUPTI_LIBRARY or run "
        "scripts/bootstrap.sh",
        tried);
  auto symbol = [&](const char* name) {
    void* p = dlsym(impl_->handle, name);
    if (!p) fail("CUPTI: {} has no symbol {}", impl_->path, name);
    return p;
  };
  CuptiApi& a = impl_->api;
  a.enable = reinterpret_cast<decltype(a.enable)>(symbol("cuptiActivityEnable"));
  a.disable = reinterpret_cast<decltype(a.disable)>(symbol("cuptiActivityDisable"));
  a.register_callbacks =
      reinterpret_cast<decltype(a.register_callbacks)>(symbol("cuptiActivityRegisterCallbacks"));
  a.flush_all = reinterpret_cast<decltype(a.flush_all)>(symbol("cuptiActivityFlushAll"));
  a.next_record = reinterpret_cast<decltype(a.next_record)>(symbol("cuptiActivityGetNextRecord"));
  a.get_timestamp = reinterpret_cast<decltype(a.get_timestamp)>(symbol("cuptiGetTimestamp"));
  a.result_string = reinterpret_cast<decltype(a.result_string)>(symbol("cuptiGetResultString"));
  {
    std::lock_guard lock(g_mutex);
    if (g_api) fail("CUPTI: only one tracer per process");
    g_api = &impl_->api;
  }
  impl_->check(a.register_callbacks(buffer_requested, buffer_completed), "registering buffers");
}

CuptiTracer::~CuptiTracer() {
  for (CUpti_ActivityKind kind : kTracedKinds) impl_->api.disable(kind);
  impl_->api.flush_all(0);
  std::lock_guard lock(g_mutex);
  g_sink = nullptr;
  g_api = nullptr;
  // libcupti stays loaded: unloading it while the driver holds its callbacks is unsafe.
}

std::uint64_t CuptiTracer::timestamp() const {
  std::uint64_t t = 0;
  impl_->check(impl_->api.get_timestamp(&t), "cuptiGetTimestamp");
  return t;
}

void CuptiTracer::start() {
  {
    std::lock_guard lock(g_mutex);
    impl_->records = {};
    g_sink = &impl_->records;
  }
  for (CUpti_ActivityKind kind : kTracedKinds) impl_->check(impl_->api.enable(kind), "enable");
}

TraceRecords CuptiTracer::stop() {
  for (CUpti_ActivityKind kind : kTracedKinds) impl_->check(impl_->api.disable(kind), "disable");
  impl_->check(impl_->api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "flush");
  std::lock_guard lock(g_mutex);
  g_sink = nullptr;
  return std::move(impl_->records);
}

const std::string& CuptiTracer::library_path() const {
  return impl_->path;
}

}  // namespace kh
