// Exporting weights to safetensors (https://github.com/huggingface/safetensors, its format
// description): an 8-byte little-endian header length, a JSON header naming each tensor's dtype,
// shape and byte range, then the tensors' bytes.
#pragma once

#include <string>

namespace shoal::train {

/// Writes the state_dict of checkpoint `ckpt` to `out` as safetensors (atomically). Returns the
/// number of tensors. Throws InvalidError for a file that is not a checkpoint or a tensor type
/// safetensors lacks.
int ExportSafetensors(const std::string& ckpt, const std::string& out);

}  // namespace shoal::train
