#include "data/preview.h"

#include <algorithm>
#include <cctype>
#include <cstdint>

#include "util/error.h"

namespace shoal::data {

namespace {

// A 5x7 font: seven rows of five bits (the high bit is the left column) per glyph.
struct Glyph {
  char c;
  uint8_t rows[7];
};

constexpr Glyph kFont[] = {
    {'A', {14, 17, 17, 31, 17, 17, 17}}, {'B', {30, 17, 17, 30, 17, 17, 30}}, {'C', {14, 17, 16, 16, 16, 17, 14}},
    {'D', {30, 17, 17, 17, 17, 17, 30}}, {'E', {31, 16, 16, 30, 16, 16, 31}}, {'F', {31, 16, 16, 30, 16, 16, 16}},
    {'G', {14, 17, 16, 23, 17, 17, 15}}, {'H', {17, 17, 17, 31, 17, 17, 17}}, {'I', {14, 4, 4, 4, 4, 4, 14}},
    {'J', {7, 2, 2, 2, 2, 18, 12}},      {'K', {17, 18, 20, 24, 20, 18, 17}}, {'L', {16, 16, 16, 16, 16, 16, 31}},
    {'M', {17, 27, 21, 21, 17, 17, 17}}, {'N', {17, 17, 25, 21, 19, 17, 17}}, {'O', {14, 17, 17, 17, 17, 17, 14}},
    {'P', {30, 17, 17, 30, 16, 16, 16}}, {'Q', {14, 17, 17, 17, 21, 18, 13}}, {'R', {30, 17, 17, 30, 20, 18, 17}},
    {'S', {15, 16, 16, 14, 1, 1, 30}},   {'T', {31, 4, 4, 4, 4, 4, 4}},       {'U', {17, 17, 17, 17, 17, 17, 14}},
    {'V', {17, 17, 17, 17, 17, 10, 4}},  {'W', {17, 17, 17, 21, 21, 21, 10}}, {'X', {17, 17, 10, 4, 10, 17, 17}},
    {'Y', {17, 17, 17, 10, 4, 4, 4}},    {'Z', {31, 1, 2, 4, 8, 16, 31}},     {'0', {14, 17, 19, 21, 25, 17, 14}},
    {'1', {4, 12, 4, 4, 4, 4, 14}},      {'2', {14, 17, 1, 2, 4, 8, 31}},     {'3', {31, 2, 4, 2, 1, 17, 14}},
    {'4', {2, 6, 10, 18, 31, 2, 2}},     {'5', {31, 16, 30, 1, 1, 17, 14}},   {'6', {6, 8, 16, 30, 17, 17, 14}},
    {'7', {31, 1, 2, 4, 8, 8, 8}},       {'8', {14, 17, 17, 14, 17, 17, 14}}, {'9', {14, 17, 17, 15, 1, 2, 12}},
    {'-', {0, 0, 0, 31, 0, 0, 0}},       {'/', {1, 2, 2, 4, 8, 8, 16}},       {'_', {0, 0, 0, 0, 0, 0, 31}},
    {'.', {0, 0, 0, 0, 0, 12, 12}},      {':', {0, 12, 12, 0, 12, 12, 0}},    {'(', {2, 4, 8, 8, 8, 4, 2}},
    {')', {8, 4, 2, 2, 2, 4, 8}},        {' ', {0, 0, 0, 0, 0, 0, 0}},        {'?', {14, 17, 1, 2, 4, 0, 4}},
};

const Glyph& GlyphOf(char c) {
  char upper = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const Glyph& g : kFont) {
    if (g.c == upper) return g;
  }
  return kFont[sizeof(kFont) / sizeof(kFont[0]) - 1];  // '?'
}

constexpr int kGlyphWidth = 5, kGlyphHeight = 7, kTextScale = 2, kGap = 6;
// Captions are drawn twice the font's size, or at its size when that is what fits.
constexpr uint8_t kBackground = 32, kText = 240;

void DrawText(Image* out, int x, int y, const std::string& text, int max_width) {
  const int scale = static_cast<int>(text.size()) * (kGlyphWidth + 1) * kTextScale <= max_width + kTextScale ? kTextScale : 1;
  for (size_t i = 0; i < text.size(); ++i) {
    int left = x + static_cast<int>(i) * (kGlyphWidth + 1) * scale;
    if (left + kGlyphWidth * scale > x + max_width) break;  // clipped to the tile
    const Glyph& g = GlyphOf(text[i]);
    for (int row = 0; row < kGlyphHeight; ++row) {
      for (int col = 0; col < kGlyphWidth; ++col) {
        if (!(g.rows[row] >> (kGlyphWidth - 1 - col) & 1)) continue;
        for (int dy = 0; dy < scale; ++dy) {
          for (int dx = 0; dx < scale; ++dx) {
            int px = left + col * scale + dx, py = y + row * scale + dy;
            if (px < 0 || py < 0 || px >= out->width || py >= out->height) continue;
            uint8_t* p = &out->pixels[(static_cast<size_t>(py) * out->width + px) * 3];
            p[0] = p[1] = p[2] = kText;
          }
        }
      }
    }
  }
}

}  // namespace

Image RenderGrid(const std::vector<Image>& tiles, const std::vector<std::string>& captions, int columns, int tile_side) {
  if (tiles.empty()) throw InvalidError("no images to draw");
  if (captions.size() != tiles.size()) {
    throw InvalidError(std::to_string(captions.size()) + " captions for " + std::to_string(tiles.size()) + " images");
  }
  columns = std::clamp(columns, 1, static_cast<int>(tiles.size()));
  int cell_w = 0, cell_h = 0;
  std::vector<int> factors;
  for (const Image& t : tiles) {
    int factor = std::max(1, tile_side / std::max(1, std::max(t.width, t.height)));
    factors.push_back(factor);
    cell_w = std::max(cell_w, t.width * factor);
    cell_h = std::max(cell_h, t.height * factor);
  }
  const int caption_h = kGlyphHeight * kTextScale + 4;
  const int rows = (static_cast<int>(tiles.size()) + columns - 1) / columns;
  Image out;
  out.channels = 3;
  out.width = columns * (cell_w + kGap) + kGap;
  out.height = rows * (cell_h + caption_h + kGap) + kGap;
  out.pixels.assign(static_cast<size_t>(out.width) * out.height * 3, kBackground);
  for (size_t i = 0; i < tiles.size(); ++i) {
    const Image& t = tiles[i];
    if (t.channels != 1 && t.channels != 3) throw InvalidError("tile " + std::to_string(i) + " has " + std::to_string(t.channels) + " channels");
    const int x0 = kGap + static_cast<int>(i % columns) * (cell_w + kGap);
    const int y0 = kGap + static_cast<int>(i / columns) * (cell_h + caption_h + kGap);
    const int f = factors[i];
    for (int y = 0; y < t.height * f; ++y) {
      for (int x = 0; x < t.width * f; ++x) {
        const uint8_t* s = &t.pixels[(static_cast<size_t>(y / f) * t.width + x / f) * t.channels];
        uint8_t* d = &out.pixels[(static_cast<size_t>(y0 + y) * out.width + x0 + x) * 3];
        d[0] = s[0];
        d[1] = s[t.channels == 3 ? 1 : 0];
        d[2] = s[t.channels == 3 ? 2 : 0];
      }
    }
    DrawText(&out, x0, y0 + cell_h + 2, captions[i], cell_w);
  }
  return out;
}

}  // namespace shoal::data
