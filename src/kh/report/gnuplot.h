// Drawing simple line/point plots as PNG files with gnuplot, run as a child process. gnuplot is an
// optional tool (Debian package gnuplot-nox): when it is missing or fails, nothing throws; the
// outcome says why in one line so a report can print it where the plots would be.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kh {

inline constexpr const char* kDefaultGnuplot = "gnuplot";
/// gnuplot draws a few thousand points in well under a second; a minute means it is stuck.
inline constexpr std::chrono::milliseconds kGnuplotTimeout{60'000};
inline constexpr int kPlotWidthPixels = 1000, kPlotHeightPixels = 500;

struct PlotSeries {
  std::string title;
  std::vector<std::pair<double, double>> points;  // (x, y); non-finite ones are left out
};

struct Plot {
  std::string file;  // PNG file name, relative to the output folder ("latency.png")
  std::string title, xlabel, ylabel;
  bool log_y = false;                 // points with y <= 0 are then left out
  std::string style = "linespoints";  // gnuplot `with` style: "points", "steps", ...
  std::optional<double> reference_y;  // a dashed horizontal line (e.g. speedup 1)
  std::vector<PlotSeries> series;
};

struct PlotOutcome {
  std::vector<std::string> drawn;  // files of the plots that exist and are non-empty
  std::string note;                // "" when every plot was drawn; otherwise one line saying why
};

/// Writes `<stem>.dat` per plot and `plots.gp` into dir and runs `program plots.gp` there. The
/// terminal is pngcairo when this gnuplot has it, png otherwise. A plot with no point left is not
/// drawn (and named in the note). Throws only when dir cannot be written.
PlotOutcome draw_plots(const std::vector<Plot>& plots, const std::filesystem::path& dir,
                       const std::string& program = kDefaultGnuplot);

}  // namespace kh
