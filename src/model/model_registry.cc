#include "model/model_registry.h"

#include "model/arch/arch.h"

namespace pagoda {

void ArchRegistry::Register(std::string arch, ModelFactory factory) {
  factories_[std::move(arch)] = std::move(factory);
}

const ModelFactory* ArchRegistry::Find(std::string_view arch) const {
  auto it = factories_.find(arch);
  return it == factories_.end() ? nullptr : &it->second;
}

std::vector<std::string> ArchRegistry::Names() const {
  std::vector<std::string> names;
  for (const auto& [name, factory] : factories_) names.push_back(name);
  return names;
}

const ArchRegistry& ArchRegistry::Builtin() {
  static const ArchRegistry registry = [] {
    ArchRegistry r;
    RegisterLlama(r);
    RegisterQwen2(r);
    RegisterQwen3(r);
    RegisterQwen2Moe(r);
    RegisterQwen3Moe(r);
    RegisterDeepseek2(r);
    RegisterGlm4Moe(r);
    RegisterBert(r);
    return r;
  }();
  return registry;
}

}  // namespace pagoda
