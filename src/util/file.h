// Files: positional reads of a file opened read-only, and whole-file reads and atomic writes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace shoal {

/// Bytes of a source, valid while the view (or a copy of it) lives: a mapping of a file, a
/// pointer into memory, or a buffer they were read into.
class ByteView {
 public:
  ByteView() = default;
  ByteView(const uint8_t* data, size_t size, std::shared_ptr<const void> owner)
      : data_(data), size_(size), owner_(std::move(owner)) {}
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::shared_ptr<const void> owner_;
};

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
  /// The `length` bytes at `offset`, without a copy where the source allows it. The default
  /// reads them into a buffer. Throws as ReadAt does.
  virtual ByteView ViewAt(uint64_t offset, size_t length) const;
};

/// Bytes in memory, named like a file for messages.
class MemorySource : public ReadableSource {
 public:
  MemorySource(std::string name, std::string bytes) : name_(std::move(name)), bytes_(std::move(bytes)) {}
  const std::string& path() const override { return name_; }
  uint64_t size() const override { return bytes_.size(); }
  void ReadAt(uint64_t offset, size_t length, uint8_t* out) const override;
  using ReadableSource::ReadAt;
  /// Points into the source's own bytes.
  ByteView ViewAt(uint64_t offset, size_t length) const override;

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
  /// Ranges of at least kMapThreshold bytes are mapped (read-only, pre-faulted) rather than
  /// copied, and unmapped when the view goes; smaller ones are read. Data files are immutable,
  /// so a mapping is safe, except that truncating the file while a view of it lives would
  /// fault the process (SIGBUS); a file found shorter than when opened is an IOError.
  ByteView ViewAt(uint64_t offset, size_t length) const override;
  static constexpr size_t kMapThreshold = size_t{1} << 20;

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
