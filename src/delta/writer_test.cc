#include "delta/writer.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "delta/scan.h"
#include "delta/snapshot.h"
#include "parquet/predicate.h"
#include "parquet/testing.h"
#include "util/error.h"
#include "util/file.h"

namespace shoal::delta {
namespace {

namespace fs = std::filesystem;

// A schema of (id int64, name string) and a batch of ids [first, first + n).
parquet::Schema IdSchema() {
  return parquet::Schema::FromElements(parquet::ToSchemaElements(
      {parquet::WriteField::Primitive("id", parquet::PhysicalType::kInt64, false), parquet::WriteField::String("name")}));
}

parquet::RecordBatch Ids(int64_t first, int64_t n) {
  parquet::RecordBatch b;
  b.num_rows = n;
  b.columns.resize(2);
  b.columns[0].length = b.columns[1].length = n;
  b.columns[0].data.resize(static_cast<size_t>(n) * 8);
  b.columns[1].offsets.push_back(0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t id = first + i;
    std::memcpy(b.columns[0].data.data() + 8 * i, &id, 8);
    std::string name = "row-" + std::to_string(id);
    AppendBytes(b.columns[1].data, name.data(), name.size());
    b.columns[1].offsets.push_back(static_cast<int64_t>(b.columns[1].data.size()));
  }
  return b;
}

std::multiset<int64_t> TableIds(const std::string& table, std::optional<int64_t> version = std::nullopt) {
  std::multiset<int64_t> ids;
  ScanSnapshot(LoadSnapshot(table, version), {}, [&](const parquet::RecordBatch& b) {
    for (int64_t r = 0; r < b.num_rows; ++r) ids.insert(b.columns[0].Value<int64_t>(r));
  });
  return ids;
}

class DeltaWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("shoal_delta_writer_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Table() const { return (dir_ / "table").string(); }
  fs::path dir_;
};

TEST_F(DeltaWriterTest, CreatesThenAppendsAndReadsBack) {
  AppendResult first = AppendToTable(Table(), IdSchema(), {Ids(0, 100)});
  EXPECT_TRUE(first.created);
  EXPECT_EQ(first.version, 0);
  AppendResult second = AppendToTable(Table(), IdSchema(), {Ids(100, 50), Ids(150, 50)});
  EXPECT_FALSE(second.created);
  EXPECT_EQ(second.version, 1);
  EXPECT_EQ(second.rows, 100);
  Snapshot s = LoadSnapshot(Table());
  EXPECT_EQ(s.protocol.min_reader_version, 1);
  EXPECT_EQ(s.protocol.min_writer_version, 2);
  ASSERT_EQ(s.files.size(), 2u);
  ASSERT_TRUE(s.files[0].stats.has_value());
  std::multiset<int64_t> ids = TableIds(Table());
  EXPECT_EQ(ids.size(), 200u);
  EXPECT_EQ(*ids.begin(), 0);
  EXPECT_EQ(*ids.rbegin(), 199);
  // The statistics skip files: ids >= 150 are only in the second file.
  parquet::Predicate p = parquet::Predicate::Parse("id >= 150");
  ScanOptions options;
  options.predicate = &p;
  int64_t batches = 0;
  ScanSnapshot(s, options, [&](const parquet::RecordBatch&) { ++batches; });
  EXPECT_EQ(batches, 1);
}

TEST_F(DeltaWriterTest, OverwriteReplacesTheRowsAndKeepsHistory) {
  AppendToTable(Table(), IdSchema(), {Ids(0, 100)});
  AppendToTable(Table(), IdSchema(), {Ids(100, 100)});
  AppendOptions options;
  options.overwrite = true;
  AppendResult r = AppendToTable(Table(), IdSchema(), {Ids(1000, 5)}, options);
  EXPECT_EQ(r.version, 2);
  std::multiset<int64_t> ids = TableIds(Table());
  EXPECT_EQ(ids, (std::multiset<int64_t>{1000, 1001, 1002, 1003, 1004}));
  Snapshot s = LoadSnapshot(Table());
  EXPECT_EQ(s.tombstones.size(), 2u);
  EXPECT_EQ(TableIds(Table()).size(), 5u);
  int64_t old_rows = 0;  // time travel still sees the old rows
  ScanSnapshot(LoadSnapshot(Table(), 1), {}, [&](const parquet::RecordBatch& b) { old_rows += b.num_rows; });
  EXPECT_EQ(old_rows, 200);
}

TEST_F(DeltaWriterTest, VacuumDeletesOnlyExpiredUnreferencedFiles) {
  AppendToTable(Table(), IdSchema(), {Ids(0, 10)});
  AppendOptions overwrite;
  overwrite.overwrite = true;
  AppendToTable(Table(), IdSchema(), {Ids(100, 10)}, overwrite);
  // Inside the retention period, nothing goes.
  VacuumResult kept = Vacuum(Table(), 1.0);
  EXPECT_TRUE(kept.deleted.empty());
  EXPECT_EQ(kept.kept_for_retention, 1);
  // A dry run lists without deleting; a vacuum with no retention deletes the removed file.
  EXPECT_EQ(Vacuum(Table(), 0, /*dry_run=*/true).deleted.size(), 1u);
  EXPECT_EQ(TableIds(Table(), 0).size(), 10u);
  VacuumResult gone = Vacuum(Table(), 0);
  ASSERT_EQ(gone.deleted.size(), 1u);
  EXPECT_EQ(TableIds(Table()).size(), 10u);  // the latest version still reads
  EXPECT_THROW(TableIds(Table(), 0), Error);  // version 0's file is gone
  EXPECT_TRUE(fs::exists(fs::path(Table()) / "_delta_log" / "00000000000000000000.json"));
}

TEST_F(DeltaWriterTest, CheckpointsEveryTenCommitsAndReadersUseThem) {
  AppendOptions options;
  options.app_id = "job";
  for (int i = 0; i < 25; ++i) {
    options.app_version = i;
    AppendResult r = AppendToTable(Table(), IdSchema(), {Ids(i * 10, 10)}, options);
    EXPECT_EQ(r.checkpointed, i == 10 || i == 20) << i;
    EXPECT_EQ(r.checkpoint_error, "");
  }
  EXPECT_TRUE(fs::exists(fs::path(Table()) / "_delta_log" / "00000000000000000010.checkpoint.parquet"));
  std::vector<uint8_t> last = ReadFile((fs::path(Table()) / "_delta_log" / "_last_checkpoint").string());
  EXPECT_EQ(std::string(last.begin(), last.end()), "{\"size\":24,\"version\":20}");
  Snapshot s = LoadSnapshot(Table());
  EXPECT_EQ(s.checkpoint_version, 20);
  EXPECT_EQ(s.transactions.at("job"), 24);
  // With the commits before the checkpoint gone, the table still reads whole.
  for (int v = 0; v <= 20; ++v) {
    char name[32];
    std::snprintf(name, sizeof(name), "%020d.json", v);
    fs::remove(fs::path(Table()) / "_delta_log" / name);
  }
  std::multiset<int64_t> ids = TableIds(Table());
  ASSERT_EQ(ids.size(), 250u);
  for (int64_t id = 0; id < 250; ++id) EXPECT_EQ(ids.count(id), 1u) << id;
  EXPECT_EQ(LoadSnapshot(Table()).transactions.at("job"), 24);
}

TEST_F(DeltaWriterTest, PartitionedAppendsSplitRowsByPartitionValues) {
  // (id int64, shard int32 nullable): shard = id % 3, and null for id % 5 == 0.
  parquet::Schema schema = parquet::Schema::FromElements(parquet::ToSchemaElements(
      {parquet::WriteField::Primitive("id", parquet::PhysicalType::kInt64, false),
       parquet::WriteField::Primitive("shard", parquet::PhysicalType::kInt32, true)}));
  auto batch = [](int64_t first, int64_t n) {
    parquet::RecordBatch b;
    b.num_rows = n;
    b.columns.resize(2);
    b.columns[0].length = b.columns[1].length = n;
    for (int64_t i = first; i < first + n; ++i) {
      AppendBytes(b.columns[0].data, &i, 8);
      int32_t shard = static_cast<int32_t>(i % 3);
      AppendBytes(b.columns[1].data, &shard, 4);
      b.columns[1].validity.push_back(i % 5 != 0);
    }
    return b;
  };
  AppendOptions options;
  options.partition_columns = {"shard"};
  AppendResult first = AppendToTable(Table(), schema, {batch(0, 30)}, options);
  EXPECT_EQ(first.files, 4);  // shards 0, 1, 2 and null
  EXPECT_TRUE(fs::exists(fs::path(Table()) / "shard=1"));
  EXPECT_TRUE(fs::exists(fs::path(Table()) / "shard=__HIVE_DEFAULT_PARTITION__"));
  AppendResult second = AppendToTable(Table(), schema, {batch(30, 30)});  // the table's partitioning
  EXPECT_EQ(second.files, 4);
  Snapshot s = LoadSnapshot(Table());
  EXPECT_EQ(s.metadata.partition_columns, std::vector<std::string>{"shard"});
  std::map<int64_t, std::optional<int32_t>> rows;
  ScanSnapshot(s, {}, [&](const parquet::RecordBatch& b) {
    for (int64_t r = 0; r < b.num_rows; ++r) {
      rows[b.columns[0].Value<int64_t>(r)] =
          b.columns[1].IsValid(r) ? std::optional<int32_t>(b.columns[1].Value<int32_t>(r)) : std::nullopt;
    }
  });
  ASSERT_EQ(rows.size(), 60u);
  for (const auto& [id, shard] : rows) {
    if (id % 5 == 0) {
      EXPECT_FALSE(shard.has_value()) << id;
    } else {
      EXPECT_EQ(shard, std::optional<int32_t>(static_cast<int32_t>(id % 3))) << id;
    }
  }
  // Partition values skip files: only the two shard=2 files are read.
  parquet::Predicate p = parquet::Predicate::Parse("shard = 2");
  ScanOptions scan;
  scan.predicate = &p;
  int64_t batches = 0, matched = 0;
  ScanSnapshot(s, scan, [&](const parquet::RecordBatch& b) {
    ++batches;
    matched += b.num_rows;
  });
  EXPECT_EQ(batches, 2);
  EXPECT_EQ(matched, 16);  // ids with id % 3 == 2 and id % 5 != 0, below 60
}

TEST_F(DeltaWriterTest, DuckDBReadsTheDataFilesShoalWrites) {
  AppendOptions options;
  options.rows_per_file = 500;
  AppendToTable(Table(), IdSchema(), {Ids(0, 500), Ids(500, 500)}, options);
  Snapshot s = LoadSnapshot(Table());
  ASSERT_EQ(s.files.size(), 2u);
  for (const AddFile& f : s.files) {
    std::string path = DataFilePath(s, f);
    parquet::testing::OracleRows duck = parquet::testing::OracleRead(path);
    EXPECT_EQ(parquet::testing::CompareRows(duck.rows, parquet::testing::ShoalRows(path), {}), "") << path;
    EXPECT_EQ(duck.rows.size(), 500u);
  }
}

TEST_F(DeltaWriterTest, TimeTravelByTimestampUsesCommitTimes) {
  for (int i = 0; i < 3; ++i) AppendToTable(Table(), IdSchema(), {Ids(i * 10, 10)});
  // Commit times are the commit files' modification times: set them one hour apart.
  auto base = std::chrono::file_clock::now() - std::chrono::hours(10);
  for (int v = 0; v < 3; ++v) {
    char name[32];
    std::snprintf(name, sizeof(name), "%020d.json", v);
    fs::last_write_time(fs::path(Table()) / "_delta_log" / name, base + std::chrono::hours(v));
  }
  auto ms = [](auto t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::file_clock::to_sys(t).time_since_epoch()).count();
  };
  EXPECT_EQ(VersionAtTimestamp(Table(), ms(base + std::chrono::minutes(90))), 1);
  EXPECT_EQ(VersionAtTimestamp(Table(), ms(base + std::chrono::hours(5))), 2);
  EXPECT_EQ(VersionAtTimestamp(Table(), ms(base)), 0);
  EXPECT_THROW(VersionAtTimestamp(Table(), ms(base - std::chrono::minutes(1))), Error);
}

TEST_F(DeltaWriterTest, ExactlyOnceWithAppIdAndVersion) {
  AppendOptions options;
  options.app_id = "ingest";
  options.app_version = 7;
  EXPECT_FALSE(AppendToTable(Table(), IdSchema(), {Ids(0, 10)}, options).duplicate);
  AppendResult retry = AppendToTable(Table(), IdSchema(), {Ids(0, 10)}, options);
  EXPECT_TRUE(retry.duplicate);
  EXPECT_EQ(TableIds(Table()).size(), 10u);
  // The skipped retry left no data file behind.
  int64_t parquet_files = 0;
  for (const auto& entry : fs::directory_iterator(Table())) parquet_files += entry.path().extension() == ".parquet";
  EXPECT_EQ(parquet_files, 1);
}

TEST_F(DeltaWriterTest, DataWithAnotherSchemaIsRejectedAndLeavesNothing) {
  AppendToTable(Table(), IdSchema(), {Ids(0, 10)});
  parquet::Schema other = parquet::Schema::FromElements(
      parquet::ToSchemaElements({parquet::WriteField::Primitive("id", parquet::PhysicalType::kInt32, false)}));
  parquet::RecordBatch batch;
  batch.num_rows = 1;
  batch.columns.resize(1);
  batch.columns[0].length = 1;
  batch.columns[0].data.resize(4, 0);
  try {
    AppendToTable(Table(), other, {batch});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("differs from the schema of table"), std::string::npos) << e.what();
  }
  EXPECT_EQ(LoadSnapshot(Table()).version, 0);
  int64_t parquet_files = 0;
  for (const auto& entry : fs::directory_iterator(Table())) parquet_files += entry.path().extension() == ".parquet";
  EXPECT_EQ(parquet_files, 1);
}

TEST_F(DeltaWriterTest, FourProcessesAppendingConcurrentlyLoseNothing) {
  constexpr int kProcesses = 4, kAppends = 25, kRows = 10;
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int status = 0;
      try {
        for (int a = 0; a < kAppends; ++a) AppendToTable(Table(), IdSchema(), {Ids((p * kAppends + a) * kRows, kRows)});
      } catch (const std::exception& e) {
        std::fprintf(stderr, "child %d: %s\n", p, e.what());
        status = 1;
      }
      ::_exit(status);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  EXPECT_EQ(LoadSnapshot(Table()).version, kProcesses * kAppends - 1);
  std::multiset<int64_t> ids = TableIds(Table());
  ASSERT_EQ(ids.size(), static_cast<size_t>(kProcesses * kAppends * kRows));
  for (int64_t id = 0; id < kProcesses * kAppends * kRows; ++id) EXPECT_EQ(ids.count(id), 1u) << id;
}

TEST_F(DeltaWriterTest, KillDuringAppendsLeavesAReadableTable) {
  AppendToTable(Table(), IdSchema(), {Ids(0, 10)});
  for (int round = 0; round < 3; ++round) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      for (int a = 1;; ++a) AppendToTable(Table(), IdSchema(), {Ids(a * 1000 + round * 1000000, 1000)});
    }
    ::usleep(30000 + round * 20000);
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    // Every commit is whole: the snapshot loads, every file it names exists, ids are unique.
    Snapshot s = LoadSnapshot(Table());
    for (const AddFile& f : s.files) EXPECT_TRUE(fs::exists(DataFilePath(s, f))) << f.path;
    std::multiset<int64_t> ids = TableIds(Table());
    EXPECT_EQ(std::set<int64_t>(ids.begin(), ids.end()).size(), ids.size());
  }
}

}  // namespace
}  // namespace shoal::delta
