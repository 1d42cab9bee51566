// Page compression codecs: SNAPPY, GZIP, BROTLI, ZSTD, LZ4 (Hadoop framing and raw), LZ4_RAW.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "parquet/types.h"

namespace shoal::parquet {

/// Decompresses `input` into exactly `output_size` bytes at `output`. Throws InvalidError when
/// the data is corrupt or decompresses to another size, UnsupportedError for LZO and codecs this
/// reader does not know.
void Decompress(Codec codec, const uint8_t* input, size_t input_size, uint8_t* output,
                size_t output_size);

/// Compresses `input` with one of the codecs the writer offers (UNCOMPRESSED, SNAPPY, GZIP,
/// ZSTD, BROTLI, LZ4_RAW). Throws UnsupportedError for the others.
std::string Compress(Codec codec, const uint8_t* input, size_t input_size);

}  // namespace shoal::parquet
