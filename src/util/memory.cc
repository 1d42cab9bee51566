#include "util/memory.h"

#include <malloc.h>

namespace shoal {

void TuneAllocatorForBatches() {
  // Buffers up to 64 MiB come from the heap rather than their own mappings, and the heap is
  // trimmed only when 256 MiB lie free at its top.
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  // One heap for every thread: the loader's row groups and batches are allocated in decode
  // threads and freed in others, and with an arena per thread each arena kept its own high-water
  // mark, so resident memory crept up epoch after epoch (34 to 60 MiB over 16 epochs); with one
  // it stays flat. The allocations are few and large, so sharing the lock costs nothing measurable.
  mallopt(M_ARENA_MAX, 1);
}

}  // namespace shoal
