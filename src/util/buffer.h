// Byte and value buffers whose resize() does not zero the new elements: decoders size a buffer
// and then write every element, so zeroing first would be wasted work.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

namespace shoal {

template <typename T>
struct DefaultInitAllocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  using std::allocator<T>::allocator;
  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;  // default-initialised: left as it is
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

/// resize() leaves new bytes unset; resize(n, 0) and assign() still set them.
using ByteBuffer = std::vector<uint8_t, DefaultInitAllocator<uint8_t>>;
template <typename T>
using UninitVector = std::vector<T, DefaultInitAllocator<T>>;

/// Appends `length` bytes. Use it rather than insert(): with an allocator that has its own
/// construct(), insert() copies byte by byte.
inline void AppendBytes(ByteBuffer& buffer, const void* bytes, size_t length) {
  size_t base = buffer.size();
  buffer.resize(base + length);
  if (length > 0) std::memcpy(buffer.data() + base, bytes, length);
}

}  // namespace shoal
