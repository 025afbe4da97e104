#include "batch/file_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace pagoda::batch {
namespace {

namespace fs = std::filesystem;

Status Errno(const std::string& what, const std::string& path) {
  return IoError(what + " " + path + ": " + std::strerror(errno));
}

// Ids are generated here ("file-" + hex); anything else never names a path.
bool SafeId(std::string_view id) {
  if (id.empty() || id.size() > 64) return false;
  for (char c : id) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_')) return false;
  }
  return true;
}

}  // namespace

Result<FileStore> FileStore::Open(const std::string& data_dir) {
  if (data_dir.empty()) return InvalidArgument("batch data directory: empty path");
  std::error_code ec;
  const fs::path dir = fs::absolute(fs::path(data_dir) / "files", ec);
  if (ec) return IoError("batch data directory " + data_dir + ": " + ec.message());
  fs::create_directories(dir, ec);
  if (ec) return IoError("batch data directory " + dir.string() + ": " + ec.message());
  // Writable? (a read-only directory is an error at start, not at the first upload)
  const std::string probe = (dir / ".probe").string();
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Errno("batch data directory is not writable:", dir.string());
  ::close(fd);
  ::unlink(probe.c_str());
  return FileStore(dir.string());
}

std::string FileStore::PathOf(std::string_view id) const { return dir_ + "/" + std::string(id); }

Status FileStore::Put(std::string_view id, std::string_view bytes) const {
  if (!SafeId(id)) return InvalidArgument("bad file id");
  const std::string path = PathOf(id);
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Errno("cannot create", tmp);
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      Status st = Errno("cannot write", tmp);
      ::close(fd);
      ::unlink(tmp.c_str());
      return st;
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    Status st = Errno("cannot sync", tmp);
    ::close(fd);
    ::unlink(tmp.c_str());
    return st;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    Status st = Errno("cannot rename", tmp);
    ::unlink(tmp.c_str());
    return st;
  }
  // The rename itself must survive a crash: sync the directory.
  const int dfd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
  return Status::Ok();
}

Result<int64_t> FileStore::Append(std::string_view id, std::string_view bytes) const {
  if (!SafeId(id)) return InvalidArgument("bad file id");
  const std::string path = PathOf(id);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return Errno("cannot open", path);
  const off_t start = ::lseek(fd, 0, SEEK_END);
  size_t done = 0;
  Status st;
  while (st.ok() && done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno != EINTR) st = Errno("cannot write", path);
    if (n > 0) done += static_cast<size_t>(n);
  }
  if (st.ok() && ::fsync(fd) != 0) st = Errno("cannot sync", path);
  ::close(fd);
  if (!st.ok()) return st;
  return static_cast<int64_t>(start);
}

Result<std::string> FileStore::Get(std::string_view id) const {
  if (!SafeId(id)) return NotFound("no such file");
  const std::string path = PathOf(id);
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("the contents of " + std::string(id) + " are gone from " + dir_);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return IoError("cannot read " + path);
  return std::move(ss).str();
}

Status FileStore::Remove(std::string_view id) const {
  if (!SafeId(id)) return Status::Ok();
  const std::string path = PathOf(id);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return Errno("cannot remove", path);
  return Status::Ok();
}

}  // namespace pagoda::batch
