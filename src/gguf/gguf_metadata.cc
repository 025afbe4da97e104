#include "gguf/gguf_metadata.h"

#include <cmath>

namespace pagoda {
namespace {

std::string Quoted(std::string_view key) { return "'" + std::string(key) + "'"; }

Status WrongType(std::string_view key, const char* want, const GgufValue& v) {
  return InvalidArgument("metadata key " + Quoted(key) + " has type " + GgufTypeName(v.type()) +
                         ", expected " + want);
}

}  // namespace

void GgufMetadata::Set(std::string key, GgufValue value) {
  auto it = index_.find(key);
  if (it != index_.end()) {
    entries_[it->second].second = std::move(value);
    return;
  }
  index_.emplace(key, entries_.size());
  entries_.emplace_back(std::move(key), std::move(value));
}

bool GgufMetadata::Erase(std::string_view key) {
  auto it = index_.find(std::string(key));
  if (it == index_.end()) return false;
  entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(it->second));
  index_.clear();
  for (size_t i = 0; i < entries_.size(); ++i) index_.emplace(entries_[i].first, i);
  return true;
}

const GgufValue* GgufMetadata::Find(std::string_view key) const {
  auto it = index_.find(std::string(key));
  return it == index_.end() ? nullptr : &entries_[it->second].second;
}

Result<std::string> GgufMetadata::GetString(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (!v) return NotFound("missing metadata key " + Quoted(key));
  if (!v->AsString()) return WrongType(key, "string", *v);
  return *v->AsString();
}

Result<int64_t> GgufMetadata::GetInt(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (!v) return NotFound("missing metadata key " + Quoted(key));
  int64_t out;
  if (!v->AsInt(&out)) return WrongType(key, "integer", *v);
  return out;
}

Result<double> GgufMetadata::GetFloat(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (!v) return NotFound("missing metadata key " + Quoted(key));
  double out;
  if (!v->AsDouble(&out)) return WrongType(key, "number", *v);
  if (!std::isfinite(out)) return InvalidArgument("metadata key " + Quoted(key) + " is not finite");
  return out;
}

Result<bool> GgufMetadata::GetBool(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (!v) return NotFound("missing metadata key " + Quoted(key));
  if (!v->AsBool()) return WrongType(key, "bool", *v);
  return *v->AsBool();
}

Result<std::vector<std::string>> GgufMetadata::GetStringArray(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (!v) return NotFound("missing metadata key " + Quoted(key));
  const GgufArray* a = v->AsArray();
  if (!a || a->elem_type != GgufType::kString) return WrongType(key, "array of string", *v);
  std::vector<std::string> out;
  out.reserve(a->items.size());
  for (const auto& item : a->items) out.push_back(*item.AsString());
  return out;
}

Result<std::vector<float>> GgufMetadata::GetFloatArray(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (!v) return NotFound("missing metadata key " + Quoted(key));
  const GgufArray* a = v->AsArray();
  if (!a) return WrongType(key, "array of numbers", *v);
  std::vector<float> out;
  out.reserve(a->items.size());
  for (const auto& item : a->items) {
    double d;
    if (!item.AsDouble(&d)) return WrongType(key, "array of numbers", *v);
    out.push_back(static_cast<float>(d));
  }
  return out;
}

Result<std::vector<int64_t>> GgufMetadata::GetIntArray(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (!v) return NotFound("missing metadata key " + Quoted(key));
  const GgufArray* a = v->AsArray();
  if (!a) return WrongType(key, "array of integers", *v);
  std::vector<int64_t> out;
  out.reserve(a->items.size());
  for (const auto& item : a->items) {
    int64_t i;
    if (!item.AsInt(&i)) return WrongType(key, "array of integers", *v);
    out.push_back(i);
  }
  return out;
}

Result<int64_t> GgufMetadata::GetIntOr(std::string_view key, int64_t dflt) const {
  if (!Has(key)) return dflt;
  return GetInt(key);
}
Result<double> GgufMetadata::GetFloatOr(std::string_view key, double dflt) const {
  if (!Has(key)) return dflt;
  return GetFloat(key);
}
Result<bool> GgufMetadata::GetBoolOr(std::string_view key, bool dflt) const {
  if (!Has(key)) return dflt;
  return GetBool(key);
}
Result<std::string> GgufMetadata::GetStringOr(std::string_view key, std::string dflt) const {
  if (!Has(key)) return dflt;
  return GetString(key);
}

}  // namespace pagoda
