#include "parquet/compression.h"

#include <brotli/decode.h>
#include <brotli/encode.h>
#include <lz4.h>
#include <lz4frame.h>
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include <cstring>

#include "util/error.h"

namespace shoal::parquet {

namespace {

[[noreturn]] void Fail(Codec codec, const std::string& why) {
  throw InvalidError(std::string(CodecName(codec)) + " decompression failed: " + why);
}

void CheckSize(Codec codec, size_t got, size_t expected) {
  if (got != expected) {
    Fail(codec, "produced " + std::to_string(got) + " bytes, the page header declares " +
                    std::to_string(expected));
  }
}

void Gunzip(const uint8_t* input, size_t input_size, uint8_t* output, size_t output_size) {
  z_stream stream{};
  // 15 + 32: zlib or gzip headers, detected automatically.
  if (inflateInit2(&stream, 15 + 32) != Z_OK) Fail(Codec::kGzip, "cannot initialise zlib");
  stream.next_in = const_cast<Bytef*>(input);
  stream.avail_in = static_cast<uInt>(input_size);
  stream.next_out = output;
  stream.avail_out = static_cast<uInt>(output_size);
  while (true) {
    int rc = inflate(&stream, Z_NO_FLUSH);
    if (rc == Z_STREAM_END) {
      // Concatenated gzip members: go on while input remains.
      if (stream.avail_in == 0) break;
      if (inflateReset(&stream) != Z_OK) {
        inflateEnd(&stream);
        Fail(Codec::kGzip, "cannot reset for the next member");
      }
      continue;
    }
    if (rc != Z_OK) {
      std::string msg = stream.msg ? stream.msg : "error " + std::to_string(rc);
      inflateEnd(&stream);
      Fail(Codec::kGzip, msg);
    }
    if (stream.avail_out == 0 && stream.avail_in > 0) {
      inflateEnd(&stream);
      Fail(Codec::kGzip, "output larger than the declared " + std::to_string(output_size) +
                             " bytes");
    }
    if (stream.avail_in == 0) {
      inflateEnd(&stream);
      Fail(Codec::kGzip, "truncated stream");
    }
  }
  size_t produced = output_size - stream.avail_out;
  inflateEnd(&stream);
  CheckSize(Codec::kGzip, produced, output_size);
}

// Hadoop's LZ4 framing: blocks of [4-byte big-endian uncompressed size][4-byte big-endian
// compressed size][raw LZ4 data]. Returns false when the input is not in this framing.
bool TryHadoopLz4(const uint8_t* input, size_t input_size, uint8_t* output, size_t output_size) {
  auto be32 = [](const uint8_t* p) {
    return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
  };
  size_t in = 0, out = 0;
  while (in < input_size) {
    if (input_size - in < 8) return false;
    uint32_t raw_size = be32(input + in), block_size = be32(input + in + 4);
    in += 8;
    if (block_size > input_size - in || raw_size > output_size - out) return false;
    int n = LZ4_decompress_safe(reinterpret_cast<const char*>(input + in),
                                reinterpret_cast<char*>(output + out), static_cast<int>(block_size),
                                static_cast<int>(raw_size));
    if (n < 0 || static_cast<uint32_t>(n) != raw_size) return false;
    in += block_size;
    out += raw_size;
  }
  return out == output_size;
}

bool TryLz4Frame(const uint8_t* input, size_t input_size, uint8_t* output, size_t output_size) {
  LZ4F_dctx* ctx = nullptr;
  if (LZ4F_isError(LZ4F_createDecompressionContext(&ctx, LZ4F_VERSION))) return false;
  size_t in = 0, out = 0;
  bool ok = true;
  while (in < input_size) {
    size_t src = input_size - in, dst = output_size - out;
    size_t rc = LZ4F_decompress(ctx, output + out, &dst, input + in, &src, nullptr);
    if (LZ4F_isError(rc) || (src == 0 && dst == 0)) {
      ok = false;
      break;
    }
    in += src;
    out += dst;
    if (rc == 0) break;
  }
  LZ4F_freeDecompressionContext(ctx);
  return ok && out == output_size;
}

void Lz4Raw(Codec codec, const uint8_t* input, size_t input_size, uint8_t* output,
            size_t output_size) {
  int n = LZ4_decompress_safe(reinterpret_cast<const char*>(input),
                              reinterpret_cast<char*>(output), static_cast<int>(input_size),
                              static_cast<int>(output_size));
  if (n < 0) Fail(codec, "corrupt LZ4 block");
  CheckSize(codec, static_cast<size_t>(n), output_size);
}

}  // namespace

void Decompress(Codec codec, const uint8_t* input, size_t input_size, uint8_t* output,
                size_t output_size) {
  if (input_size > INT32_MAX || output_size > INT32_MAX) {
    Fail(codec, "page larger than 2 GiB");
  }
  switch (codec) {
    case Codec::kUncompressed:
      CheckSize(codec, input_size, output_size);
      if (input_size > 0) std::memcpy(output, input, input_size);
      return;
    case Codec::kSnappy: {
      size_t length = 0;
      if (snappy_uncompressed_length(reinterpret_cast<const char*>(input), input_size, &length) !=
          SNAPPY_OK) {
        Fail(codec, "corrupt snappy header");
      }
      CheckSize(codec, length, output_size);
      if (snappy_uncompress(reinterpret_cast<const char*>(input), input_size,
                            reinterpret_cast<char*>(output), &length) != SNAPPY_OK) {
        Fail(codec, "corrupt snappy data");
      }
      CheckSize(codec, length, output_size);
      return;
    }
    case Codec::kGzip: Gunzip(input, input_size, output, output_size); return;
    case Codec::kBrotli: {
      size_t length = output_size;
      if (BrotliDecoderDecompress(input_size, input, &length, output) !=
          BROTLI_DECODER_RESULT_SUCCESS) {
        Fail(codec, "corrupt brotli data");
      }
      CheckSize(codec, length, output_size);
      return;
    }
    case Codec::kZstd: {
      size_t n = ZSTD_decompress(output, output_size, input, input_size);
      if (ZSTD_isError(n)) Fail(codec, ZSTD_getErrorName(n));
      CheckSize(codec, n, output_size);
      return;
    }
    case Codec::kLz4:
      // Parquet's LZ4 is Hadoop-framed in parquet-mr files; older Arrow wrote an LZ4 frame or a
      // raw block. Try each.
      if (TryHadoopLz4(input, input_size, output, output_size)) return;
      if (TryLz4Frame(input, input_size, output, output_size)) return;
      Lz4Raw(codec, input, input_size, output, output_size);
      return;
    case Codec::kLz4Raw: Lz4Raw(codec, input, input_size, output, output_size); return;
    case Codec::kLzo:
      throw UnsupportedError("compression codec LZO is not supported (no LZO library on Debian's list)");
  }
  throw UnsupportedError("unknown compression codec " + std::to_string(static_cast<int>(codec)));
}

std::string Compress(Codec codec, const uint8_t* input, size_t input_size) {
  std::string out;
  switch (codec) {
    case Codec::kUncompressed:
      out.assign(reinterpret_cast<const char*>(input), input_size);
      return out;
    case Codec::kSnappy: {
      size_t length = snappy_max_compressed_length(input_size);
      out.resize(length);
      if (snappy_compress(reinterpret_cast<const char*>(input), input_size, out.data(), &length) !=
          SNAPPY_OK) {
        throw IOError("snappy compression failed");
      }
      out.resize(length);
      return out;
    }
    case Codec::kGzip: {
      z_stream stream{};
      if (deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
                       Z_DEFAULT_STRATEGY) != Z_OK) {
        throw IOError("gzip compression failed to initialise");
      }
      out.resize(deflateBound(&stream, input_size) + 32);
      stream.next_in = const_cast<Bytef*>(input);
      stream.avail_in = static_cast<uInt>(input_size);
      stream.next_out = reinterpret_cast<Bytef*>(out.data());
      stream.avail_out = static_cast<uInt>(out.size());
      int rc = deflate(&stream, Z_FINISH);
      size_t length = out.size() - stream.avail_out;
      deflateEnd(&stream);
      if (rc != Z_STREAM_END) throw IOError("gzip compression failed");
      out.resize(length);
      return out;
    }
    case Codec::kZstd: {
      out.resize(ZSTD_compressBound(input_size));
      size_t n = ZSTD_compress(out.data(), out.size(), input, input_size, 3);
      if (ZSTD_isError(n)) throw IOError(std::string("zstd compression failed: ") + ZSTD_getErrorName(n));
      out.resize(n);
      return out;
    }
    case Codec::kBrotli: {
      size_t length = BrotliEncoderMaxCompressedSize(input_size);
      if (length == 0) length = input_size + 1024;
      out.resize(length);
      if (!BrotliEncoderCompress(5, BROTLI_DEFAULT_WINDOW, BROTLI_MODE_GENERIC, input_size, input,
                                 &length, reinterpret_cast<uint8_t*>(out.data()))) {
        throw IOError("brotli compression failed");
      }
      out.resize(length);
      return out;
    }
    case Codec::kLz4Raw: {
      out.resize(static_cast<size_t>(LZ4_compressBound(static_cast<int>(input_size))));
      int n = LZ4_compress_default(reinterpret_cast<const char*>(input), out.data(),
                                   static_cast<int>(input_size), static_cast<int>(out.size()));
      if (n <= 0) throw IOError("lz4 compression failed");
      out.resize(static_cast<size_t>(n));
      return out;
    }
    default:
      throw UnsupportedError("the writer does not offer codec " + std::string(CodecName(codec)));
  }
}

}  // namespace shoal::parquet
