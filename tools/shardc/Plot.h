//===- Plot.h - shardc plot: training curves as an SVG ----------*- C++ -*-===//
#ifndef SHARDC_TOOLS_SHARDC_PLOT_H
#define SHARDC_TOOLS_SHARDC_PLOT_H

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace shardc::tools {

struct PlotOptions {
  std::vector<std::string> logs; ///< JSONL step logs
  std::vector<std::string> keys = {"loss", "val_loss"};
  size_t smooth = 0;             ///< running mean over this many points (> 1)
  int64_t tokensPerStep = 0;     ///< > 0: the x axis in tokens (step x this)
  bool logY = false;
  std::string title;
};

class Canvas;

/// The canvas of a PNG plot: the SVG's size.
constexpr int kPlotWidth = 800, kPlotHeight = 480;

/// The SVG's lines for the logs; writes one summary line per curve to
/// `summary`; with `canvas` (kPlotWidth x kPlotHeight), draws the same plot
/// there. Throws rt::Error on a missing file, a line that is not a JSON
/// object, a file without any key, or values <= 0 with a log scale.
std::vector<std::string> plotLogs(const PlotOptions &options, std::ostream &summary,
                                  Canvas *canvas = nullptr);

/// One double through a printf format ("%g", "%.6g", ...).
std::string formatDouble(const char *format, double v);

/// `shardc plot LOG... -o plot.svg|plot.png [--keys] [--smooth] [--tokens-per-step] [--log-y]
/// [--title]`.
int cmdPlot(const std::vector<std::string> &argv);

} // namespace shardc::tools

#endif // SHARDC_TOOLS_SHARDC_PLOT_H
