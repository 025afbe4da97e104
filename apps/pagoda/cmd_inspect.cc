// pagoda inspect M.gguf: metadata and tensor table.
#include <cinttypes>

#include "cli_util.h"
#include "commands.h"
#include "engine/speed_bench.h"
#include "gguf/gguf_file.h"

namespace pagoda::cli {

int CmdInspect(int argc, char** argv) {
  CLI::App app("Print a GGUF file's metadata and tensor table", "inspect");
  std::string path;
  size_t max_items = 8;
  bool no_tensors = false;
  app.add_option("model", path, "GGUF file")->required();
  app.add_option("--max-array", max_items, "array elements shown per key");
  app.add_flag("--no-tensors", no_tensors, "omit the tensor table");
  if (int rc = ParseArgs(app, argc, argv); rc >= 0) return rc;

  auto file = GgufFile::Open(path);
  if (!file.ok()) return Fail(file.status());
  const GgufFile& f = **file;
  std::printf("file: %s\n", f.path().c_str());
  std::printf("gguf version: %u, alignment: %" PRIu64 ", size: %" PRIu64 " bytes, data offset: %" PRIu64 "\n",
              f.version(), f.alignment(), f.file_size(), f.data_offset());
  std::printf("\nmetadata (%zu keys):\n", f.metadata().size());
  for (const auto& [key, value] : f.metadata().entries()) {
    std::string type = GgufTypeName(value.type());
    if (const GgufArray* a = value.AsArray()) type += std::string("<") + GgufTypeName(a->elem_type) + ">";
    std::printf("  %-48s %-14s %s\n", key.c_str(), type.c_str(), value.ToDisplayString(max_items).c_str());
  }
  if (no_tensors) return 0;
  std::printf("\ntensors (%zu):\n", f.tensors().size());
  std::printf("  %-40s %-6s %-26s %12s %14s\n", "name", "type", "shape (ne0, ne1, ...)", "offset", "bytes");
  uint64_t total = 0, params = 0;
  for (const auto& t : f.tensors()) {
    std::string shape;
    for (int d = 0; d < t.n_dims; ++d) shape += (d ? ", " : "") + std::to_string(t.ne[d]);
    std::printf("  %-40s %-6s %-26s %12" PRIu64 " %14" PRId64 "\n", t.name.c_str(), DTypeName(t.type),
                ("[" + shape + "]").c_str(), t.offset, t.nbytes);
    total += static_cast<uint64_t>(t.nbytes);
    params += static_cast<uint64_t>(t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3]);
  }
  std::printf("\ntotal: %" PRIu64 " parameters, %" PRIu64 " bytes of tensor data\n", params, total);
  const LinearWeights lw = CountLinearWeights(f);
  if (lw.active_params < lw.total_params * 0.99) {
    // Mixture of experts: what one token uses (expert_used_count of
    // expert_count experts, one embedding row).
    std::printf("active: %.0f parameters per token (%.1f %% of the total)\n", lw.active_params,
                100.0 * lw.active_params / lw.total_params);
  }
  return 0;
}

}  // namespace pagoda::cli
