// Files: positional reads of a file opened read-only, and whole-file reads and atomic writes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shoal {

/// Bytes that can be read at any position: a file, or a buffer in memory. Implementations are
/// thread-safe for ReadAt.
class ReadableSource {
 public:
  virtual ~ReadableSource() = default;
  /// A name for messages: the path of a file.
  virtual const std::string& path() const = 0;
  virtual uint64_t size() const = 0;
  /// Reads exactly `length` bytes at `offset` into `out`. Throws InvalidError when the range
  /// lies past the end, IOError when the read fails.
  virtual void ReadAt(uint64_t offset, size_t length, uint8_t* out) const = 0;
  std::vector<uint8_t> ReadAt(uint64_t offset, size_t length) const;
};

/// Bytes in memory, named like a file for messages.
class MemorySource : public ReadableSource {
 public:
  MemorySource(std::string name, std::string bytes) : name_(std::move(name)), bytes_(std::move(bytes)) {}
  const std::string& path() const override { return name_; }
  uint64_t size() const override { return bytes_.size(); }
  void ReadAt(uint64_t offset, size_t length, uint8_t* out) const override;
  using ReadableSource::ReadAt;

 private:
  std::string name_;
  std::string bytes_;
};

/// A file opened read-only for positional reads. Thread-safe: ReadAt may be called from several
/// threads at once. Throws shoal::Error (kNotFound, kIO) on failure.
class RandomAccessFile : public ReadableSource {
 public:
  /// Opens `path`; throws NotFoundError if it does not exist, IOError on other failures.
  explicit RandomAccessFile(std::string path);
  ~RandomAccessFile();
  RandomAccessFile(const RandomAccessFile&) = delete;
  RandomAccessFile& operator=(const RandomAccessFile&) = delete;

  const std::string& path() const override { return path_; }
  /// Size in bytes when the file was opened.
  uint64_t size() const override { return size_; }
  void ReadAt(uint64_t offset, size_t length, uint8_t* out) const override;
  using ReadableSource::ReadAt;

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

/// Reads a whole file. Throws NotFoundError or IOError.
std::vector<uint8_t> ReadFile(const std::string& path);

/// Writes all of `data` to the open descriptor `fd`, retrying short writes and EINTR. `path`
/// names the file in errors. Throws IOError (via SystemError).
void WriteAll(int fd, std::string_view data, const std::string& path);

/// Writes `data` to `path` atomically: a temporary file beside it, fsync, rename, then fsync of
/// the directory. Readers see the old content or the new, never a part. Throws IOError.
void WriteFileAtomically(const std::string& path, std::string_view data);

}  // namespace shoal
