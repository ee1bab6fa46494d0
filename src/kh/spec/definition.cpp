#include "kh/spec/definition.h"

#include <set>

#include "kh/core/error.h"

namespace kh {
namespace {

TensorDecl parse_tensor(const JsonCursor& c, const std::string& name) {
  c.expect_object();
  TensorDecl t;
  t.name = name;
  if (name.empty()) c.fail_here("tensor name must not be empty");
  const JsonCursor shape = c.at("shape");
  if (!shape.json().is_null()) {
    shape.expect_array();
    std::vector<std::string> dims;
    for (std::size_t i = 0; i < shape.size(); ++i) dims.push_back(shape.at(i).as_string());
    t.shape = std::move(dims);
  }
  const JsonCursor dtype = c.at("dtype");
  const std::string dt = dtype.as_string();
  const auto parsed = dtype_from_name(dt);
  if (!parsed) {
    std::string known;
    for (DType d : kAllDTypes) known += (known.empty() ? "" : ", ") + std::string(dtype_name(d));
    dtype.fail_here("unknown dtype \"" + dt + "\" (known: " + known + ")");
  }
  t.dtype = *parsed;
  if (auto d = c.find("description")) t.description = d->as_string();
  if (auto o = c.find("optional")) t.optional = o->as_bool();
  return t;
}

Json tensor_json(const TensorDecl& t) {
  Json j = Json::object();
  j["shape"] = t.shape ? Json(*t.shape) : Json(nullptr);
  j["dtype"] = dtype_name(t.dtype);
  if (!t.description.empty()) j["description"] = t.description;
  if (t.optional) j["optional"] = true;
  return j;
}

const TensorDecl* find_tensor(const std::vector<TensorDecl>& list, const std::string& name) {
  for (const auto& t : list)
    if (t.name == name) return &t;
  return nullptr;
}

bool defines_top_level_run(const std::string& source) {
  // The reference must define `def run(` at column 0 (decorators above it are fine).
  return source.rfind("def run(", 0) == 0 || source.find("\ndef run(") != std::string::npos;
}

}  // namespace

const AxisDecl* Definition::find_axis(const std::string& axis) const {
  for (const auto& a : axes)
    if (a.name == axis) return &a;
  return nullptr;
}

const TensorDecl* Definition::find_input(const std::string& input) const {
  return find_tensor(inputs, input);
}

const TensorDecl* Definition::find_output(const std::string& output) const {
  return find_tensor(outputs, output);
}

std::size_t Definition::input_index(const std::string& input) const {
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].name == input) return i;
  fail("definition {}: no input named '{}'", name, input);
}

Shape Definition::shape_of(const TensorDecl& tensor, const AxisValues& axis_values) const {
  Shape shape;
  if (!tensor.shape) return shape;
  for (const auto& axis : *tensor.shape) {
    auto it = axis_values.find(axis);
    if (it == axis_values.end())
      fail("definition {}: tensor '{}' uses axis '{}' which has no value", name, tensor.name, axis);
    shape.push_back(it->second);
  }
  return shape;
}

Definition Definition::from_json(const JsonCursor& c) {
  c.expect_object();
  Definition d;
  d.name = c.at("name").as_string();
  if (d.name.empty()) c.at("name").fail_here("must not be empty");
  d.op_type = c.at("op_type").as_string();
  if (d.op_type.empty()) c.at("op_type").fail_here("must not be empty");
  if (auto x = c.find("description")) d.description = x->as_string();
  if (auto x = c.find("tags")) {
    x->expect_array();
    for (std::size_t i = 0; i < x->size(); ++i) d.tags.push_back(x->at(i).as_string());
  }
  const JsonCursor axes = c.at("axes");
  axes.expect_object();
  for (const auto& name : axes.keys()) {
    const JsonCursor a = axes.at(name);
    a.expect_object();
    AxisDecl axis;
    axis.name = name;
    const std::string type = a.at("type").as_string();
    if (type == "const") {
      axis.is_const = true;
      axis.value = a.at("value").as_int();
      if (axis.value < 0) a.at("value").fail_here("a const axis value must be >= 0");
    } else if (type != "var") {
      a.at("type").fail_here("expected \"const\" or \"var\", got \"" + type + "\"");
    }
    if (auto x = a.find("description")) axis.description = x->as_string();
    d.axes.push_back(axis);
  }
  if (auto x = c.find("constraints")) {
    x->expect_array();
    for (std::size_t i = 0; i < x->size(); ++i) d.constraints.push_back(x->at(i).as_string());
  }
  for (const char* section : {"inputs", "outputs"}) {
    const JsonCursor s = c.at(section);
    s.expect_object();
    auto& list = std::string(section) == "inputs" ? d.inputs : d.outputs;
    for (const auto& name : s.keys()) list.push_back(parse_tensor(s.at(name), name));
  }
  d.reference = c.at("reference").as_string();
  if (!defines_top_level_run(d.reference))
    c.at("reference").fail_here("the reference must define a top-level function `run`");

  std::set<std::string> input_names;
  for (const auto& t : d.inputs) input_names.insert(t.name);
  for (const auto& t : d.outputs)
    if (input_names.count(t.name))
      c.at("outputs").at(t.name).fail_here("name is used by an input too");
  for (const char* section : {"inputs", "outputs"}) {
    const auto& list = std::string(section) == "inputs" ? d.inputs : d.outputs;
    for (const auto& t : list) {
      if (!t.shape) continue;
      for (std::size_t i = 0; i < t.shape->size(); ++i)
        if (!d.find_axis((*t.shape)[i]))
          c.at(section).at(t.name).at("shape").at(i).fail_here("undeclared axis \"" +
                                                               (*t.shape)[i] + "\"");
    }
  }
  static const std::set<std::string> kKnown = {"name",   "op_type", "description",
                                               "tags",   "axes",    "constraints",
                                               "inputs", "outputs", "reference"};
  for (auto it = c.json().begin(); it != c.json().end(); ++it)
    if (!kKnown.count(it.key())) d.extra[it.key()] = it.value();
  return d;
}

Json Definition::to_json() const {
  Json j = Json::object();
  j["name"] = name;
  if (!description.empty()) j["description"] = description;
  j["op_type"] = op_type;
  j["tags"] = tags;
  Json ax = Json::object();
  for (const auto& a : axes) {
    Json one = Json::object();
    one["type"] = a.is_const ? "const" : "var";
    if (a.is_const) one["value"] = a.value;
    if (!a.description.empty()) one["description"] = a.description;
    ax[a.name] = one;
  }
  j["axes"] = ax;
  if (!constraints.empty()) j["constraints"] = constraints;
  Json in = Json::object(), out = Json::object();
  for (const auto& t : inputs) in[t.name] = tensor_json(t);
  for (const auto& t : outputs) out[t.name] = tensor_json(t);
  j["inputs"] = in;
  j["outputs"] = out;
  j["reference"] = reference;
  for (auto it = extra.begin(); it != extra.end(); ++it) j[it.key()] = it.value();
  return j;
}

Definition load_definition(const std::filesystem::path& path) {
  const Json doc = read_json_file(path);
  return Definition::from_json(JsonCursor(doc, path.string()));
}

void save_definition(const Definition& def, const std::filesystem::path& path) {
  write_text_file_atomic(path, def.to_json().dump(2) + "\n");
}

}  // namespace kh
