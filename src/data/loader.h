// The table-to-tensor loader: rows of a Delta table of images become batches of CHW float images
// and int64 labels, sharded by rank with equal batch counts, shuffled reproducibly, decoded in
// worker threads and prefetched within a memory bound. No torch here: a Batch's buffers are laid
// out as tensors and are handed to LibTorch without a copy (train/).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "data/transform.h"

namespace shoal::data {

/// What to do with a rank's share when the rows do not divide evenly by the world size.
enum class Remainder {
  kPad,   ///< wrap around to the epoch's first rows, so every row is used (a few twice)
  kDrop,  ///< leave out the last rows of the epoch's order (fewer than world_size)
  /// Split the rows exactly: rank r gets positions [r*rows/W, (r+1)*rows/W) of the order, so
  /// batch counts may differ by one between ranks. For evaluation, where ranks do not step together.
  kSplit,
};

/// What to do with an image that does not decode.
enum class OnCorrupt {
  kError,  ///< Next() throws, naming the table, file and row id
  kSkip,   ///< leave it out of its batch (the batch is one row shorter) and count it
};

struct LoaderOptions {
  std::string table;
  int64_t version = -1;           ///< -1: the latest
  std::string where;              ///< a row predicate ("col op literal [and|or ...]"); empty: all rows
  std::string image_column;       ///< empty: from the table's "shoal.decode" description, else "image"
  std::string label_column;       ///< empty: from the description, else "label"; "-" for none
  std::string id_column = "id";   ///< carried into Batch::ids when the table has it
  int64_t batch_size = 64;
  bool drop_last = false;         ///< drop each epoch's last, short batch
  bool shuffle = true;
  uint64_t seed = 0;
  int64_t shuffle_buffer = 1024;  ///< rows mixed across row groups (0: row-group order kept)
  int rank = 0;
  int world_size = 1;
  Remainder remainder = Remainder::kPad;
  int threads = 2;                ///< decode threads
  int prefetch = 0;               ///< batches decoded ahead; 0: 2 per thread
  /// Bound on the memory of the batches being decoded or waiting, and the row groups they read
  /// (one batch always proceeds, however large).
  int64_t max_inflight_bytes = int64_t{256} << 20;
  int64_t num_epochs = 1;         ///< -1: endless
  OnCorrupt on_corrupt = OnCorrupt::kError;
  TransformOptions transform;     ///< mean/std default to the description's when empty
  /// Keep each row's decoded, transformed image (and label, id) in memory the first time it is
  /// read; later epochs copy from memory and read no files and decode nothing. Needs a transform
  /// without randomness (no random resized crop, no flip), and the table's rows x image floats
  /// x 4 bytes within cache_max_bytes.
  bool cache = false;
  int64_t cache_max_bytes = int64_t{4} << 30;
};

/// Float storage aligned to 64 bytes (a cache line), so that the transform can write whole lines
/// with streaming stores.
struct AlignedFree {
  void operator()(float* p) const;
};
using AlignedFloats = std::unique_ptr<float[], AlignedFree>;

/// Storage for batches of images, reused once a batch is dropped: a fresh buffer per batch of
/// 224x224 RGB images costs a page fault per 4 KiB of it. Thread-safe.
class BufferPool {
 public:
  explicit BufferPool(size_t keep) : keep_(keep) {}
  /// Storage for at least `floats` values: the smallest kept buffer that holds them and is at
  /// most twice their size, else a new one.
  AlignedFloats Take(size_t floats, size_t* capacity);
  /// Keeps `buffer` for reuse, or frees it when `keep` buffers are kept already.
  void Give(AlignedFloats buffer, size_t capacity);

 private:
  std::mutex mutex_;
  size_t keep_;
  std::vector<std::pair<AlignedFloats, size_t>> free_;
};

/// Float values in storage from a BufferPool, returned to it on destruction. Move-only.
class FloatBuffer {
 public:
  FloatBuffer() = default;
  FloatBuffer(std::shared_ptr<BufferPool> pool, size_t size);
  FloatBuffer(FloatBuffer&&) noexcept = default;
  FloatBuffer& operator=(FloatBuffer&& other) noexcept;
  ~FloatBuffer();

  float* data() { return data_.get(); }
  const float* data() const { return data_.get(); }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  float* begin() { return data(); }
  float* end() { return data() + size_; }
  const float* begin() const { return data(); }
  const float* end() const { return data() + size_; }
  float& operator[](size_t i) { return data_[i]; }
  float operator[](size_t i) const { return data_[i]; }
  /// Shrinks (never grows) the visible size.
  void Truncate(size_t size) { size_ = size < size_ ? size : size_; }

 private:
  std::shared_ptr<BufferPool> pool_;
  AlignedFloats data_;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

struct Batch {
  int64_t epoch = 0;
  int64_t index = 0;              ///< within the epoch
  int64_t size = 0;               ///< rows
  std::vector<int64_t> shape;     ///< of images: size, channels, height, width
  FloatBuffer images;             ///< CHW per row, rows one after another
  std::vector<int64_t> labels;    ///< empty without a label column
  std::vector<int64_t> ids;       ///< the id column's values, or -1 when the table has none
  std::vector<int64_t> rows;      ///< the rows' positions in the loader's row order (see Loader)
  int64_t skipped = 0;            ///< corrupt images left out (OnCorrupt::kSkip)
};

/// Where a loader is in its sequence: restoring it continues that sequence exactly.
struct LoaderState {
  int64_t epoch = 0;
  int64_t position = 0;  ///< batches of the epoch already returned
  uint64_t seed = 0;
  int world_size = 1;
  int rank = 0;
  int64_t rows = 0;      ///< rows in the table as the loader sees it (checked on restore)

  std::string ToJson() const;
  /// Throws InvalidError for malformed text.
  static LoaderState FromJson(const std::string& text);
};

struct LoaderStats {
  int64_t batches = 0;
  int64_t samples = 0;
  int64_t skipped = 0;           ///< corrupt images left out
  int64_t row_groups_read = 0;
  double wait_seconds = 0;       ///< time Next() spent waiting for a batch
  /// Time the decode threads together spent idle, waiting to start a slice: held back by the
  /// memory bound or the prefetch depth, or with nothing left to decode.
  double worker_wait_seconds = 0;
  int64_t peak_inflight_bytes = 0;
};

/// Reads a Delta table of images as batches.
///
/// Rows are numbered 0..rows()-1 in table order: data files by path, their row groups, their rows
/// that pass the deletion vector and the predicate. Each epoch orders them (when shuffling:
/// row groups in a random order, rows shuffled within each, the same for every rank, from
/// (seed, epoch)), splits that order into world_size equal contiguous shares (padded or cut, per
/// Remainder), mixes each share through a shuffle buffer of shuffle_buffer rows, and cuts it
/// into batches. Every rank gets the same number of batches in every epoch; across ranks an epoch
/// covers each row once, apart from the padding.
class Loader {
 public:
  /// Loads the snapshot and plans the row groups. Throws shoal::Error for a missing table or
  /// column, bad options, or a table with too few rows for the world size.
  explicit Loader(LoaderOptions options);
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  /// The next batch, or nullopt once num_epochs are done. Throws shoal::Error for a corrupt
  /// image (with OnCorrupt::kError) or an unreadable file, naming table, file and row.
  std::optional<Batch> Next();

  int64_t rows() const;
  /// Rows in this rank's share of each epoch, and its batches per epoch (the same on every rank).
  int64_t rows_per_rank() const;
  int64_t batches_per_epoch() const;
  /// (channels, height, width) of every image in a batch.
  const std::vector<int>& image_shape() const;
  const std::vector<std::string>& class_names() const;

  /// The sequence position after the last batch Next() returned.
  LoaderState state_dict() const;
  /// Continues from `state`, as saved by state_dict() of a loader over the same table and
  /// options. Throws InvalidError when the world size, rank or row count differ.
  void load_state_dict(const LoaderState& state);

  LoaderStats stats() const;

  /// The rows (see above) this rank reads in `epoch`, in order, before cutting into batches.
  std::vector<int64_t> EpochOrder(int64_t epoch) const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace shoal::data
