#include "data/loader.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>

#include <sys/mman.h>

#include "data/image_codec.h"
#include "data/ingest.h"
#include "delta/scan.h"
#include "delta/snapshot.h"
#include "parquet/predicate.h"
#include "util/error.h"

namespace shoal::data {

using nlohmann::json;

void AlignedFree::operator()(float* p) const { std::free(p); }

AlignedFloats BufferPool::Take(size_t floats, size_t* capacity) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // The smallest kept buffer that fits, and none more than twice the size asked for: an
    // epoch's short last batch in a full batch's buffer would hold memory that the loader's
    // bound (which counts the batch's own size) does not see.
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->second >= floats && it->second / 2 <= floats && (best == free_.end() || it->second < best->second)) best = it;
    }
    if (best != free_.end()) {
      AlignedFloats buffer = std::move(best->first);
      *capacity = best->second;
      free_.erase(best);
      return buffer;
    }
  }
  *capacity = floats;
  // Large buffers (a batch of 224x224 RGB images is 154 MB) in 2 MiB pages where the kernel
  // offers them: their first use then faults in 2 MiB at a time, not 4 KiB (a first epoch of the
  // 224x224 JPEG benchmark table took 91,000 page faults before, 16,000 after).
  const size_t raw = std::max<size_t>(floats, 1) * sizeof(float);
  const size_t align = raw >= (size_t{8} << 20) ? size_t{2} << 20 : 64;
  const size_t bytes = (raw + align - 1) / align * align;
  AlignedFloats buffer(static_cast<float*>(std::aligned_alloc(align, bytes)));
  if (!buffer) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
  if (align > 64) ::madvise(buffer.get(), bytes, MADV_HUGEPAGE);  // advice only: failure changes nothing
#endif
  return buffer;
}

void BufferPool::Give(AlignedFloats buffer, size_t capacity) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (free_.size() < keep_) free_.emplace_back(std::move(buffer), capacity);
}

FloatBuffer::FloatBuffer(std::shared_ptr<BufferPool> pool, size_t size) : pool_(std::move(pool)), size_(size) {
  data_ = pool_->Take(size, &capacity_);
}

FloatBuffer& FloatBuffer::operator=(FloatBuffer&& other) noexcept {
  if (this != &other) {
    if (pool_ && data_) pool_->Give(std::move(data_), capacity_);
    pool_ = std::move(other.pool_);
    data_ = std::move(other.data_);
    size_ = other.size_;
    capacity_ = other.capacity_;
    other.size_ = other.capacity_ = 0;
  }
  return *this;
}

FloatBuffer::~FloatBuffer() {
  if (pool_ && data_) pool_->Give(std::move(data_), capacity_);
}

std::string LoaderState::ToJson() const {
  return json{{"epoch", epoch}, {"position", position}, {"seed", seed}, {"world_size", world_size},
              {"rank", rank},   {"rows", rows}}
      .dump();
}

LoaderState LoaderState::FromJson(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  LoaderState state;
  try {
    if (!j.is_object()) throw InvalidError("not a JSON object");
    state.epoch = j.at("epoch").get<int64_t>();
    state.position = j.at("position").get<int64_t>();
    state.seed = j.at("seed").get<uint64_t>();
    state.world_size = j.at("world_size").get<int>();
    state.rank = j.at("rank").get<int>();
    state.rows = j.at("rows").get<int64_t>();
  } catch (const json::exception& e) {
    throw InvalidError(std::string("loader state: ") + e.what());
  } catch (const Error& e) {
    throw InvalidError(std::string("loader state: ") + e.what());
  }
  if (state.epoch < 0 || state.position < 0) throw InvalidError("loader state: negative epoch or position");
  return state;
}

namespace {

// A row group of a data file, with the rows of it the loader reads.
struct Unit {
  int file = 0;
  int row_group = 0;
  int64_t count = 0;               // rows read
  std::vector<int32_t> selection;  // row-group rows read, in order; empty: all of them
};

// A unit's columns, read from its file while some planned batch needs it.
struct LoadedUnit {
  parquet::RecordBatch batch;  // image, then label and id when there are such columns
  int64_t bytes = 0;
};

struct UnitSlot {
  std::shared_ptr<const LoadedUnit> data;
  std::exception_ptr error;
  bool loading = false;
  int64_t refs = 0;  // rows of planned epochs not yet decoded
};

// One epoch of this rank: the rows in order, and how many of them each unit holds.
struct EpochPlan {
  int64_t epoch = 0;
  std::vector<int64_t> order;
  std::vector<std::pair<int, int64_t>> unit_rows;
};

struct Result {
  Batch batch;
  std::exception_ptr error;
  int64_t bytes = 0;
};

// A batch being decoded: its rows are cut into slices that the workers decode side by side, so
// every thread works on the batch the caller needs next.
struct Pending {
  std::shared_ptr<const EpochPlan> plan;
  int64_t index = 0;
  int64_t begin = 0, end = 0;      // rows of plan->order
  Batch batch;                     // sized for every row; compacted when a row is skipped
  std::vector<uint8_t> kept;       // per row: decoded (1) or skipped (0)
  std::vector<std::exception_ptr> errors;  // per slice
  std::vector<int64_t> bounds;     // slice k is rows [bounds[k], bounds[k + 1]) of the batch
  int remaining = 0;               // slices not yet decoded
  int slices() const { return static_cast<int>(bounds.size()) - 1; }
  std::unordered_map<int, int64_t> used;   // unit -> rows read
};

int64_t ColumnBytes(const parquet::ColumnVector& c) {
  int64_t bytes = static_cast<int64_t>(c.validity.size() + c.data.size() + c.offsets.size() * sizeof(int64_t));
  for (const auto& child : c.children) bytes += ColumnBytes(child);
  return bytes;
}

int64_t IntegerAt(const parquet::ColumnVector& column, int64_t row) {
  if (!column.IsValid(row)) return -1;
  switch (column.field->physical) {
    case parquet::PhysicalType::kInt32: return column.Value<int32_t>(row);
    case parquet::PhysicalType::kInt64: return column.Value<int64_t>(row);
    default: return -1;
  }
}

std::vector<float> Floats(const json& j) {
  std::vector<float> out;
  if (j.is_array()) {
    for (const json& v : j) {
      if (v.is_number()) out.push_back(v.get<float>());
    }
  }
  return out;
}

}  // namespace

class Loader::Impl {
 public:
  explicit Impl(LoaderOptions options) : options_(std::move(options)) {
    Validate();
    snapshot_ = delta::LoadSnapshot(options_.table, options_.version >= 0 ? std::optional<int64_t>(options_.version)
                                                                          : std::nullopt);
    ReadDescription();
    ResolveColumns();
    PlanUnits();
    const int64_t world = options_.world_size;
    if (options_.remainder == Remainder::kSplit) {
      share_first_ = options_.rank * rows_ / world;
      per_rank_ = (options_.rank + 1) * rows_ / world - share_first_;
    } else {
      per_rank_ = options_.remainder == Remainder::kPad ? (rows_ + world - 1) / world : rows_ / world;
      share_first_ = options_.rank * per_rank_;
    }
    if (rows_ == 0) throw InvalidError("table '" + options_.table + "' has no rows to load" + WhereNote());
    if (per_rank_ == 0) {
      throw InvalidError("table '" + options_.table + "' has " + std::to_string(rows_) + " rows, fewer than the " +
                         std::to_string(world) + " ranks; pad the remainder instead of dropping it");
    }
    batches_per_epoch_ = options_.drop_last ? per_rank_ / options_.batch_size
                                            : (per_rank_ + options_.batch_size - 1) / options_.batch_size;
    if (batches_per_epoch_ == 0) {
      throw InvalidError("each rank's share of " + std::to_string(per_rank_) + " rows is less than one batch of " +
                         std::to_string(options_.batch_size) + " and drop_last is set");
    }
    end_global_ = options_.num_epochs < 0 ? INT64_MAX : options_.num_epochs * batches_per_epoch_;
    batch_bytes_ = options_.batch_size * static_cast<int64_t>(transformer_->output_floats() * sizeof(float));
    if (options_.cache) MakeCache();
    if (codec_ != "raw" && transformer_->reads_part() && rows_ <= kMaxKnownGoodRows) {
      known_good_.reset(new std::atomic<uint64_t>[static_cast<size_t>((rows_ + 63) / 64)]());
    }
  }

  ~Impl() { StopWorkers(); }

  std::optional<Batch> Next() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (next_deliver_ >= end_global_) return std::nullopt;
    if (workers_.empty()) StartWorkers();
    auto start = std::chrono::steady_clock::now();
    ready_cv_.wait(lock, [&] { return done_.count(next_deliver_) != 0; });
    stats_.wait_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    auto it = done_.find(next_deliver_);
    Result result = std::move(it->second);
    done_.erase(it);
    inflight_bytes_ -= result.bytes;
    if (result.error) {
      // The batch is not consumed: the loader stays where it was, and says so again if asked.
      Result again;
      again.error = result.error;
      done_[next_deliver_] = std::move(again);
      std::rethrow_exception(result.error);
    }
    ++next_deliver_;
    ++stats_.batches;
    stats_.samples += result.batch.size;
    stats_.skipped += result.batch.skipped;
    work_cv_.notify_all();
    return std::move(result.batch);
  }

  LoaderState state_dict() const {
    std::lock_guard<std::mutex> lock(mutex_);
    LoaderState state;
    state.epoch = next_deliver_ / batches_per_epoch_;
    state.position = next_deliver_ % batches_per_epoch_;
    state.seed = options_.seed;
    state.world_size = options_.world_size;
    state.rank = options_.rank;
    state.rows = rows_;
    return state;
  }

  void load_state_dict(const LoaderState& state) {
    if (state.world_size != options_.world_size || state.rank != options_.rank) {
      throw InvalidError("loader state was saved by rank " + std::to_string(state.rank) + " of " +
                         std::to_string(state.world_size) + ", this is rank " + std::to_string(options_.rank) + " of " +
                         std::to_string(options_.world_size) + "; resuming needs the same world size");
    }
    if (state.rows != rows_) {
      throw InvalidError("loader state was saved over " + std::to_string(state.rows) + " rows, table '" +
                         options_.table + "' now gives " + std::to_string(rows_) +
                         "; resume at the same table version and predicate");
    }
    if (state.position > batches_per_epoch_) {
      throw InvalidError("loader state position " + std::to_string(state.position) + " is past the epoch's " +
                         std::to_string(batches_per_epoch_) + " batches");
    }
    StopWorkers();
    std::lock_guard<std::mutex> lock(mutex_);
    options_.seed = state.seed;
    next_deliver_ = next_assign_ = state.epoch * batches_per_epoch_ + state.position;
    next_slice_ = 0;
    pending_.clear();
    done_.clear();
    plans_.clear();
    units_cache_.clear();
    inflight_bytes_ = 0;
    stop_ = false;
  }

  std::vector<int64_t> EpochOrder(int64_t epoch) const;

  LoaderStats stats() const {
    std::lock_guard<std::mutex> lock(mutex_);
    LoaderStats s = stats_;
    return s;
  }

  int64_t rows_ = 0;
  int64_t per_rank_ = 0;
  int64_t share_first_ = 0;  // this rank's share starts here in each epoch's order
  int64_t batches_per_epoch_ = 0;
  std::vector<int> image_shape_;
  std::vector<std::string> class_names_;

 private:
  void Validate() const {
    auto bad = [](const std::string& what) { throw InvalidError("loader option " + what); };
    if (options_.table.empty()) bad("table is empty");
    if (options_.batch_size <= 0) bad("batch_size must be positive, not " + std::to_string(options_.batch_size));
    if (options_.world_size <= 0) bad("world_size must be positive, not " + std::to_string(options_.world_size));
    if (options_.rank < 0 || options_.rank >= options_.world_size) {
      bad("rank " + std::to_string(options_.rank) + " is outside 0.." + std::to_string(options_.world_size - 1));
    }
    if (options_.threads <= 0 || options_.threads > 256) bad("threads must be 1..256, not " + std::to_string(options_.threads));
    if (options_.prefetch < 0) bad("prefetch must not be negative");
    if (options_.num_epochs == 0 || options_.num_epochs < -1) bad("num_epochs must be positive, or -1 for endless");
    if (options_.shuffle_buffer < 0) bad("shuffle_buffer must not be negative");
  }

  std::string WhereNote() const { return options_.where.empty() ? "" : " matching '" + options_.where + "'"; }

  // The table's "shoal.decode" description sets defaults: columns, shape, mean and std.
  void ReadDescription() {
    auto it = snapshot_.metadata.configuration.find(kDecodeKey);
    if (it != snapshot_.metadata.configuration.end()) {
      description_ = json::parse(it->second, nullptr, false);
      if (!description_.is_object()) {
        throw InvalidError("table '" + options_.table + "' has a malformed " + std::string(kDecodeKey) +
                           " description (not a JSON object)");
      }
    }
    auto text = [&](const char* key, const std::string& fallback) {
      auto v = description_.find(key);
      return description_.is_object() && v != description_.end() && v->is_string() ? v->get<std::string>() : fallback;
    };
    if (options_.image_column.empty()) options_.image_column = text("image_column", "image");
    if (options_.label_column.empty()) options_.label_column = text("label_column", "label");
    if (description_.is_object()) {
      if (description_.contains("shape") && description_["shape"].is_array() && description_["shape"].size() == 3) {
        for (const json& v : description_["shape"]) {
          if (v.is_number_integer()) stored_shape_.push_back(v.get<int>());
        }
        if (stored_shape_.size() != 3) stored_shape_.clear();
      }
      if (description_.contains("class_names") && description_["class_names"].is_array()) {
        for (const json& v : description_["class_names"]) class_names_.push_back(v.is_string() ? v.get<std::string>() : v.dump());
      }
      codec_ = text("codec", "");
    }
    TransformOptions transform = options_.transform;
    if (transform.normalize && transform.mean.empty() && transform.std.empty() && description_.is_object()) {
      transform.mean = Floats(description_.value("mean", json()));
      transform.std = Floats(description_.value("std", json()));
      // Converting gray to RGB repeats the one channel's statistics.
      if (transform.channels == 3 && transform.mean.size() == 1) transform.mean.assign(3, transform.mean[0]);
      if (transform.channels == 3 && transform.std.size() == 1) transform.std.assign(3, transform.std[0]);
      if (transform.channels == 1 && transform.mean.size() == 3) transform.mean.clear(), transform.std.clear();
    }
    std::vector<int> shape = stored_shape_;
    if (codec_ == "raw" && shape.size() != 3) {
      throw InvalidError("table '" + options_.table + "' stores raw pixels but its description gives no shape");
    }
    transformer_ = std::make_unique<Transformer>(transform, shape);
    image_shape_ = transformer_->output_shape();
    if (image_shape_[1] < 0 || image_shape_[2] < 0) {
      throw InvalidError("the images of table '" + options_.table +
                         "' differ in size; give a center crop or random resized crop so batches have one shape");
    }
  }

  void ResolveColumns() {
    const delta::DeltaField& image = delta::FindColumn(snapshot_, options_.image_column);
    read_.push_back(&image);
    if (options_.label_column != "-") {
      read_.push_back(&delta::FindColumn(snapshot_, options_.label_column));
      label_index_ = 1;
    }
    for (const delta::DeltaField& f : snapshot_.schema) {
      if (!options_.id_column.empty() && f.name == options_.id_column) {
        id_index_ = static_cast<int>(read_.size());
        read_.push_back(&f);
      }
    }
    if (!options_.where.empty()) {
      predicate_ = std::make_unique<parquet::Predicate>(parquet::Predicate::Parse(options_.where));
      for (const std::string& name : predicate_->Columns()) predicate_columns_.push_back(&delta::FindColumn(snapshot_, name));
    }
  }

  // Lists the row groups of the files that may match, with the rows of each that pass the
  // deletion vector and the predicate. Only the predicate's columns are read here.
  void PlanUnits() {
    for (size_t f = 0; f < snapshot_.files.size(); ++f) {
      const delta::AddFile& file = snapshot_.files[f];
      if (predicate_ && !delta::FileMayMatch(snapshot_, file, *predicate_)) continue;
      delta::DataFileReader reader(snapshot_, file);
      int file_index = static_cast<int>(files_.size());
      files_.push_back(&file);
      for (int g = 0; g < reader.num_row_groups(); ++g) {
        Unit unit;
        unit.file = file_index;
        unit.row_group = g;
        unit.count = reader.num_rows(g);
        std::vector<uint8_t> mask;
        if (predicate_) {
          parquet::RecordBatch batch = reader.ReadRowGroup(g, predicate_columns_);
          try {
            mask = predicate_->Evaluate(batch);
          } catch (const Error& e) {
            throw WithContext(e, "evaluating '" + options_.where + "' on " + reader.where());
          }
        }
        reader.ApplyDeletionVector(g, &mask);
        if (!mask.empty()) {
          unit.count = 0;
          for (size_t i = 0; i < mask.size(); ++i) {
            if (mask[i]) unit.selection.push_back(static_cast<int32_t>(i));
          }
          unit.count = static_cast<int64_t>(unit.selection.size());
        }
        if (unit.count == 0) continue;
        unit_start_.push_back(rows_);
        rows_ += unit.count;
        units_.push_back(std::move(unit));
      }
    }
  }

  size_t UnitOf(int64_t row) const {
    return static_cast<size_t>(std::upper_bound(unit_start_.begin(), unit_start_.end(), row) - unit_start_.begin() - 1);
  }

  std::shared_ptr<const EpochPlan> MakePlan(int64_t epoch) const {
    auto plan = std::make_shared<EpochPlan>();
    plan->epoch = epoch;
    plan->order = EpochOrder(epoch);
    std::unordered_map<int, int64_t> counts;
    for (int64_t row : plan->order) ++counts[static_cast<int>(UnitOf(row))];
    plan->unit_rows.assign(counts.begin(), counts.end());
    return plan;
  }

  // The plan of `epoch`, made on first use; its rows are counted into the units they need.
  // Called with mutex_ held.
  std::shared_ptr<const EpochPlan> PlanFor(int64_t epoch) {
    auto it = plans_.find(epoch);
    if (it != plans_.end()) return it->second;
    std::shared_ptr<const EpochPlan> plan = MakePlan(epoch);
    for (const auto& [unit, count] : plan->unit_rows) units_cache_[unit].refs += count;
    plans_[epoch] = plan;
    // Workers hold the plans they use; the map keeps only the latest two epochs.
    while (plans_.size() > 2) plans_.erase(plans_.begin());
    return plan;
  }

  void StartWorkers() {
    stop_ = false;
    int prefetch = options_.prefetch > 0 ? options_.prefetch : 2 * options_.threads;
    prefetch_ = std::max(prefetch, 1);
    // Buffers for the batches in flight and the one the caller holds.
    if (!pool_) pool_ = std::make_shared<BufferPool>(static_cast<size_t>(prefetch_ + 1));
    for (int t = 0; t < options_.threads; ++t) workers_.emplace_back([this] { Work(); });
  }

  void StopWorkers() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    work_cv_.notify_all();
    unit_cv_.notify_all();
    for (std::thread& t : workers_) t.join();
    workers_.clear();
  }

  void Work() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      // A batch's images are counted from when it is started: what the bound holds back is the
      // memory that the batches being decoded, the decoded ones and the row groups they read
      // take. The batch the caller waits for always starts; the slices of a started batch too.
      if (!stop_ && !CanStartSlice()) {
        auto start = std::chrono::steady_clock::now();
        work_cv_.wait(lock, [&] { return stop_ || CanStartSlice(); });
        stats_.worker_wait_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      }
      if (stop_) return;
      const int64_t global = next_assign_;
      const int slice = next_slice_;
      if (slice == 0) StartBatch(global);
      std::shared_ptr<Pending> pending = pending_.at(global);
      if (++next_slice_ == pending->slices()) {
        next_slice_ = 0;
        ++next_assign_;
      }
      lock.unlock();
      std::unordered_map<int, int64_t> used;
      std::exception_ptr error;
      try {
        BuildSlice(*pending, slice, &used);
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      pending->errors[slice] = error;
      for (const auto& [unit, count] : used) pending->used[unit] += count;
      if (--pending->remaining == 0) FinishBatch(global, *pending);
    }
  }

  // Called with mutex_ held.
  bool CanStartSlice() const {
    if (next_slice_ > 0) return true;
    return next_assign_ < end_global_ && next_assign_ < next_deliver_ + prefetch_ &&
           (inflight_bytes_ + batch_bytes_ <= options_.max_inflight_bytes || next_assign_ == next_deliver_);
  }

  // Called with mutex_ held.
  void StartBatch(int64_t global) {
    auto pending = std::make_shared<Pending>();
    pending->plan = PlanFor(global / batches_per_epoch_);
    pending->index = global % batches_per_epoch_;
    if (pending->index == batches_per_epoch_ - 1 && global + 1 < end_global_ && WholeTableLoaded()) {
      // The next epoch reads the same row groups: planning it now keeps them loaded (its rows
      // hold them), where they would be dropped at the end of this epoch and read again.
      PlanFor(global / batches_per_epoch_ + 1);
    }
    pending->begin = pending->index * options_.batch_size;
    pending->end = std::min<int64_t>(pending->begin + options_.batch_size, static_cast<int64_t>(pending->plan->order.size()));
    const int64_t rows = pending->end - pending->begin;
    Batch& batch = pending->batch;
    batch.epoch = pending->plan->epoch;
    batch.index = pending->index;
    batch.images = FloatBuffer(pool_, static_cast<size_t>(rows) * transformer_->output_floats());
    batch.labels.assign(static_cast<size_t>(rows), -1);
    batch.ids.assign(static_cast<size_t>(rows), -1);
    batch.rows.assign(pending->plan->order.begin() + pending->begin, pending->plan->order.begin() + pending->end);
    pending->kept.assign(static_cast<size_t>(rows), 0);
    // Slices that shrink as the batch goes (each a share of the rows left), so that a worker
    // done early takes another one instead of waiting at the end of the batch for the others
    // (crops make images differ in cost): the last slices are a row or two.
    pending->bounds.assign(1, 0);
    int64_t left = rows;
    do {
      const int64_t size = std::min(left, std::max<int64_t>(1, left / (2 * options_.threads)));
      pending->bounds.push_back(pending->bounds.back() + size);
      left -= size;
    } while (left > 0);
    pending->remaining = pending->slices();
    pending->errors.resize(static_cast<size_t>(pending->remaining));
    pending_[global] = pending;
    inflight_bytes_ += batch_bytes_;
  }

  // The last slice of a batch is done: compact out skipped rows and hand the batch over. Called
  // with mutex_ held.
  void FinishBatch(int64_t global, Pending& pending) {
    Result result;
    for (const std::exception_ptr& e : pending.errors) {
      if (e && !result.error) result.error = e;  // the first slice's: the earliest row
    }
    if (!result.error) {
      Release(pending.used);
      Batch& batch = pending.batch;
      const size_t floats = transformer_->output_floats();
      int64_t kept = 0;
      for (size_t i = 0; i < pending.kept.size(); ++i) {
        if (!pending.kept[i]) continue;
        if (static_cast<int64_t>(i) != kept) {
          std::memmove(batch.images.data() + kept * floats, batch.images.data() + i * floats, floats * sizeof(float));
          batch.labels[kept] = batch.labels[i];
          batch.ids[kept] = batch.ids[i];
          batch.rows[kept] = batch.rows[i];
        }
        ++kept;
      }
      batch.size = kept;
      batch.skipped = static_cast<int64_t>(pending.kept.size()) - kept;
      batch.labels.resize(label_index_ >= 0 ? static_cast<size_t>(kept) : 0);
      batch.ids.resize(static_cast<size_t>(kept));
      batch.rows.resize(static_cast<size_t>(kept));
      batch.images.Truncate(static_cast<size_t>(kept) * floats);
      batch.shape = {kept, image_shape_[0], image_shape_[1], image_shape_[2]};
      result.bytes = static_cast<int64_t>(batch.images.size() * sizeof(float));
      result.batch = std::move(batch);
    }
    inflight_bytes_ += result.bytes - batch_bytes_;
    stats_.peak_inflight_bytes = std::max(stats_.peak_inflight_bytes, inflight_bytes_);
    done_[global] = std::move(result);
    pending_.erase(global);
    ready_cv_.notify_all();
  }

  // Whether every unit is in memory (a table that fits within the in-flight bound). Called with
  // mutex_ held.
  bool WholeTableLoaded() const {
    if (units_cache_.size() < units_.size()) return false;
    for (size_t u = 0; u < units_.size(); ++u) {
      auto it = units_cache_.find(static_cast<int>(u));
      if (it == units_cache_.end() || !it->second.data) return false;
    }
    return true;
  }

  // Drops the units whose planned rows are all decoded. Called with mutex_ held.
  void Release(const std::unordered_map<int, int64_t>& used) {
    for (const auto& [unit, count] : used) {
      auto it = units_cache_.find(unit);
      if (it == units_cache_.end()) continue;
      it->second.refs -= count;
      if (it->second.refs <= 0 && !it->second.loading) {
        if (it->second.data) inflight_bytes_ -= it->second.data->bytes;
        units_cache_.erase(it);
      }
    }
    work_cv_.notify_all();
  }

  std::shared_ptr<const LoadedUnit> GetUnit(int unit) {
    std::unique_lock<std::mutex> lock(mutex_);
    UnitSlot* slot = &units_cache_[unit];
    unit_cv_.wait(lock, [&] {
      slot = &units_cache_[unit];
      return stop_ || slot->data || slot->error || !slot->loading;
    });
    if (stop_) throw Error(ErrorCode::kConflict, "the loader is stopping");
    if (slot->error) std::rethrow_exception(slot->error);
    if (slot->data) return slot->data;
    slot->loading = true;
    lock.unlock();
    std::shared_ptr<LoadedUnit> loaded;
    std::exception_ptr error;
    try {
      loaded = Load(units_[unit]);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    slot = &units_cache_[unit];
    slot->loading = false;
    if (error) {
      slot->error = error;
    } else {
      slot->data = loaded;
      inflight_bytes_ += loaded->bytes;
      stats_.peak_inflight_bytes = std::max(stats_.peak_inflight_bytes, inflight_bytes_);
      ++stats_.row_groups_read;
    }
    unit_cv_.notify_all();
    if (error) std::rethrow_exception(error);
    return loaded;
  }

  std::shared_ptr<LoadedUnit> Load(const Unit& unit) {
    std::shared_ptr<delta::DataFileReader> reader = Reader(unit.file);
    auto loaded = std::make_shared<LoadedUnit>();
    loaded->batch = reader->ReadRowGroup(unit.row_group, read_);
    const parquet::ColumnVector& image = loaded->batch.columns[0];
    if (image.field->physical != parquet::PhysicalType::kByteArray &&
        image.field->physical != parquet::PhysicalType::kFixedLenByteArray) {
      throw InvalidError("column '" + options_.image_column + "' of table '" + options_.table +
                         "' holds " + std::string(parquet::PhysicalTypeName(image.field->physical)) + ", not image bytes");
    }
    if (label_index_ >= 0) {
      auto physical = loaded->batch.columns[label_index_].field->physical;
      if (physical != parquet::PhysicalType::kInt32 && physical != parquet::PhysicalType::kInt64) {
        throw InvalidError("label column '" + options_.label_column + "' of table '" + options_.table + "' holds " +
                           std::string(parquet::PhysicalTypeName(physical)) + ", not integers");
      }
    }
    for (const auto& column : loaded->batch.columns) loaded->bytes += ColumnBytes(column);
    return loaded;
  }

  // Open files, shared by the workers; a few are kept open.
  std::shared_ptr<delta::DataFileReader> Reader(int file) {
    std::lock_guard<std::mutex> lock(readers_mutex_);
    auto it = readers_.find(file);
    if (it != readers_.end()) return it->second;
    if (readers_.size() >= 16) {
      for (auto r = readers_.begin(); r != readers_.end(); ++r) {
        if (r->second.use_count() == 1) {
          readers_.erase(r);
          break;
        }
      }
    }
    auto reader = std::make_shared<delta::DataFileReader>(snapshot_, *files_[file]);
    readers_[file] = reader;
    return reader;
  }

  // Decodes slice `slice` of the batch's rows into their places. Only this thread writes them.
  void BuildSlice(Pending& pending, int slice, std::unordered_map<int, int64_t>* used) {
    const EpochPlan& plan = *pending.plan;
    const int64_t first = pending.bounds[slice], last = pending.bounds[slice + 1];
    Batch& batch = pending.batch;
    const size_t floats = transformer_->output_floats();
    thread_local Image image;
    int last_unit = -1;
    std::shared_ptr<const LoadedUnit> loaded;
    for (int64_t i = first; i < last; ++i) {
      const int64_t row = plan.order[pending.begin + i];
      const size_t u = UnitOf(row);
      const Unit& unit = units_[u];
      bool claimed = false;  // this thread fills the row's cache entry
      if (cache_) {
        std::atomic<uint8_t>& state = cache_->state[row];
        uint8_t seen = state.load(std::memory_order_acquire);
        if (seen == kCached || seen == kCorrupt) {
          ++(*used)[static_cast<int>(u)];
          if (seen == kCorrupt) continue;  // skipped, and counted, the first time
          std::memcpy(batch.images.data() + static_cast<size_t>(i) * floats, cache_->images.get() + static_cast<size_t>(row) * floats,
                      floats * sizeof(float));
          if (label_index_ >= 0) batch.labels[i] = cache_->labels[row];
          batch.ids[i] = cache_->ids[row];
          pending.kept[i] = 1;
          continue;
        }
        claimed = seen == kEmpty && state.compare_exchange_strong(seen, kWriting, std::memory_order_acq_rel);
      }
      if (static_cast<int>(u) != last_unit) {
        loaded = GetUnit(static_cast<int>(u));
        last_unit = static_cast<int>(u);
      }
      ++(*used)[static_cast<int>(u)];
      const int64_t local = row - unit_start_[u];
      const int64_t r = unit.selection.empty() ? local : unit.selection[local];
      const auto& columns = loaded->batch.columns;
      int64_t id = id_index_ >= 0 ? IntegerAt(columns[id_index_], r) : -1;
      try {
        const parquet::ColumnVector& bytes_column = columns[0];
        if (!bytes_column.IsValid(r)) throw InvalidError("the image is null");
        std::string_view bytes = bytes_column.field->physical == parquet::PhysicalType::kByteArray
                                     ? bytes_column.Bytes(r)
                                     : std::string_view(reinterpret_cast<const char*>(bytes_column.data.data()) +
                                                            r * bytes_column.field->type_length,
                                                        static_cast<size_t>(bytes_column.field->type_length));
        const uint64_t seed = MixSeed(options_.seed, plan.epoch, static_cast<uint64_t>(row), 0x7f);
        ImageWindow window;
        DecodeRow(bytes, row, seed, &image, &window);
        transformer_->Apply(image, &window, seed, batch.images.data() + static_cast<size_t>(i) * floats);
      } catch (const Error& e) {
        if (options_.on_corrupt == OnCorrupt::kSkip) {
          if (claimed) cache_->state[row].store(kCorrupt, std::memory_order_release);
          continue;
        }
        if (claimed) cache_->state[row].store(kEmpty, std::memory_order_release);
        std::string which = id_index_ >= 0 ? "row id " + std::to_string(id)
                                           : "row " + std::to_string(r) + " of row group " + std::to_string(unit.row_group);
        throw WithContext(e, "table '" + options_.table + "', " + Reader(unit.file)->where() + ", " + which);
      }
      if (label_index_ >= 0) batch.labels[i] = IntegerAt(columns[label_index_], r);
      batch.ids[i] = id;
      pending.kept[i] = 1;
      if (claimed) {
        std::memcpy(cache_->images.get() + static_cast<size_t>(row) * floats, batch.images.data() + static_cast<size_t>(i) * floats,
                    floats * sizeof(float));
        cache_->labels[row] = batch.labels[i];
        cache_->ids[row] = id;
        cache_->state[row].store(kCached, std::memory_order_release);
      }
    }
  }

  // The decoded rows (LoaderOptions::cache), by position in the loader's row order. A row's
  // state goes from empty to being written (claimed by one worker) to cached or corrupt; readers
  // take only cached rows, so no two threads touch a row's floats at once.
  enum RowState : uint8_t { kEmpty = 0, kWriting = 1, kCached = 2, kCorrupt = 3 };
  struct Cache {
    std::unique_ptr<float[]> images;
    std::vector<int64_t> labels, ids;
    std::unique_ptr<std::atomic<uint8_t>[]> state;
  };

  void MakeCache() {
    const TransformOptions& t = options_.transform;
    if (t.random_resized_crop > 0 || t.horizontal_flip) {
      throw InvalidError("the loader's cache keeps transformed images, so it needs a transform without randomness; "
                         "this one has a random resized crop or a flip");
    }
    const size_t floats = transformer_->output_floats();
    const int64_t bytes = rows_ * static_cast<int64_t>(floats * sizeof(float));
    if (bytes > options_.cache_max_bytes) {
      throw InvalidError("caching table '" + options_.table + "' takes " + std::to_string(bytes >> 20) + " MiB (" +
                         std::to_string(rows_) + " rows of " + std::to_string(floats) + " floats), more than cache_max_bytes (" +
                         std::to_string(options_.cache_max_bytes >> 20) + " MiB)");
    }
    cache_ = std::make_unique<Cache>();
    cache_->images.reset(new float[static_cast<size_t>(rows_) * floats]);
    cache_->labels.assign(static_cast<size_t>(rows_), -1);
    cache_->ids.assign(static_cast<size_t>(rows_), -1);
    cache_->state.reset(new std::atomic<uint8_t>[static_cast<size_t>(rows_)]);
    for (int64_t r = 0; r < rows_; ++r) cache_->state[r].store(kEmpty, std::memory_order_relaxed);
  }

  // Decodes the image of `row` (a place in the loader's row order) as stored (the transform
  // converts channels cheaper); under a crop, a JPEG only as far as the crop with this seed
  // reads. `window` receives where the pixels lie.
  void DecodeRow(std::string_view bytes, int64_t row, uint64_t seed, Image* image, ImageWindow* window) const {
    if (codec_ != "raw" && transformer_->reads_part()) {
      // A row's bytes are the same in every epoch (Delta never rewrites a data file), so once
      // they have decoded whole without error, later decodes may stop after the crop.
      std::atomic<uint64_t>* word = known_good_ ? &known_good_[row / 64] : nullptr;
      const uint64_t bit = uint64_t{1} << (row % 64);
      const bool known = word && (word->load(std::memory_order_relaxed) & bit) != 0;
      const bool whole = DecodeImageWindowInto(
          bytes, 0, [&](int width, int height) { return transformer_->Needed(width, height, seed); }, image, window,
          known);
      if (word && whole && !known) word->fetch_or(bit, std::memory_order_relaxed);
      return;
    }
    if (codec_ == "raw") {
      const size_t expected = static_cast<size_t>(stored_shape_[0]) * stored_shape_[1] * stored_shape_[2];
      if (bytes.size() != expected) {
        throw InvalidError("raw image of " + std::to_string(bytes.size()) + " bytes, its shape needs " +
                           std::to_string(expected));
      }
      image->channels = stored_shape_[0];
      image->height = stored_shape_[1];
      image->width = stored_shape_[2];
      image->pixels.assign(bytes.begin(), bytes.end());
      if (image_shape_[0] != image->channels) *image = ConvertChannels(*image, image_shape_[0]);
    } else {
      DecodeImageInto(bytes, 0, image);
    }
    *window = ImageWindow{0, 0, image->width, image->height};
  }

  LoaderOptions options_;
  std::unique_ptr<Cache> cache_;
  // One bit a row (by place in the loader's row order): its JPEG has decoded whole without
  // error. Kept for tables up to kMaxKnownGoodRows rows (32 MiB); larger ones decode every
  // image whole in every epoch.
  static constexpr int64_t kMaxKnownGoodRows = int64_t{1} << 28;
  std::unique_ptr<std::atomic<uint64_t>[]> known_good_;
  delta::Snapshot snapshot_;
  json description_;
  std::string codec_;
  std::vector<int> stored_shape_;
  std::unique_ptr<Transformer> transformer_;
  std::vector<const delta::DeltaField*> read_;  // image, label, id
  int label_index_ = -1, id_index_ = -1;
  std::unique_ptr<parquet::Predicate> predicate_;
  std::vector<const delta::DeltaField*> predicate_columns_;
  std::vector<const delta::AddFile*> files_;
  std::vector<Unit> units_;
  std::vector<int64_t> unit_start_;
  int64_t end_global_ = 0;

  mutable std::mutex mutex_;
  std::condition_variable work_cv_, ready_cv_, unit_cv_;
  std::vector<std::thread> workers_;
  bool stop_ = false;
  int prefetch_ = 1;
  int64_t batch_bytes_ = 0;  // the images of a full batch
  std::shared_ptr<BufferPool> pool_;
  int64_t next_assign_ = 0, next_deliver_ = 0;  // batches
  int next_slice_ = 0;                           // of batch next_assign_
  std::map<int64_t, std::shared_ptr<Pending>> pending_;
  std::map<int64_t, Result> done_;
  std::map<int64_t, std::shared_ptr<const EpochPlan>> plans_;
  std::unordered_map<int, UnitSlot> units_cache_;
  int64_t inflight_bytes_ = 0;
  LoaderStats stats_;

  std::mutex readers_mutex_;
  std::map<int, std::shared_ptr<delta::DataFileReader>> readers_;
};

std::vector<int64_t> Loader::Impl::EpochOrder(int64_t epoch) const {
  const int64_t first = share_first_;  // this rank's share of the epoch's order
  const int64_t last = first + per_rank_;
  // The units in the epoch's order, each with its position in the whole order.
  std::vector<size_t> unit_order(units_.size());
  for (size_t u = 0; u < units_.size(); ++u) unit_order[u] = u;
  if (options_.shuffle) {
    SplitMix64 random(MixSeed(options_.seed, static_cast<uint64_t>(epoch), 1));
    for (size_t i = unit_order.size(); i > 1; --i) std::swap(unit_order[i - 1], unit_order[random.Below(i)]);
  }
  std::vector<int64_t> order;
  order.reserve(static_cast<size_t>(per_rank_));
  // Positions [first, last) of the order, where position p >= rows_ wraps to p % rows_ (padding).
  // Walk the units over each wrapped round that the share touches.
  for (int64_t round_start = (first / rows_) * rows_; round_start < last; round_start += rows_) {
    int64_t position = round_start;
    for (size_t u : unit_order) {
      const int64_t count = units_[u].count;
      const int64_t lo = std::max(first, position), hi = std::min(last, position + count);
      if (lo < hi) {
        std::vector<int64_t> rows(static_cast<size_t>(count));
        for (int64_t k = 0; k < count; ++k) rows[k] = unit_start_[u] + k;
        if (options_.shuffle) {
          SplitMix64 random(MixSeed(options_.seed, static_cast<uint64_t>(epoch), 2, u));
          for (size_t i = rows.size(); i > 1; --i) std::swap(rows[i - 1], rows[random.Below(i)]);
        }
        order.insert(order.end(), rows.begin() + (lo - position), rows.begin() + (hi - position));
      }
      position += count;
      if (position >= last) break;
    }
  }
  // A bounded shuffle buffer mixes rows across row-group boundaries.
  const int64_t buffer_size = std::min<int64_t>(options_.shuffle_buffer, static_cast<int64_t>(order.size()));
  if (options_.shuffle && buffer_size > 1) {
    SplitMix64 random(MixSeed(options_.seed, static_cast<uint64_t>(epoch), 3, static_cast<uint64_t>(options_.rank)));
    std::vector<int64_t> buffer(order.begin(), order.begin() + buffer_size);
    std::vector<int64_t> mixed;
    mixed.reserve(order.size());
    for (size_t i = static_cast<size_t>(buffer_size); i < order.size(); ++i) {
      size_t j = random.Below(static_cast<uint64_t>(buffer_size));
      mixed.push_back(buffer[j]);
      buffer[j] = order[i];
    }
    for (size_t i = buffer.size(); i > 1; --i) std::swap(buffer[i - 1], buffer[random.Below(i)]);
    mixed.insert(mixed.end(), buffer.begin(), buffer.end());
    order.swap(mixed);
  }
  return order;
}

Loader::Loader(LoaderOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Loader::~Loader() = default;
std::optional<Batch> Loader::Next() { return impl_->Next(); }
int64_t Loader::rows() const { return impl_->rows_; }
int64_t Loader::rows_per_rank() const { return impl_->per_rank_; }
int64_t Loader::batches_per_epoch() const { return impl_->batches_per_epoch_; }
const std::vector<int>& Loader::image_shape() const { return impl_->image_shape_; }
const std::vector<std::string>& Loader::class_names() const { return impl_->class_names_; }
LoaderState Loader::state_dict() const { return impl_->state_dict(); }
void Loader::load_state_dict(const LoaderState& state) { impl_->load_state_dict(state); }
LoaderStats Loader::stats() const { return impl_->stats(); }
std::vector<int64_t> Loader::EpochOrder(int64_t epoch) const { return impl_->EpochOrder(epoch); }

}  // namespace shoal::data
