// Files: positional reads of a file opened read-only, and whole-file reads and atomic writes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shoal {

/// A file opened read-only for positional reads. Thread-safe: ReadAt may be called from several
/// threads at once. Throws shoal::Error (kNotFound, kIO) on failure.
class RandomAccessFile {
 public:
  /// Opens `path`; throws NotFoundError if it does not exist, IOError on other failures.
  explicit RandomAccessFile(std::string path);
  ~RandomAccessFile();
  RandomAccessFile(const RandomAccessFile&) = delete;
  RandomAccessFile& operator=(const RandomAccessFile&) = delete;

  const std::string& path() const { return path_; }
  /// Size in bytes when the file was opened.
  uint64_t size() const { return size_; }

  /// Reads exactly `length` bytes at `offset` into `out`. Throws InvalidError when the range
  /// lies past the end of the file, IOError when the read fails.
  void ReadAt(uint64_t offset, size_t length, uint8_t* out) const;
  std::vector<uint8_t> ReadAt(uint64_t offset, size_t length) const;

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

/// Reads a whole file. Throws NotFoundError or IOError.
std::vector<uint8_t> ReadFile(const std::string& path);

/// Writes `data` to `path` atomically: a temporary file beside it, fsync, rename, then fsync of
/// the directory. Readers see the old content or the new, never a part. Throws IOError.
void WriteFileAtomically(const std::string& path, std::string_view data);

}  // namespace shoal
