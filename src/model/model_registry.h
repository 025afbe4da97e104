// ArchRegistry: architecture name (general.architecture) -> model factory.
// Each architecture lives in src/model/arch/<name>.cc and registers itself in
// Builtin() through its Register<Name>() function (arch/arch.h); an explicit
// list rather than static initialisers, which a static library would drop.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "model/model.h"

namespace pagoda {

using ModelFactory = std::function<Result<std::unique_ptr<Model>>(
    std::shared_ptr<const GgufFile> file, ThreadPool& pool, const ModelOptions& options)>;

class ArchRegistry {
 public:
  void Register(std::string arch, ModelFactory factory);
  // nullptr when unknown.
  const ModelFactory* Find(std::string_view arch) const;
  std::vector<std::string> Names() const;

  // The architectures built into this binary (immutable, built on first use).
  static const ArchRegistry& Builtin();

 private:
  std::map<std::string, ModelFactory, std::less<>> factories_;
};

}  // namespace pagoda
