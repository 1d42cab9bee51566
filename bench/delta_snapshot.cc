// Snapshot load time of Delta tables with long logs and many files. Prints a markdown table.
//   shoal_delta_snapshot DATA_DIR
// Tables (generated into DATA_DIR when missing; data files are not needed to load a snapshot):
//   commits-10000            10,000 commits of one add each, no checkpoint
//   commits-10000-checkpoint the same log, with a checkpoint at version 9,990
//   files-10000, files-100000 one commit adding that many files, with a checkpoint at version 1
// Loading must scale with the log after the last checkpoint, not the history, and linearly with
// the number of live files.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "delta/checkpoint.h"
#include "delta/snapshot.h"
#include "util/error.h"
#include "util/memory.h"

namespace fs = std::filesystem;

namespace {

const char* kProtocol = R"({"protocol":{"minReaderVersion":1,"minWriterVersion":2}})";
const char* kMetadata =
    R"({"metaData":{"id":"bench","format":{"provider":"parquet","options":{}},"schemaString":"{\"type\":\"struct\",\"fields\":[{\"name\":\"id\",\"type\":\"long\",\"nullable\":true,\"metadata\":{}}]}","partitionColumns":[],"configuration":{},"createdTime":0}})";

std::string Add(int64_t i) {
  char line[512];
  std::snprintf(line, sizeof(line),
                R"({"add":{"path":"part-%08lld.parquet","partitionValues":{},"size":1000,"modificationTime":0,"dataChange":true,"stats":"{\"numRecords\":10,\"minValues\":{\"id\":%lld},\"maxValues\":{\"id\":%lld},\"nullCount\":{\"id\":0}}"}})",
                static_cast<long long>(i), static_cast<long long>(i * 10), static_cast<long long>(i * 10 + 9));
  return line;
}

void WriteCommit(const fs::path& table, int64_t version, const std::string& body) {
  char name[32];
  std::snprintf(name, sizeof(name), "%020lld.json", static_cast<long long>(version));
  std::ofstream(table / "_delta_log" / name) << body;
}

void MakeLongLog(const fs::path& table, int64_t commits) {
  fs::create_directories(table / "_delta_log");
  WriteCommit(table, 0, std::string(kProtocol) + "\n" + kMetadata + "\n" + Add(0) + "\n");
  for (int64_t v = 1; v < commits; ++v) WriteCommit(table, v, Add(v) + "\n");
}

void MakeManyFiles(const fs::path& table, int64_t files) {
  fs::create_directories(table / "_delta_log");
  WriteCommit(table, 0, std::string(kProtocol) + "\n" + kMetadata + "\n");
  std::string body;
  for (int64_t i = 0; i < files; ++i) body += Add(i) + "\n";
  WriteCommit(table, 1, body);
}

double LoadSeconds(const std::string& table, int64_t* files, int repeat = 3) {
  double best = 1e30;
  for (int r = 0; r < repeat; ++r) {
    auto start = std::chrono::steady_clock::now();
    shoal::delta::Snapshot s = shoal::delta::LoadSnapshot(table);
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    *files = static_cast<int64_t>(s.files.size());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DATA_DIR\n", argv[0]);
    return 2;
  }
  shoal::TuneAllocatorForBatches();
  fs::path data = argv[1];
  try {
    auto ensure = [&](const std::string& name, auto make) {
      fs::path table = data / name;
      if (!fs::exists(table / "_delta_log")) {
        std::fprintf(stderr, "generating %s\n", table.c_str());
        make(table);
      }
      return table.string();
    };
    std::string plain = ensure("commits-10000", [](const fs::path& t) { MakeLongLog(t, 10000); });
    std::string checkpointed = ensure("commits-10000-checkpoint", [](const fs::path& t) {
      MakeLongLog(t, 10000);
      shoal::delta::WriteCheckpoint(t.string(), 9990);
    });
    std::string files10k = ensure("files-10000", [](const fs::path& t) {
      MakeManyFiles(t, 10000);
      shoal::delta::WriteCheckpoint(t.string(), 1);
    });
    std::string files100k = ensure("files-100000", [](const fs::path& t) {
      MakeManyFiles(t, 100000);
      shoal::delta::WriteCheckpoint(t.string(), 1);
    });
    int64_t n1, n2, n3, n4;
    double t_plain = LoadSeconds(plain, &n1);
    double t_checkpoint = LoadSeconds(checkpointed, &n2);
    double t_10k = LoadSeconds(files10k, &n3);
    double t_100k = LoadSeconds(files100k, &n4);
    std::printf("| table | live files | commits replayed | load s (best of 3) |\n|---|---:|---:|---:|\n");
    std::printf("| 10,000 commits, no checkpoint | %lld | 10000 | %.3f |\n", static_cast<long long>(n1), t_plain);
    std::printf("| 10,000 commits, checkpoint at 9,990 | %lld | 9 | %.3f |\n", static_cast<long long>(n2), t_checkpoint);
    std::printf("| 10,000 files in a checkpoint | %lld | 0 | %.3f |\n", static_cast<long long>(n3), t_10k);
    std::printf("| 100,000 files in a checkpoint | %lld | 0 | %.3f |\n", static_cast<long long>(n4), t_100k);
    std::printf("\nCheckpoint speed-up on the 10,000-commit log: %.1fx. 100,000 files / 10,000 files: %.1fx the time for 10x the files.\n",
                t_plain / t_checkpoint, t_100k / t_10k);
  } catch (const shoal::Error& e) {
    std::fprintf(stderr, "shoal_delta_snapshot: %s\n", e.what());
    return 1;
  }
  return 0;
}
