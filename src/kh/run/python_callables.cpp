#include "kh/run/python_callables.h"

#include "kh/core/error.h"
#include "kh/core/json_io.h"

namespace kh {
namespace {

// A traceback longer than this is cut by the Python side.
constexpr std::size_t kPythonMessageBytes = 64 * 1024;

int g_timed_scopes = 0;  // the worker is single-threaded

Json definition_summary(const Definition& def) {
  Json inputs = Json::array(), scalars = Json::array(), outputs = Json::array();
  for (const auto& d : def.inputs) {
    inputs.push_back(d.name);
    scalars.push_back(d.is_scalar());
  }
  for (const auto& d : def.outputs) outputs.push_back(d.name);
  return {{"name", def.name},      {"inputs", inputs},        {"scalar_inputs", scalars},
          {"outputs", outputs},    {"reference", def.reference}};
}

std::unique_ptr<CandidateLibrary> load(const PythonHooks& hooks, const Json& request,
                                       const std::string& name) {
  if (!hooks.present())
    fail("{}: Python candidates and definition references run in the Python worker "
         "(python/kh_worker.py), not in `kh worker`",
         name);
  std::string error(kPythonMessageBytes, '\0');
  const std::int64_t handle = hooks.load(request.dump().c_str(), error.data(), error.size());
  if (handle <= 0) fail("{}: {}", name, error.c_str());
  auto message = std::make_shared<std::string>();
  return std::make_unique<CandidateLibrary>(
      name,
      [call = hooks.call, handle, message](const DLTensor* tensors, std::int32_t count,
                                           void* stream, void*, std::uint64_t) {
        static std::string buffer(kPythonMessageBytes, '\0');  // one worker thread
        buffer[0] = '\0';
        const int rc = call(handle, tensors, count, stream,
                            g_timed_scopes > 0 ? KH_PYTHON_CALL_TIMED : 0, buffer.data(),
                            buffer.size());
        *message = rc == KH_OK ? "" : buffer.c_str();
        return rc;
      },
      [message] { return *message; }, [release = hooks.release, handle] { release(handle); });
}

}  // namespace

std::unique_ptr<CandidateLibrary> load_python_candidate(const PythonHooks& hooks,
                                                        const std::string& manifest,
                                                        const Definition& def) {
  return load(hooks,
              {{"kind", "candidate"}, {"manifest", manifest}, {"definition", definition_summary(def)}},
              manifest);
}

std::unique_ptr<CandidateLibrary> load_python_reference(const PythonHooks& hooks,
                                                        const Definition& def) {
  if (def.reference.empty()) fail("definition {} has no reference code", def.name);
  return load(hooks, {{"kind", "reference"}, {"definition", definition_summary(def)}},
              def.name + " reference");
}

PythonTimedScope::PythonTimedScope() { ++g_timed_scopes; }
PythonTimedScope::~PythonTimedScope() { --g_timed_scopes; }

}  // namespace kh
