// Single-thread full-decode scan of a Parquet file: every column of every row group, decoded
// into ColumnVectors. Prints one JSON line.
//   shoal_parquet_scan FILE [--repeat N] [--no-verify]
// --no-verify skips page CRC checks (DuckDB does not check them).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "parquet/reader.h"
#include "util/error.h"
#include "util/memory.h"

namespace {

size_t DecodedBytes(const shoal::parquet::ColumnVector& c) {
  size_t bytes = c.validity.size() + c.data.size() + c.offsets.size() * sizeof(int64_t);
  for (const auto& child : c.children) bytes += DecodedBytes(child);
  return bytes;
}

long PeakRssBytes() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss * 1024L;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE [--repeat N]\n", argv[0]);
    return 2;
  }
  std::string path = argv[1];
  int repeat = 3;
  shoal::parquet::ReaderOptions options;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) repeat = std::max(1, std::atoi(argv[++i]));
    if (std::strcmp(argv[i], "--no-verify") == 0) options.verify_checksums = false;
  }
  shoal::TuneAllocatorForBatches();  // as the shoal command does
  try {
    std::vector<double> seconds;
    size_t max_group_bytes = 0;
    int64_t rows = 0;
    for (int r = 0; r < repeat; ++r) {
      auto start = std::chrono::steady_clock::now();
      auto reader = shoal::parquet::FileReader::Open(path, options);
      rows = 0;
      for (int g = 0; g < reader->num_row_groups(); ++g) {
        shoal::parquet::RecordBatch batch = reader->ReadRowGroup(g);
        rows += batch.num_rows;
        size_t bytes = 0;
        for (const auto& c : batch.columns) bytes += DecodedBytes(c);
        max_group_bytes = std::max(max_group_bytes, bytes);
      }
      seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(seconds.begin(), seconds.end());
    std::printf(
        "{\"engine\":\"shoal%s\",\"file\":\"%s\",\"rows\":%lld,\"seconds_best\":%.6f,\"seconds_median\":%.6f,"
        "\"max_row_group_decoded_bytes\":%zu,\"peak_rss_bytes\":%ld}\n",
        options.verify_checksums ? "" : " (no CRC check)", path.c_str(), static_cast<long long>(rows), seconds.front(), seconds[seconds.size() / 2], max_group_bytes,
        PeakRssBytes());
  } catch (const shoal::Error& e) {
    std::fprintf(stderr, "shoal_parquet_scan: %s\n", e.what());
    return 1;
  }
  return 0;
}
