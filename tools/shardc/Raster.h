//===- Raster.h - an RGB canvas with lines and text, written as PNG -*- C++ -*-===//
//
// What `shardc plot -o loss.png` draws with: a white RGB canvas, outlined
// rectangles, lines of a given width (polylines are their segments),
// text in a built-in 5x7 pixel font (printable ASCII; anything else is '?'),
// horizontal or rotated a quarter turn counter-clockwise, anchored at its
// start, middle or end with its baseline at y, as SVG places text. Written as
// an 8-bit RGB PNG, compressed with LLVM's zlib (Debian's LLVM has it; without
// it, writing a PNG is an error that says to write an SVG).
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_TOOLS_SHARDC_RASTER_H
#define SHARDC_TOOLS_SHARDC_RASTER_H

#include <cstdint>
#include <string>
#include <vector>

namespace shardc::tools {

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
  bool operator==(const Rgb &o) const { return r == o.r && g == o.g && b == o.b; }
};

/// "#rrggbb", "#rgb", "white" or "black"; throws rt::Error on anything else.
Rgb parseColor(const std::string &s);

enum class Anchor { Start, Middle, End };

class Canvas {
public:
  Canvas(int width, int height, Rgb background = {255, 255, 255});

  int width() const { return w_; }
  int height() const { return h_; }
  void set(int x, int y, Rgb c); ///< outside the canvas: ignored

  /// The four edges, one pixel wide.
  void strokeRect(double x, double y, double w, double h, Rgb c);
  /// Every pixel whose centre lies within width / 2 of the segment.
  void line(double x0, double y0, double x1, double y1, Rgb c, double width = 1.0);
  /// `scale` pixels per font pixel; `rotated`: reads bottom to top, the
  /// anchor then measured along y (SVG's rotate(-90) about (x, y)).
  void text(double x, double y, const std::string &s, Rgb c, Anchor anchor = Anchor::Start,
            int scale = 1, bool rotated = false);
  /// Width in pixels of `s` at `scale` (6 per character less the last gap).
  static int textWidth(const std::string &s, int scale = 1);

  /// The canvas as a PNG file's bytes.
  std::string png() const;

private:
  int w_, h_;
  std::vector<uint8_t> rgb_;
};

} // namespace shardc::tools

#endif // SHARDC_TOOLS_SHARDC_RASTER_H
