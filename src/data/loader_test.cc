#include "data/loader.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "data/ingest.h"
#include "data/testing.h"
#include "delta/scan.h"
#include "delta/snapshot.h"
#include "delta/writer.h"
#include "util/error.h"

namespace shoal::data {
namespace {

namespace fs = std::filesystem;

constexpr int kSide = 8;

class LoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("shoal_loader_test_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // See testing::MakeImageTable: image i encodes i in its first two pixels; label i % 10, id i.
  std::string MakeTable(const std::string& name, int rows, int rows_per_file) {
    return testing::MakeImageTable(dir_, name, rows, rows_per_file, kSide);
  }

  LoaderOptions Options(const std::string& table) {
    LoaderOptions options;
    options.table = table;
    options.batch_size = 16;
    options.seed = 7;
    options.transform.normalize = false;
    return options;
  }

  // The row an image encodes (see MakeTable), from its first two pixels in [0, 1].
  static int64_t IdOf(const Batch& batch, int64_t i, int flip = 0) {
    const float* image = batch.images.data() + i * kSide * kSide;
    int x0 = flip ? kSide - 1 : 0, x1 = flip ? kSide - 2 : 1;
    return std::lround(image[x0] * 255) + 256 * std::lround(image[x1] * 255);
  }

  static std::vector<Batch> Drain(Loader& loader) {
    std::vector<Batch> out;
    while (auto batch = loader.Next()) out.push_back(std::move(*batch));
    return out;
  }

  fs::path dir_;
};

TEST_F(LoaderTest, DecodesEveryRowWithItsLabelAndId) {
  std::string table = MakeTable("t", 100, 30);
  LoaderOptions options = Options(table);
  options.shuffle = false;
  Loader loader(options);
  EXPECT_EQ(loader.rows(), 100);
  EXPECT_EQ(loader.batches_per_epoch(), 7);
  EXPECT_EQ(loader.image_shape(), (std::vector<int>{1, kSide, kSide}));
  EXPECT_EQ(loader.class_names().size(), 10u);
  std::vector<Batch> batches = Drain(loader);
  ASSERT_EQ(batches.size(), 7u);
  EXPECT_EQ(batches.back().size, 4);
  int64_t next = 0;
  for (const Batch& b : batches) {
    EXPECT_EQ(b.shape, (std::vector<int64_t>{b.size, 1, kSide, kSide}));
    for (int64_t i = 0; i < b.size; ++i) {
      EXPECT_EQ(b.ids[i], next);
      EXPECT_EQ(IdOf(b, i), next);
      EXPECT_EQ(b.labels[i], next % 10);
      ++next;
    }
  }
  EXPECT_EQ(next, 100);
  EXPECT_EQ(loader.stats().samples, 100);
}

TEST_F(LoaderTest, SameSeedSameOrderNewEpochNewOrder) {
  std::string table = MakeTable("t", 200, 50);
  LoaderOptions options = Options(table);
  options.num_epochs = 2;
  Loader a(options), b(options);
  EXPECT_EQ(a.EpochOrder(0), b.EpochOrder(0));
  EXPECT_NE(a.EpochOrder(0), a.EpochOrder(1));
  std::vector<int64_t> sorted = a.EpochOrder(1);
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 200; ++i) ASSERT_EQ(sorted[i], i);
  options.seed = 8;
  Loader c(options);
  EXPECT_NE(a.EpochOrder(0), c.EpochOrder(0));
  // What the batches hold follows the order, whatever the threads did.
  std::vector<int64_t> seen;
  for (const Batch& batch : Drain(a)) {
    for (int64_t i = 0; i < batch.size; ++i) {
      EXPECT_EQ(IdOf(batch, i), batch.ids[i]);
      seen.push_back(batch.ids[i]);
    }
  }
  std::vector<int64_t> expected = b.EpochOrder(0);
  std::vector<int64_t> second = b.EpochOrder(1);
  expected.insert(expected.end(), second.begin(), second.end());
  EXPECT_EQ(seen, expected);
}

TEST_F(LoaderTest, RanksGetEqualBatchCountsDisjointSharesCoveringTheTable) {
  const int rows = 101;
  for (int files : {1, 3, 7}) {
    std::string table = MakeTable("t" + std::to_string(files), rows, (rows + files - 1) / files);
    for (int world = 1; world <= 8; ++world) {
      for (Remainder remainder : {Remainder::kPad, Remainder::kDrop}) {
        std::multiset<int64_t> all;
        int64_t batches = -1;
        for (int rank = 0; rank < world; ++rank) {
          LoaderOptions options = Options(table);
          options.world_size = world;
          options.rank = rank;
          options.remainder = remainder;
          options.batch_size = 5;
          options.threads = 1;
          Loader loader(options);
          std::vector<Batch> got = Drain(loader);
          if (batches < 0) batches = static_cast<int64_t>(got.size());
          EXPECT_EQ(static_cast<int64_t>(got.size()), batches) << files << " files, world " << world << " rank " << rank;
          EXPECT_EQ(static_cast<int64_t>(got.size()), loader.batches_per_epoch());
          for (const Batch& b : got) {
            for (int64_t i = 0; i < b.size; ++i) all.insert(b.ids[i]);
          }
        }
        std::set<int64_t> distinct(all.begin(), all.end());
        SCOPED_TRACE(std::to_string(files) + " files, world " + std::to_string(world));
        if (remainder == Remainder::kPad) {
          EXPECT_EQ(distinct.size(), static_cast<size_t>(rows));  // the union is the table
          int64_t per_rank = (rows + world - 1) / world;
          EXPECT_EQ(static_cast<int64_t>(all.size()), per_rank * world);  // padding only
          EXPECT_LT(all.size() - distinct.size(), static_cast<size_t>(world));
        } else {
          EXPECT_EQ(all.size(), distinct.size());  // disjoint
          EXPECT_EQ(static_cast<int64_t>(all.size()), rows / world * world);
        }
      }
    }
  }
}

TEST_F(LoaderTest, SplitRemainderPartitionsTheTableExactly) {
  const int rows = 101;
  std::string table = MakeTable("split", rows, 30);
  for (int world = 1; world <= 8; ++world) {
    std::vector<int64_t> all;
    for (int rank = 0; rank < world; ++rank) {
      LoaderOptions options = Options(table);
      options.world_size = world;
      options.rank = rank;
      options.remainder = Remainder::kSplit;
      options.batch_size = 5;
      options.threads = 1;
      Loader loader(options);
      int64_t share = (rank + 1) * rows / world - rank * rows / world;
      EXPECT_EQ(loader.rows_per_rank(), share);
      for (const Batch& b : Drain(loader)) all.insert(all.end(), b.ids.begin(), b.ids.begin() + b.size);
    }
    std::sort(all.begin(), all.end());
    SCOPED_TRACE("world " + std::to_string(world));
    ASSERT_EQ(all.size(), static_cast<size_t>(rows));  // every row once: no padding, nothing dropped
    EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end());
  }
}

TEST_F(LoaderTest, ResumedLoaderYieldsExactlyTheRemainingSequence) {
  std::string table = MakeTable("t", 150, 40);
  LoaderOptions options = Options(table);
  options.num_epochs = 3;
  options.transform.horizontal_flip = true;
  options.transform.random_resized_crop = 6;
  Loader whole(options);
  std::vector<Batch> expected = Drain(whole);
  ASSERT_EQ(expected.size(), 30u);
  for (size_t stop : {size_t{0}, size_t{4}, size_t{10}, size_t{17}, size_t{29}}) {
    LoaderState state;
    {
      Loader first(options);
      for (size_t i = 0; i < stop; ++i) ASSERT_TRUE(first.Next().has_value());
      state = LoaderState::FromJson(first.state_dict().ToJson());
    }  // stopped mid-prefetch
    Loader resumed(options);
    resumed.load_state_dict(state);
    std::vector<Batch> rest = Drain(resumed);
    ASSERT_EQ(rest.size(), expected.size() - stop) << "stopped after " << stop;
    for (size_t i = 0; i < rest.size(); ++i) {
      const Batch& want = expected[stop + i];
      EXPECT_EQ(rest[i].epoch, want.epoch);
      EXPECT_EQ(rest[i].rows, want.rows);
      EXPECT_TRUE(std::equal(rest[i].images.begin(), rest[i].images.end(), want.images.begin(), want.images.end()))
          << "batch " << stop + i << " differs in its pixels";
    }
  }
  // A state from another world size is refused.
  LoaderState other = whole.state_dict();
  other.world_size = 2;
  Loader again(options);
  EXPECT_THROW(again.load_state_dict(other), Error);
}

TEST_F(LoaderTest, ThreadsAndMemoryBoundDoNotChangeTheSequence) {
  std::string table = MakeTable("t", 120, 25);
  LoaderOptions options = Options(table);
  options.transform.horizontal_flip = true;
  options.threads = 1;
  Loader one(options);
  std::vector<Batch> a = Drain(one);
  options.threads = 3;
  options.prefetch = 5;
  options.max_inflight_bytes = 1;  // every batch waits for the one before
  Loader three(options);
  std::vector<Batch> b = Drain(three);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].ids, b[i].ids);
    EXPECT_TRUE(std::equal(a[i].images.begin(), a[i].images.end(), b[i].images.begin(), b[i].images.end()));
  }
}

TEST_F(LoaderTest, ACachedLoaderReturnsTheSameBatchesAndReadsTheTableOnce) {
  std::string table = MakeTable("t", 150, 20);  // 8 row groups
  LoaderOptions options = Options(table);
  options.num_epochs = 4;
  options.rank = 1;
  options.world_size = 2;  // a rank's share moves between epochs: every row gets cached
  options.threads = 3;
  options.prefetch = 6;    // workers run into the next epoch while rows are being written
  Loader plain(options);
  std::vector<Batch> a = Drain(plain);
  options.cache = true;
  Loader cached(options);
  std::vector<Batch> b;
  int64_t groups_after_first_epochs = 0;
  while (auto batch = cached.Next()) {
    b.push_back(std::move(*batch));
    if (b.back().epoch == 2 && b.back().index == 0) groups_after_first_epochs = cached.stats().row_groups_read;
  }
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].ids, b[i].ids) << "batch " << i;
    EXPECT_EQ(a[i].labels, b[i].labels) << "batch " << i;
    EXPECT_TRUE(std::equal(a[i].images.begin(), a[i].images.end(), b[i].images.begin(), b[i].images.end())) << "batch " << i;
  }
  // Epochs 0 and 1 cover the table (both halves); later epochs read nothing more.
  EXPECT_GT(groups_after_first_epochs, 0);
  EXPECT_EQ(cached.stats().row_groups_read, groups_after_first_epochs);
  EXPECT_LT(cached.stats().row_groups_read, plain.stats().row_groups_read);

  options.transform.horizontal_flip = true;
  EXPECT_THROW(Loader{options}, Error);  // a random transform cannot be cached
  options.transform.horizontal_flip = false;
  options.cache_max_bytes = 1000;
  try {
    Loader too_big(options);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cache_max_bytes"), std::string::npos) << e.what();
  }
}

TEST_F(LoaderTest, PredicateSelectsRowsAndEndlessEpochsKeepGoing) {
  std::string table = MakeTable("t", 100, 30);
  LoaderOptions options = Options(table);
  options.where = "id >= 90 or label = 3";
  options.num_epochs = -1;
  options.batch_size = 7;
  Loader loader(options);
  EXPECT_EQ(loader.rows(), 19);  // 90..99, and 3, 13, ..., 83
  for (int i = 0; i < 20; ++i) {
    std::optional<Batch> batch = loader.Next();
    ASSERT_TRUE(batch.has_value());
    for (int64_t id : batch->ids) EXPECT_TRUE(id >= 90 || id % 10 == 3) << id;
  }
  EXPECT_EQ(loader.state_dict().epoch, 6);  // 3 batches an epoch
}

TEST_F(LoaderTest, CorruptImageIsAnErrorNamingTableFileAndRowOrIsSkipped) {
  std::string source = MakeTable("good", 40, 40);
  // Copy the table with the image of id 13 cut short.
  delta::Snapshot snapshot = delta::LoadSnapshot(source);
  std::vector<parquet::RecordBatch> batches;
  delta::ScanSnapshot(snapshot, {}, [&](const parquet::RecordBatch& b) { batches.push_back(b); });
  ASSERT_EQ(batches.size(), 1u);
  parquet::ColumnVector& image = batches[0].columns[0];
  for (int64_t r = 0; r < batches[0].num_rows; ++r) {
    if (batches[0].columns[3].Value<int64_t>(r) == 13) {
      for (int64_t k = image.offsets[r] + 20; k < image.offsets[r + 1]; ++k) image.data[k] = 0;
    }
  }
  delta::AppendOptions append;
  append.configuration = snapshot.metadata.configuration;
  std::string bad = (dir_ / "bad").string();
  delta::AppendToTable(bad, *batches[0].schema, batches, append);

  LoaderOptions options = Options(bad);
  options.shuffle = false;
  Loader strict(options);
  try {
    Drain(strict);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("table '" + bad + "'"), std::string::npos) << what;
    EXPECT_NE(what.find("data file '"), std::string::npos) << what;
    EXPECT_NE(what.find("row id 13"), std::string::npos) << what;
    EXPECT_NE(what.find("PNG"), std::string::npos) << what;
  }
  options.on_corrupt = OnCorrupt::kSkip;
  Loader lenient(options);
  int64_t samples = 0;
  for (const Batch& b : Drain(lenient)) {
    samples += b.size;
    EXPECT_EQ(b.ids.size(), static_cast<size_t>(b.size));
    for (int64_t id : b.ids) EXPECT_NE(id, 13);
  }
  EXPECT_EQ(samples, 39);
  EXPECT_EQ(lenient.stats().skipped, 1);
}

TEST_F(LoaderTest, ACutJpegIsFoundInEveryEpochWhateverItsCrop) {
  // With a crop the loader decodes only the part of each JPEG the crop reads, yet still reads the
  // whole file: an image whose last rows are missing is an error, or a skip, in every epoch,
  // wherever its crop lies.
  std::string source = testing::MakeImageTable(dir_, "good", 40, 40, 64, "jpeg");
  delta::Snapshot snapshot = delta::LoadSnapshot(source);
  std::vector<parquet::RecordBatch> batches;
  delta::ScanSnapshot(snapshot, {}, [&](const parquet::RecordBatch& b) { batches.push_back(b); });
  ASSERT_EQ(batches.size(), 1u);
  // Row 13 becomes a detailed 64x64 picture (so that its last rows have data of their own), cut
  // at 85% of its bytes.
  Image picture{64, 64, 1, {}};
  for (int y = 0; y < 64; ++y) {
    for (int x = 0; x < 64; ++x) picture.pixels.push_back(static_cast<uint8_t>((x * 37 + y * 91 + x * y) % 251));
  }
  std::string cut = EncodeJpeg(picture, 90);
  cut.resize(cut.size() * 85 / 100);
  parquet::ColumnVector& image = batches[0].columns[0];
  std::vector<std::string> bytes;
  for (int64_t r = 0; r < batches[0].num_rows; ++r) {
    bytes.emplace_back(batches[0].columns[3].Value<int64_t>(r) == 13 ? cut : std::string(image.Bytes(r)));
  }
  image.data.clear();
  image.offsets.assign(1, 0);
  for (const std::string& b : bytes) {
    image.data.insert(image.data.end(), b.begin(), b.end());
    image.offsets.push_back(static_cast<int64_t>(image.data.size()));
  }
  delta::AppendOptions append;
  append.configuration = snapshot.metadata.configuration;
  std::string bad = (dir_ / "bad").string();
  delta::AppendToTable(bad, *batches[0].schema, batches, append);

  LoaderOptions options = Options(bad);
  options.transform.random_resized_crop = 16;
  options.transform.horizontal_flip = true;
  for (uint64_t seed = 0; seed < 12; ++seed) {
    options.seed = seed;
    Loader strict(options);
    try {
      Drain(strict);
      FAIL() << "expected an error, seed " << seed;
    } catch (const Error& e) {
      std::string what = e.what();
      EXPECT_NE(what.find("row id 13"), std::string::npos) << what;
      EXPECT_NE(what.find("JPEG"), std::string::npos) << what;
    }
  }
  options.on_corrupt = OnCorrupt::kSkip;
  options.num_epochs = 3;
  Loader lenient(options);
  int64_t samples = 0;
  for (const Batch& b : Drain(lenient)) samples += b.size;
  EXPECT_EQ(samples, 3 * 39);
  EXPECT_EQ(lenient.stats().skipped, 3);
}

TEST_F(LoaderTest, LaterEpochsOfAJpegTableGiveWhatAFreshLoaderGives) {
  // From its second epoch on, a loader decodes a JPEG it has already decoded whole only down to
  // its crop, and keeps a table that fits in memory loaded between epochs. A fresh loader,
  // resumed at each epoch, decodes every image whole and reads the table again: the same batches.
  std::string table = testing::MakeImageTable(dir_, "jpeg", 60, 60, 64, "jpeg");  // one row group
  LoaderOptions options = Options(table);
  options.num_epochs = 3;
  options.transform.random_resized_crop = 16;
  options.transform.horizontal_flip = true;
  options.threads = 3;
  Loader loader(options);
  std::vector<Batch> all = Drain(loader);
  ASSERT_EQ(all.size(), 12u);
  EXPECT_EQ(loader.stats().row_groups_read, 1);
  for (int64_t epoch = 1; epoch < 3; ++epoch) {
    Loader fresh(options);
    LoaderState state = loader.state_dict();
    state.epoch = epoch;
    state.position = 0;
    fresh.load_state_dict(state);
    for (int64_t i = 0; i < 4; ++i) {
      std::optional<Batch> b = fresh.Next();
      ASSERT_TRUE(b.has_value());
      const Batch& want = all[static_cast<size_t>(epoch * 4 + i)];
      ASSERT_EQ(b->epoch, epoch);
      EXPECT_EQ(b->rows, want.rows);
      EXPECT_TRUE(std::equal(b->images.begin(), b->images.end(), want.images.begin(), want.images.end()))
          << "epoch " << epoch << " batch " << i;
    }
  }
}

TEST_F(LoaderTest, CountsTheTimeDecodeThreadsWaitForRoom) {
  std::string table = MakeTable("t", 64, 64);
  LoaderOptions options = Options(table);
  options.threads = 2;
  options.prefetch = 1;
  Loader loader(options);
  ASSERT_TRUE(loader.Next().has_value());
  // The next batch is decoded in well under this time; then both workers wait for room (their
  // waits are counted as they end, when the batches are taken).
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  EXPECT_EQ(Drain(loader).size(), 3u);
  EXPECT_GT(loader.stats().worker_wait_seconds, 0.1);
}

TEST(BufferPoolTest, ReusesTheSmallestFittingBufferButNotOneTwiceTooLarge) {
  BufferPool pool(4);
  size_t big_capacity = 0, small_capacity = 0, capacity = 0;
  AlignedFloats big = pool.Take(1000, &big_capacity);
  AlignedFloats small = pool.Take(600, &small_capacity);
  const float* big_data = big.get();
  const float* small_data = small.get();
  pool.Give(std::move(big), big_capacity);
  pool.Give(std::move(small), small_capacity);
  // 550 fits both: the smaller is taken.
  AlignedFloats a = pool.Take(550, &capacity);
  EXPECT_EQ(a.get(), small_data);
  EXPECT_EQ(capacity, 600u);
  // 100 fits the big one, which is more than twice too large: a new buffer.
  AlignedFloats b = pool.Take(100, &capacity);
  EXPECT_NE(b.get(), big_data);
  EXPECT_EQ(capacity, 100u);
  AlignedFloats c = pool.Take(900, &capacity);
  EXPECT_EQ(c.get(), big_data);
}

TEST_F(LoaderTest, BadOptionsAndTablesAreClearErrors) {
  std::string table = MakeTable("t", 5, 5);
  LoaderOptions options = Options(table);
  options.world_size = 8;
  options.remainder = Remainder::kDrop;
  EXPECT_THROW(Loader{options}, Error);  // 5 rows, 8 ranks, nothing to give each
  options = Options(table);
  options.rank = 3;
  EXPECT_THROW(Loader{options}, Error);
  options = Options(table);
  options.image_column = "nope";
  try {
    Loader loader(options);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no column 'nope'"), std::string::npos) << e.what();
  }
  options = Options((dir_ / "missing").string());
  EXPECT_THROW(Loader{options}, Error);
  EXPECT_THROW(LoaderState::FromJson("{\"epoch\": 1}"), Error);
}

TEST_F(LoaderTest, NormalizesWithTheTableDescriptionByDefault) {
  std::string table = MakeTable("t", 10, 10);
  LoaderOptions options = Options(table);
  options.transform.normalize = true;
  options.shuffle = false;
  Loader loader(options);
  delta::Snapshot snapshot = delta::LoadSnapshot(table);
  nlohmann::json decode = nlohmann::json::parse(snapshot.metadata.configuration.at(kDecodeKey));
  float mean = decode["mean"][0].get<float>(), stdev = decode["std"][0].get<float>();
  std::optional<Batch> batch = loader.Next();
  ASSERT_TRUE(batch.has_value());
  // Pixel (2, 2) of every image is 100.
  EXPECT_NEAR(batch->images[2 * kSide + 2], (100 / 255.0f - mean) / stdev, 1e-5);
}

}  // namespace
}  // namespace shoal::data
