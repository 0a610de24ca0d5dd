//===- Plot.cpp - shardc plot: training curves as an SVG ------------------===//
//
// Reads shardc's JSON step logs (`shardc train --log-json`, a compiled step's
// `--log-file`: one schema, runtime/program/StepLog.h) and draws one curve per
// (file, key) against steps, or tokens with --tokens-per-step, as a
// self-contained SVG (axes with round ticks, a legend, optional running mean
// and log scale). Prints, per curve, its points and first/last/lowest value.
//
//===----------------------------------------------------------------------===//
#include "tools/shardc/Plot.h"

#include "runtime/Error.h"
#include "tools/shardc/Args.h"
#include "tools/shardc/Raster.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

namespace shardc::tools {

namespace {

constexpr const char *kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                   "#9467bd", "#8c564b", "#17becf"};
constexpr double kW = kPlotWidth, kH = kPlotHeight, kLeft = 70, kRight = 20, kTop = 40,
                 kBottom = 50;

using Points = std::vector<std::pair<double, double>>;

struct Curve {
  std::string label;
  Points points;
};

std::string baseName(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

/// (step, value) of every line of `path` with a numeric "step" and a finite
/// numeric `key`; a line that is not a JSON object is an error naming it.
Points readSeries(const std::string &path, const std::string &key) {
  std::ifstream in(path);
  if (!in)
    throw rt::Error(path + ": cannot open");
  Points points;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    llvm::Expected<llvm::json::Value> v = llvm::json::parse(line);
    if (!v) {
      std::string why = llvm::toString(v.takeError());
      throw rt::Error(path + ":" + std::to_string(n) + ": not JSON (" + why + ")");
    }
    const llvm::json::Object *o = v->getAsObject();
    if (!o)
      throw rt::Error(path + ":" + std::to_string(n) + ": not a JSON object");
    std::optional<double> step = o->getNumber("step"), value = o->getNumber(key);
    if (step && value && std::isfinite(*value))
      points.push_back({*step, *value});
  }
  return points;
}

Points runningMean(const Points &points, size_t n) {
  Points out;
  std::deque<double> window;
  double sum = 0;
  for (auto [x, y] : points) {
    window.push_back(y);
    sum += y;
    if (window.size() > n) {
      sum -= window.front();
      window.pop_front();
    }
    out.push_back({x, sum / static_cast<double>(window.size())});
  }
  return out;
}

/// Round ticks (1, 2, 2.5, 5 times a power of ten) covering [lo, hi].
std::vector<double> niceTicks(double lo, double hi, int count = 5) {
  if (hi <= lo)
    hi = lo + 1.0;
  double raw = (hi - lo) / count;
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = 10 * mag;
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  std::vector<double> ticks;
  for (double t = std::ceil(lo / step) * step; t <= hi + 1e-9 * step; t += step)
    ticks.push_back(t);
  return ticks;
}

/// %g, or one decimal of scientific notation for tiny values.
std::string fmt(double v) { return formatDouble(std::fabs(v) >= 1e-3 || v == 0 ? "%g" : "%.1e", v); }

std::string fmt6(double v) { return formatDouble("%.6g", v); }

std::string fixed1(double v) { return llvm::formatv("{0:F1}", v).str(); }

std::string escape(const std::string &s) {
  std::string out;
  for (char c : s) {
    switch (c) {
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '&': out += "&amp;"; break;
    case '"': out += "&quot;"; break;
    default: out += c;
    }
  }
  return out;
}

} // namespace

std::vector<std::string> plotLogs(const PlotOptions &o, std::ostream &summary,
                                  Canvas *canvas) {
  if (o.keys.empty())
    throw rt::Error("no keys to plot");
  std::vector<Curve> curves;
  for (const std::string &path : o.logs) {
    bool found = false;
    for (const std::string &key : o.keys) {
      Points pts = readSeries(path, key);
      if (pts.empty())
        continue;
      found = true;
      if (o.logY && std::min_element(pts.begin(), pts.end(), [](auto a, auto b) {
                      return a.second < b.second;
                    })->second <= 0)
        throw rt::Error(path + ": '" + key + "' has values <= 0; drop --log-y");
      if (o.tokensPerStep > 0)
        for (auto &p : pts)
          p.first *= static_cast<double>(o.tokensPerStep);
      std::string label = (o.logs.size() > 1 ? baseName(path) + " " : "") + key;
      curves.push_back({label, pts});
      if (o.smooth > 1 && pts.size() > o.smooth)
        curves.push_back({label + " (mean of " + std::to_string(o.smooth) + ")",
                          runningMean(pts, o.smooth)});
    }
    if (!found) {
      std::string keys;
      for (const std::string &k : o.keys)
        keys += (keys.empty() ? "" : ", ") + k;
      throw rt::Error(path + ": no line has a step and any of: " + keys);
    }
  }

  auto ty = [&](double y) { return o.logY ? std::log10(y) : y; };
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  for (const Curve &c : curves)
    for (auto [x, y] : c.points) {
      x0 = std::min(x0, x), x1 = std::max(x1, x);
      y0 = std::min(y0, ty(y)), y1 = std::max(y1, ty(y));
    }
  if (x1 == x0)
    x1 = x0 + 1;
  double pad = (y1 - y0) * 0.05;
  if (pad == 0)
    pad = 0.5;
  y0 -= pad, y1 += pad;
  auto px = [&](double x) { return kLeft + (x - x0) / (x1 - x0) * (kW - kLeft - kRight); };
  auto py = [&](double y) { return kTop + (y1 - y) / (y1 - y0) * (kH - kTop - kBottom); };

  // Every element goes to the SVG lines and, with a canvas, is drawn there at
  // the same coordinates (the PNG is the same plot, pixel for pixel).
  std::vector<std::string> out;
  auto line = [&](const std::string &s) { out.push_back(s); };
  auto draw = [&](auto &&f) {
    if (canvas)
      f(*canvas);
  };
  const Rgb frame = parseColor("#444"), grid = parseColor("#ddd"), ink = parseColor("black");
  line(llvm::formatv("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
                     "viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" font-size=\"12\">",
                     kW, kH));
  line(llvm::formatv("<rect width=\"{0}\" height=\"{1}\" fill=\"white\"/>", kW, kH));
  if (!o.title.empty()) {
    line(llvm::formatv("<text x=\"{0}\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">{1}</text>",
                       kW / 2, escape(o.title)));
    draw([&](Canvas &c) { c.text(kW / 2, 22, o.title, ink, Anchor::Middle, 2); });
  }
  line(llvm::formatv("<rect x=\"{0}\" y=\"{1}\" width=\"{2}\" height=\"{3}\" fill=\"none\" "
                     "stroke=\"#444\"/>",
                     kLeft, kTop, kW - kLeft - kRight, kH - kTop - kBottom));
  for (double t : niceTicks(x0, x1)) {
    draw([&](Canvas &c) {
      c.line(px(t), kH - kBottom, px(t), kH - kBottom + 5, frame);
      c.text(px(t), kH - kBottom + 18, fmt(t), ink, Anchor::Middle);
    });
    line(llvm::formatv("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#444\"/>",
                       fixed1(px(t)), kH - kBottom, kH - kBottom + 5));
    line(llvm::formatv("<text x=\"{0}\" y=\"{1}\" text-anchor=\"middle\">{2}</text>",
                       fixed1(px(t)), kH - kBottom + 18, fmt(t)));
  }
  for (double t : niceTicks(y0, y1)) {
    draw([&](Canvas &c) {
      c.line(kLeft, py(t), kW - kRight, py(t), grid);
      c.text(kLeft - 6, py(t) + 4, o.logY ? fmt(std::pow(10.0, t)) : fmt(t), ink, Anchor::End);
    });
    line(llvm::formatv("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#ddd\"/>", kLeft,
                       fixed1(py(t)), kW - kRight));
    line(llvm::formatv("<text x=\"{0}\" y=\"{1}\" text-anchor=\"end\">{2}</text>", kLeft - 6,
                       fixed1(py(t) + 4), o.logY ? fmt(std::pow(10.0, t)) : fmt(t)));
  }
  line(llvm::formatv("<text x=\"{0}\" y=\"{1}\" text-anchor=\"middle\">{2}</text>",
                     (kLeft + kW - kRight) / 2, kH - 12, o.tokensPerStep > 0 ? "tokens" : "step"));
  draw([&](Canvas &c) {
    c.text((kLeft + kW - kRight) / 2, kH - 12, o.tokensPerStep > 0 ? "tokens" : "step", ink,
           Anchor::Middle);
  });
  std::string keys;
  for (const std::string &k : o.keys)
    keys += (keys.empty() ? "" : "/") + k;
  double mid = (kTop + kH - kBottom) / 2;
  line(llvm::formatv("<text x=\"16\" y=\"{0}\" text-anchor=\"middle\" transform=\"rotate(-90 16 "
                     "{0})\">{1}{2}</text>",
                     mid, escape(keys), o.logY ? " (log scale)" : ""));
  draw([&](Canvas &c) {
    c.text(16, mid, keys + (o.logY ? " (log scale)" : ""), ink, Anchor::Middle, 1, true);
  });
  for (size_t i = 0; i < curves.size(); ++i) {
    const char *color = kColors[i % (sizeof kColors / sizeof *kColors)];
    std::string coords;
    for (auto [x, y] : curves[i].points)
      coords += (coords.empty() ? "" : " ") + fixed1(px(x)) + "," + fixed1(py(ty(y)));
    line(llvm::formatv("<polyline fill=\"none\" stroke=\"{0}\" stroke-width=\"1.5\" "
                       "points=\"{1}\"><title>{2}</title></polyline>",
                       color, coords, escape(curves[i].label)));
    draw([&](Canvas &c) {
      const Rgb rgb = parseColor(color);
      for (size_t k = 1; k < curves[i].points.size(); ++k) {
        auto [xa, ya] = curves[i].points[k - 1];
        auto [xb, yb] = curves[i].points[k];
        c.line(px(xa), py(ty(ya)), px(xb), py(ty(yb)), rgb, 1.5);
      }
      if (curves[i].points.size() == 1) // one point: a dot
        c.line(px(curves[i].points[0].first), py(ty(curves[i].points[0].second)),
               px(curves[i].points[0].first), py(ty(curves[i].points[0].second)), rgb, 3);
    });
    double ly = kTop + 16 + 16 * static_cast<double>(i);
    line(llvm::formatv("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"{3}\" "
                       "stroke-width=\"2\"/>",
                       kW - kRight - 190, ly - 4, kW - kRight - 170, color));
    line(llvm::formatv("<text x=\"{0}\" y=\"{1}\">{2}</text>", kW - kRight - 165, ly,
                       escape(curves[i].label)));
    draw([&](Canvas &c) {
      c.line(kW - kRight - 190, ly - 4, kW - kRight - 170, ly - 4, parseColor(color), 2);
      c.text(kW - kRight - 165, ly, curves[i].label, ink);
    });
  }
  line("</svg>");
  // The frame last on the canvas, so grid lines and curves never cover it.
  draw([&](Canvas &c) {
    c.strokeRect(kLeft, kTop, kW - kLeft - kRight, kH - kTop - kBottom, frame);
  });

  for (const Curve &c : curves) {
    auto lowest = std::min_element(c.points.begin(), c.points.end(),
                                   [](auto a, auto b) { return a.second < b.second; });
    summary << c.label << ": " << c.points.size() << " points, first "
            << fmt6(c.points.front().second) << ", last "
            << fmt6(c.points.back().second) << ", lowest " << fmt6(lowest->second) << " at "
            << (o.tokensPerStep > 0 ? "token " : "step ") << fmt(lowest->first) << "\n";
  }
  return out;
}

std::string formatDouble(const char *format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

int cmdPlot(const std::vector<std::string> &argv) {
  Args args("plot", "<log.jsonl>... -o <plot.svg|plot.png>",
            "Draws training curves from shardc's JSON step logs (`shardc train --log-json`,\n"
            "a compiled step's --log-file: one schema) as an SVG, or a PNG when the output\n"
            "ends in .png (the same plot, 800 x 480 pixels): one curve per file and key\n"
            "against the step (or tokens with --tokens-per-step), axes with round ticks, a\n"
            "legend. Prints each curve's points and its first, last and lowest value. A\n"
            "file without any of the keys, or a line that is not a JSON object, is an\n"
            "error naming the file (and line).");
  args.option("o", "file", "the SVG (or, ending in .png, the PNG) to write")
      .option("keys", "k1,k2", "the logged values to draw", std::string("loss,val_loss"))
      .option("smooth", "n", "also draw the running mean over n points (curves longer than n)")
      .option("tokens-per-step", "n", "x axis in tokens: step x n (B*T*micro-batches)")
      .option("title", "text", "a title above the plot")
      .flag("log-y", "logarithmic y axis");
  if (!args.parse(argv))
    return 0;
  if (args.positional().empty())
    throw UsageError{"expected at least one log file"};
  if (!args.has("o"))
    throw UsageError{"missing required option '-o'"};
  PlotOptions o;
  o.logs = args.positional();
  std::stringstream keys(args.str("keys"));
  o.keys.clear();
  for (std::string k; std::getline(keys, k, ',');)
    if (!k.empty())
      o.keys.push_back(k);
  if (o.keys.empty())
    throw UsageError{"option '--keys' names no key"};
  if (args.has("smooth"))
    o.smooth = static_cast<size_t>(args.integer("smooth", 0));
  if (args.has("tokens-per-step"))
    o.tokensPerStep = args.integer("tokens-per-step", 1);
  if (args.has("title"))
    o.title = args.str("title");
  o.logY = args.isSet("log-y");
  const std::string path = args.str("o");
  const bool png = path.size() >= 4 && path.compare(path.size() - 4, 4, ".png") == 0;
  Canvas canvas(kPlotWidth, kPlotHeight);
  std::vector<std::string> svg = plotLogs(o, std::cout, png ? &canvas : nullptr);
  std::ofstream out(path, std::ios::binary);
  if (png)
    out << canvas.png();
  else
    for (const std::string &l : svg)
      out << l << "\n";
  out.close();
  if (!out)
    throw rt::Error(args.str("o") + ": cannot write");
  std::cout << "wrote " << args.str("o") << "\n";
  return 0;
}

} // namespace shardc::tools
