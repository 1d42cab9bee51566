// libFuzzer target: any bytes as a Parquet file, read completely (footer, schema, every page of
// every column, assembly and JSON rendering). Build and run with `make fuzz-parquet`.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "parquet/reader.h"
#include "parquet/value_format.h"
#include "util/error.h"
#include "util/file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shoal::parquet;
  try {
    auto source = std::make_unique<shoal::MemorySource>(
        "fuzz.parquet", std::string(reinterpret_cast<const char*>(data), size));
    auto reader = FileReader::Open(std::move(source));
    std::string line;
    for (int g = 0; g < reader->num_row_groups(); ++g) {
      RecordBatch batch = reader->ReadRowGroup(g);
      for (int64_t r = 0; r < batch.num_rows; ++r) {
        line.clear();
        AppendJsonRow(batch, r, &line);
      }
    }
  } catch (const shoal::Error&) {
    // Expected for malformed input: any other exception escapes and is reported as a crash.
  }
  return 0;
}
