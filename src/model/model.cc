#include "model/model.h"

#include "model/model_registry.h"

namespace pagoda {

Result<std::unique_ptr<Model>> LoadModel(std::shared_ptr<const GgufFile> file, ThreadPool& pool,
                                         const ModelOptions& options) {
  if (options.max_batch_tokens < 1) return InvalidArgument("max_batch_tokens must be >= 1");
  auto arch = file->metadata().GetString("general.architecture");
  if (!arch.ok()) return arch.status().WithContext(file->path());
  const ArchRegistry& registry = ArchRegistry::Builtin();
  const ModelFactory* factory = registry.Find(*arch);
  if (factory == nullptr) {
    std::string known;
    for (const std::string& n : registry.Names()) known += (known.empty() ? "" : ", ") + n;
    return Unimplemented(file->path() + ": unknown architecture '" + *arch + "' (supported: " +
                         known + ")");
  }
  return (*factory)(std::move(file), pool, options);
}

Result<std::unique_ptr<Model>> LoadModel(const std::string& path, ThreadPool& pool,
                                         const ModelOptions& options) {
  PAGODA_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, GgufFile::Open(path));
  return LoadModel(std::shared_ptr<const GgufFile>(std::move(file)), pool, options);
}

}  // namespace pagoda
