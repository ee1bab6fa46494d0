#include "kh/gen/input_generator.h"

#include <fmt/format.h>

#include "kh/core/error.h"
#include "kh/core/safetensors.h"
#include "kh/gen/draw.h"

namespace kh {

InputGenerator::InputGenerator(const Definition& def, Workload workload,
                               std::filesystem::path dataset_root, GeneratorOptions options)
    : def_(def),
      workload_(std::move(workload)),
      dataset_root_(std::move(dataset_root)),
      options_(std::move(options)),
      axes_(resolve_axes(def_, workload_, "workload " + workload_.uuid)),
      op_(make_operator_inputs(def_)) {
  if (!options_.variant.empty()) {
    std::string known;
    for (const auto& v : variants(def_)) {
      if (v.name == options_.variant) return;
      known += (known.empty() ? "" : ", ") + v.name;
    }
    fail("definition {} has no input variant '{}' (variants: {})", def_.name, options_.variant,
         known.empty() ? "none" : known);
  }
}

InputGenerator::~InputGenerator() = default;

std::vector<VariantInfo> InputGenerator::variants(const Definition& def) {
  auto op = make_operator_inputs(def);
  return op ? op->variants() : std::vector<VariantInfo>{};
}

std::string InputGenerator::variant_does_not_apply(const Definition& def,
                                                   const std::string& variant,
                                                   const Workload& workload) {
  if (variant.empty()) return "";
  for (const auto& v : variants(def)) {
    if (v.name != variant || v.needs_axis.empty()) continue;
    const AxisValues axes = resolve_axes(def, workload, "workload " + workload.uuid);
    const auto it = axes.find(v.needs_axis);
    const std::int64_t have = it == axes.end() ? 0 : it->second;
    if (have >= v.needs_at_least) return "";
    return fmt::format("variant {} needs {} >= {}; the workload has {}", variant, v.needs_axis,
                       v.needs_at_least, have);
  }
  return "";
}

double InputGenerator::value_scale() const {
  if (!op_ || options_.variant.empty()) return 1.0;
  for (const auto& v : op_->variants())
    if (v.name == options_.variant) return v.value_scale;
  return 1.0;
}

bool InputGenerator::is_structural(const std::string& input) const {
  return op_ && op_->is_structural(input);
}

GenContext InputGenerator::context(std::int64_t trial, const std::string& input) const {
  return GenContext{def_,
                    workload_,
                    axes_,
                    options_.seed,
                    is_structural(input) ? kStructuralTrial : trial,
                    options_.variant};
}

HostTensor InputGenerator::load_safetensors_input(const TensorDecl& decl,
                                                  const WorkloadInput& source) const {
  const std::filesystem::path p(source.path);
  SafetensorsReader reader(p.is_absolute() ? p : dataset_root_ / p);
  HostTensor t = reader.load(source.tensor_key);
  const Shape want = def_.shape_of(decl, axes_);
  if (t.shape() != want || t.dtype() != decl.dtype)
    fail("{}: tensor '{}' for input '{}' of workload {} is {} {}, the definition needs {} {}",
         reader.path().string(), source.tensor_key, decl.name, workload_.uuid,
         dtype_name(t.dtype()), shape_string(t.shape()), dtype_name(decl.dtype),
         shape_string(want));
  return t;
}

void InputGenerator::fill_range(const std::string& input, std::int64_t trial, HostTensor& tensor,
                                std::int64_t begin, std::int64_t end) const {
  const GenContext ctx = context(trial, input);
  if (auto r = recipe_of(ctx, input)) {
    draw(*r, tensor, begin, end);
    return;
  }
  op_->fill(ctx, input, tensor, begin, end);
}

std::optional<DrawRecipe> InputGenerator::recipe_of(const GenContext& ctx,
                                                    const std::string& input) const {
  if (op_) return op_->recipe(ctx, input);
  return DrawRecipe{DrawKind::kOfficial, ctx.stream(input)};
}

std::optional<DrawRecipe> InputGenerator::recipe(const std::string& input,
                                                 std::int64_t trial) const {
  const WorkloadInput* source = workload_.find_input(input);
  if (source) return std::nullopt;  // a safetensors tensor or a scalar given by the workload
  for (const auto& decl : def_.inputs) {
    if (decl.name != input) continue;
    const GenContext ctx = context(trial, input);
    if (decl.is_scalar() || (decl.optional && op_ && !op_->is_present(ctx, input)))
      return std::nullopt;
    return recipe_of(ctx, input);
  }
  fail("definition {} has no input '{}'", def_.name, input);
}

InputSet InputGenerator::generate(std::int64_t trial, const std::set<std::string>& deferred) const {
  InputSet set;
  for (const auto& decl : def_.inputs) {
    const WorkloadInput* source = workload_.find_input(decl.name);
    const Shape shape = def_.shape_of(decl, axes_);
    if (source && source->kind == WorkloadInput::Kind::kSafetensors) {
      set.add(decl.name, load_safetensors_input(decl, *source));
      continue;
    }
    HostTensor t(decl.dtype, shape);
    if (source && source->kind == WorkloadInput::Kind::kScalar) {
      t.set(0, source->scalar_value());
      set.add(decl.name, std::move(t));
      continue;
    }
    const GenContext ctx = context(trial, decl.name);
    if (decl.optional && op_ && !op_->is_present(ctx, decl.name)) {
      set.add(decl.name, HostTensor(decl.dtype, {0}), false);
      continue;
    }
    if (decl.is_scalar() && op_) {
      if (auto v = op_->default_scalar(decl.name)) {
        t.set(0, *v);
        set.add(decl.name, std::move(t));
        continue;
      }
    }
    if (!deferred.count(decl.name)) fill_range(decl.name, trial, t, 0, t.numel());
    set.add(decl.name, std::move(t));
  }
  return set;
}

}  // namespace kh
