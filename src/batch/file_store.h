// FileStore: the bytes of uploaded and generated files, one file per id in
// `<data dir>/files/`, written to a temporary name, synced and renamed, so a
// crash leaves either the whole file or none. Metadata lives in the batch
// store (batch_store.h); this only holds bytes. Thread-safe (no shared state
// beyond the directory).
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace pagoda::batch {

class FileStore {
 public:
  // Creates `<dir>/files` when absent; IoError naming the path otherwise.
  static Result<FileStore> Open(const std::string& data_dir);

  Status Put(std::string_view id, std::string_view bytes) const;
  // Appends and syncs; returns the offset the bytes start at. A crash may
  // leave a partial tail, which no committed offset points into.
  Result<int64_t> Append(std::string_view id, std::string_view bytes) const;
  Result<std::string> Get(std::string_view id) const;
  // Removes the bytes; OK when they are already gone.
  Status Remove(std::string_view id) const;
  const std::string& dir() const { return dir_; }

 private:
  explicit FileStore(std::string dir) : dir_(std::move(dir)) {}
  std::string PathOf(std::string_view id) const;
  std::string dir_;
};

}  // namespace pagoda::batch
