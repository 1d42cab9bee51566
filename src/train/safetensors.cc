#include "train/safetensors.h"

#include <nlohmann/json.hpp>
#include <torch/serialize.h>
#include <torch/torch.h>

#include <cstring>
#include <map>

#include "util/error.h"
#include "util/file.h"

namespace shoal::train {

namespace {

std::string DtypeName(at::ScalarType type) {
  switch (type) {
    case at::kFloat: return "F32";
    case at::kDouble: return "F64";
    case at::kHalf: return "F16";
    case at::kBFloat16: return "BF16";
    case at::kLong: return "I64";
    case at::kInt: return "I32";
    case at::kShort: return "I16";
    case at::kChar: return "I8";
    case at::kByte: return "U8";
    case at::kBool: return "BOOL";
    default: throw InvalidError(std::string("safetensors has no type for ") + c10::toString(type));
  }
}

}  // namespace

int ExportSafetensors(const std::string& ckpt, const std::string& out) {
  std::vector<uint8_t> raw = ReadFile(ckpt);
  c10::IValue value;
  try {
    value = torch::pickle_load(std::vector<char>(raw.begin(), raw.end()));
  } catch (const std::exception& e) {
    std::string message = e.what();
    throw InvalidError("checkpoint '" + ckpt + "' is corrupt or not a checkpoint: " + message.substr(0, message.find('\n')));
  }
  if (!value.isGenericDict() || !value.toGenericDict().contains("state_dict")) {
    throw InvalidError("'" + ckpt + "' is not a checkpoint (no state_dict)");
  }
  // Tensors in name order, each contiguous and little-endian (as x86 and ARM hold them).
  std::map<std::string, at::Tensor> tensors;
  for (const auto& entry : value.toGenericDict().at("state_dict").toGenericDict()) {
    tensors[entry.key().toStringRef()] = entry.value().toTensor().contiguous().cpu();
  }
  nlohmann::ordered_json header;
  header["__metadata__"] = {{"format", "pt"}, {"source", ckpt}};
  size_t offset = 0;
  for (const auto& [name, t] : tensors) {
    size_t bytes = t.numel() * t.element_size();
    header[name] = {{"dtype", DtypeName(t.scalar_type())}, {"shape", t.sizes().vec()}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data starts 8-byte aligned
  std::string file(8, '\0');
  uint64_t length = text.size();
  for (int i = 0; i < 8; ++i) file[i] = static_cast<char>(length >> (8 * i));
  file += text;
  file.reserve(file.size() + offset);
  for (const auto& [name, t] : tensors) file.append(static_cast<const char*>(t.data_ptr()), t.numel() * t.element_size());
  WriteFileAtomically(out, file);
  return static_cast<int>(tensors.size());
}

}  // namespace shoal::train
