#include "util/file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>

#include "util/error.h"

namespace shoal {

RandomAccessFile::RandomAccessFile(std::string path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw SystemError("cannot open", path_, errno);
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    int err = errno;
    ::close(fd_);
    throw SystemError("cannot stat", path_, err);
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd_);
    throw InvalidError("'" + path_ + "' is a directory, expected a file");
  }
  size_ = static_cast<uint64_t>(st.st_size);
}

RandomAccessFile::~RandomAccessFile() {
  if (fd_ >= 0) ::close(fd_);
}

namespace {
void CheckRange(uint64_t offset, size_t length, uint64_t size, const std::string& path) {
  if (offset > size || length > size - offset) {
    throw InvalidError("read of " + std::to_string(length) + " bytes at offset " +
                       std::to_string(offset) + " runs past the end of '" + path + "' (" +
                       std::to_string(size) + " bytes)");
  }
}
}  // namespace

std::vector<uint8_t> ReadableSource::ReadAt(uint64_t offset, size_t length) const {
  CheckRange(offset, length, size(), path());
  std::vector<uint8_t> out(length);
  ReadAt(offset, length, out.data());
  return out;
}

ByteView ReadableSource::ViewAt(uint64_t offset, size_t length) const {
  CheckRange(offset, length, size(), path());
  std::shared_ptr<uint8_t[]> buffer(new uint8_t[length > 0 ? length : 1]);
  ReadAt(offset, length, buffer.get());
  const uint8_t* data = buffer.get();
  return ByteView(data, length, std::move(buffer));
}

ByteView MemorySource::ViewAt(uint64_t offset, size_t length) const {
  CheckRange(offset, length, bytes_.size(), name_);
  return ByteView(reinterpret_cast<const uint8_t*>(bytes_.data()) + offset, length, nullptr);
}

ByteView RandomAccessFile::ViewAt(uint64_t offset, size_t length) const {
  if (length < kMapThreshold) return ReadableSource::ViewAt(offset, length);
  CheckRange(offset, length, size_, path_);
  // A mapping past the file's current end would fault on access, so check it first.
  struct stat st {};
  if (::fstat(fd_, &st) != 0) throw SystemError("cannot stat", path_, errno);
  if (static_cast<uint64_t>(st.st_size) < offset + length) {
    throw IOError("'" + path_ + "' is now " + std::to_string(st.st_size) + " bytes, shorter than the " +
                  std::to_string(size_) + " it had when opened; was it truncated while open?");
  }
  static const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  uint64_t start = offset / page * page;
  size_t span = static_cast<size_t>(offset - start) + length;
  void* mapped = ::mmap(nullptr, span, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd_, static_cast<off_t>(start));
  if (mapped == MAP_FAILED) return ReadableSource::ViewAt(offset, length);  // e.g. a pipe or /proc file
  std::shared_ptr<const void> owner(mapped, [span](const void* p) { ::munmap(const_cast<void*>(p), span); });
  return ByteView(static_cast<const uint8_t*>(mapped) + (offset - start), length, std::move(owner));
}

void MemorySource::ReadAt(uint64_t offset, size_t length, uint8_t* out) const {
  CheckRange(offset, length, bytes_.size(), name_);
  if (length > 0) std::memcpy(out, bytes_.data() + offset, length);
}

void RandomAccessFile::ReadAt(uint64_t offset, size_t length, uint8_t* out) const {
  CheckRange(offset, length, size_, path_);
  size_t done = 0;
  while (done < length) {
    ssize_t n = ::pread(fd_, out + done, length - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw SystemError("cannot read", path_, errno);
    }
    if (n == 0) {
      throw IOError("'" + path_ + "' ended at offset " + std::to_string(offset + done) +
                    " while reading; was it truncated while open?");
    }
    done += static_cast<size_t>(n);
  }
}

std::vector<uint8_t> ReadFile(const std::string& path) {
  RandomAccessFile file(path);
  return file.ReadAt(0, file.size());
}

void WriteAll(int fd, std::string_view data, const std::string& path) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw SystemError("cannot write", path, errno);
    }
    done += static_cast<size_t>(n);
  }
}

namespace {

void SyncDirectory(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw SystemError("cannot open directory", dir, errno);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) throw SystemError("cannot fsync directory", dir, err);
}

}  // namespace

void WriteFileAtomically(const std::string& path, std::string_view data) {
  std::filesystem::path target(path);
  std::string dir = target.has_parent_path() ? target.parent_path().string() : ".";
  std::random_device rd;
  std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(rd());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw SystemError("cannot create", tmp, errno);
  try {
    WriteAll(fd, data, tmp);
    if (::fsync(fd) != 0) throw SystemError("cannot fsync", tmp, errno);
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw SystemError("cannot rename into place", path, err);
  }
  SyncDirectory(dir);
}

}  // namespace shoal
