// Plots through gnuplot: see gnuplot.h. Data go to files (not inline `$data` blocks) so that a
// reader of the report folder can re-plot or inspect them.
#include "kh/report/gnuplot.h"

#include <cmath>
#include <system_error>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kh/core/error.h"
#include "kh/core/json_io.h"
#include "kh/core/process.h"

namespace kh {
namespace {

/// A gnuplot single-quoted string: no escapes inside except '' for a quote. Line breaks would end
/// the command, so they become spaces.
std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'')
      out += "''";
    else if (c == '\n' || c == '\r')
      out += ' ';
    else
      out += c;
  }
  return out + "'";
}

std::vector<std::pair<double, double>> kept_points(const Plot& plot, const PlotSeries& s) {
  std::vector<std::pair<double, double>> out;
  for (const auto& [x, y] : s.points) {
    if (!std::isfinite(x) || !std::isfinite(y)) continue;
    if (plot.log_y && y <= 0) continue;  // no place on a log axis
    out.emplace_back(x, y);
  }
  return out;
}

/// The first line of gnuplot's output, for a one-line note.
std::string first_line(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  constexpr std::size_t kMaxNoteChars = 200;
  if (line.size() > kMaxNoteChars) line = line.substr(0, kMaxNoteChars) + "...";
  return line;
}

bool non_empty_file(const std::filesystem::path& p) {
  std::error_code ec;
  return std::filesystem::is_regular_file(p, ec) && std::filesystem::file_size(p, ec) > 0 && !ec;
}

/// The commands drawing one plot whose data file holds one `index` block per series in `titles`.
std::string plot_commands(const Plot& plot, const std::string& data_file,
                          const std::vector<std::string>& titles) {
  std::string gp = "reset\n";
  gp += fmt::format("set output {}\n", quoted(plot.file));
  gp += fmt::format("set title {}\nset xlabel {}\nset ylabel {}\n", quoted(plot.title),
                    quoted(plot.xlabel), quoted(plot.ylabel));
  gp += plot.log_y ? "set logscale y\n" : "unset logscale y\n";
  gp += "set grid\nset key outside right top\n";
  std::string cmd;
  for (std::size_t i = 0; i < titles.size(); ++i) {
    cmd += fmt::format("{}{} index {} using 1:2 with {} title {}", i ? ", " : "plot ",
                       i ? "''" : quoted(data_file), i, plot.style, quoted(titles[i]));
  }
  if (plot.reference_y)
    cmd += fmt::format(", {:.17g} with lines dashtype 2 linecolor rgb 'gray40' notitle",
                       *plot.reference_y);
  return gp + cmd + "\nset output\n";
}

}  // namespace

PlotOutcome draw_plots(const std::vector<Plot>& plots, const std::filesystem::path& dir,
                       const std::string& program) {
  PlotOutcome outcome;
  // pngcairo draws antialiased lines; plain png (libgd) is what every gnuplot build has.
  std::string script = fmt::format(
      "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {{\n"
      "  set terminal pngcairo noenhanced size {0},{1}\n"
      "}} else {{\n"
      "  set terminal png noenhanced size {0},{1}\n"
      "}}\n"
      "set datafile separator whitespace\n",
      kPlotWidthPixels, kPlotHeightPixels);
  std::vector<std::string> wanted, empty;
  for (const Plot& plot : plots) {
    std::string data;
    std::vector<std::string> titles;
    for (const PlotSeries& s : plot.series) {
      const auto points = kept_points(plot, s);
      if (points.empty()) continue;  // gnuplot stops the whole script on an empty index block
      if (!titles.empty()) data += "\n\n";  // two blank lines end an index block
      for (const auto& [x, y] : points) data += fmt::format("{:.17g} {:.17g}\n", x, y);
      titles.push_back(s.title);
    }
    std::error_code ec;
    std::filesystem::remove(dir / plot.file, ec);  // a stale PNG must not pass for a new one
    if (titles.empty()) {
      empty.push_back(plot.file);
      continue;
    }
    const std::string data_file = std::filesystem::path(plot.file).replace_extension(".dat");
    write_text_file_atomic(dir / data_file, data);
    script += plot_commands(plot, data_file, titles);
    wanted.push_back(plot.file);
  }
  const std::string skipped =
      empty.empty() ? "" : fmt::format("no data to plot for {}", fmt::join(empty, ", "));
  if (wanted.empty()) {
    outcome.note =
        "plots not drawn: " + (skipped.empty() ? std::string("none asked for") : skipped);
    return outcome;
  }
  write_text_file_atomic(dir / "plots.gp", script);

  if (!find_program(program)) {
    outcome.note = fmt::format(
        "plots not drawn: gnuplot ('{}') was not found in PATH (Debian package gnuplot-nox)",
        program);
    return outcome;
  }
  ProcessResult run;
  try {
    run = run_process({program, "plots.gp"}, kGnuplotTimeout, dir);
  } catch (const Error& e) {
    outcome.note = fmt::format("plots not drawn: could not start {}: {}", program, e.what());
    return outcome;
  }
  std::vector<std::string> missing;
  for (const std::string& file : wanted) {
    if (non_empty_file(dir / file))
      outcome.drawn.push_back(file);
    else
      missing.push_back(file);
  }
  std::vector<std::string> notes;
  if (!run.ok())
    notes.push_back(
        fmt::format("`{} plots.gp` {}: {}", program,
                    run.timed_out ? "timed out" : fmt::format("exited {}", run.exit_code),
                    first_line(run.output)));
  else if (!missing.empty())
    notes.push_back(fmt::format("gnuplot wrote no {}", fmt::join(missing, ", ")));
  if (!skipped.empty()) notes.push_back(skipped);
  if (!notes.empty())
    outcome.note =
        fmt::format("{}: {}", outcome.drawn.empty() ? "plots not drawn" : "some plots not drawn",
                    fmt::join(notes, "; "));
  return outcome;
}

}  // namespace kh
