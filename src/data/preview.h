// A picture of samples for a person to look at: images in a grid, each with a caption drawn in a
// small built-in bitmap font. No torch here.
#pragma once

#include <string>
#include <vector>

#include "data/image_codec.h"

namespace shoal::data {

/// Lays `tiles` (gray or RGB, any sizes) out in rows of `columns`, each enlarged by a whole
/// factor to about `tile_side` pixels, with its caption (upper-cased; characters the font lacks
/// show as '?') underneath. Returns an RGB image. Throws InvalidError when `captions` does not
/// match `tiles` or there is nothing to draw.
Image RenderGrid(const std::vector<Image>& tiles, const std::vector<std::string>& captions, int columns,
                 int tile_side = 112);

}  // namespace shoal::data
