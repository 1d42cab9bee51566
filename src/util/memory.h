// Process-wide memory settings for programs that decode data in large batches.
#pragma once

namespace shoal {

/// Keeps memory that decoding frees in the heap for the next batch, instead of returning it to
/// the kernel and faulting it in again (with glibc's defaults a table scan spends a third of
/// its time in page faults). Peak RSS is unchanged: the kept memory is what the previous batch
/// used. Called by the `shoal` command and the benchmarks; a library never calls it.
void TuneAllocatorForBatches();

}  // namespace shoal
