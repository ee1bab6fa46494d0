// The Markdown report: see markdown_report.h. Tables are GitHub-flavoured Markdown; every number
// is rounded for reading (the JSON outputs keep full precision).
#include "kh/report/markdown_report.h"

#include <algorithm>
#include <ctime>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kh/core/error.h"
#include "kh/core/json_io.h"

namespace kh {
namespace {

constexpr double kMicro = 1e6;

/// Latency in microseconds with about three significant digits and no exponent.
std::string format_us(double seconds) {
  const double us = seconds * kMicro;
  if (us < 10) return fmt::format("{:.2f}", us);
  if (us < 100) return fmt::format("{:.1f}", us);
  return fmt::format("{:.0f}", us);
}

std::string format_speedup(double s) {
  return fmt::format("{:.2f}×", s);
}
std::string format_percent(double fraction) {
  return fmt::format("{:.1f}%", 100 * fraction);
}

/// A table cell: a '|' would end the cell, a line break the row.
std::string cell(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n' || c == '\r')
      out += ' ';
    else
      out += c;
  }
  return out;
}

std::string row(const std::vector<std::string>& cells) {
  std::string r = "|";
  for (const std::string& c : cells) r += " " + c + " |";
  return r + "\n";
}

/// A header row and its separator; numeric columns (all but the first `text_columns`) are
/// right-aligned.
std::string header(const std::vector<std::string>& titles, std::size_t text_columns) {
  std::string sep = "|";
  for (std::size_t i = 0; i < titles.size(); ++i) sep += i < text_columns ? " --- |" : " ---: |";
  return row(titles) + sep + "\n";
}

std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", &tm);
  return buf;
}

std::string short_hash(const std::string& hash) {
  constexpr std::size_t kHashChars = 12;
  return hash.empty() ? "—" : "`" + hash.substr(0, kHashChars) + "`";
}

/// "1.23× (n=4, 0.90–1.70×)"; "— (n=0)" when nothing was compared.
std::string speedup_cell(const SpeedupStats& s) {
  if (!s.geomean_speedup) return "— (n=0)";
  if (s.compared == 1) return fmt::format("{} (n=1)", format_speedup(*s.geomean_speedup));
  return fmt::format("{} (n={}, {:.2f}–{})", format_speedup(*s.geomean_speedup), s.compared,
                     *s.min_speedup, format_speedup(*s.max_speedup));
}

/// The candidates with fraction_of_floor filled from the floor where a timed result lacks one, so
/// that tables and summaries agree.
std::vector<CandidateResults> with_floor_fractions(const ReportInput& in) {
  std::vector<CandidateResults> out = in.candidates;
  for (CandidateResults& c : out) {
    for (WorkloadResult& r : c.workloads) {
      const auto floor = in.floor_seconds.find(r.workload);
      if (!r.fraction_of_floor && r.timed() && *r.latency > 0 && floor != in.floor_seconds.end())
        r.fraction_of_floor = floor->second / *r.latency;
    }
  }
  return out;
}

/// Everything the sections share, computed once.
struct ReportData {
  const ReportInput& in;
  std::vector<CandidateResults> candidates;  // with floor fractions
  std::vector<Comparison> comparisons;       // candidate i (i >= 1) against the baseline, at i-1
  std::vector<std::vector<RegimeShare>> shares;  // per candidate
  bool any_fraction = false;

  const CandidateResults& baseline() const { return candidates.front(); }
};

ReportData prepare(const ReportInput& in) {
  ReportData d{in, with_floor_fractions(in), {}, {}, false};
  for (std::size_t i = 1; i < d.candidates.size(); ++i)
    d.comparisons.push_back(
        compare_candidates(in.partition, in.workloads, d.baseline(), d.candidates[i]));
  for (const CandidateResults& c : d.candidates) {
    std::map<std::string, double> latency;
    for (const WorkloadResult& r : c.workloads) {
      if (r.timed()) latency[r.workload] = *r.latency;
      if (r.timed() && r.fraction_of_floor) d.any_fraction = true;
    }
    d.shares.push_back(latency_shares(in.partition, latency));
  }
  return d;
}

std::string header_section(const ReportData& d) {
  const ReportInput& in = d.in;
  std::string md = fmt::format("# kh report: {}\n\n", in.definition);
  md += fmt::format("Date: {}  \n", in.date.empty() ? now_utc() : in.date);
  md += fmt::format("Workloads: {} in {} regimes (axes: {})\n\n", in.workloads.size(),
                    in.partition.regimes.size(),
                    in.partition.axes.empty()
                        ? "none vary"
                        : fmt::format("{}", fmt::join(in.partition.axes, ", ")));
  md += "Candidates:\n\n";
  for (std::size_t i = 0; i < d.candidates.size(); ++i) {
    md +=
        fmt::format("- **{}** {}{}\n", cell(d.candidates[i].name), short_hash(d.candidates[i].hash),
                    i == 0 ? " (baseline: speedups are against it)" : "");
  }
  return md + "\n";
}

std::string summary_section(const ReportData& d) {
  std::string md = "## Summary\n\n";
  std::vector<std::string> titles = {"candidate",    "passed",     "failed",
                                     "timed",        "flaky",      "latency sum (µs)",
                                     "geomean (µs)", "median (µs)"};
  if (d.any_fraction) titles.push_back("median fraction of floor");
  const bool compared = !d.comparisons.empty();
  if (compared)
    titles.insert(titles.end(), {fmt::format("geomean speedup vs {}", cell(d.baseline().name)),
                                 "passed only by baseline / by it"});
  md += header(titles, 1);
  auto opt_us = [](const std::optional<double>& v) { return v ? format_us(*v) : "—"; };
  for (std::size_t i = 0; i < d.candidates.size(); ++i) {
    const DistributionSummary s = summarize_distribution(d.candidates[i]);
    std::vector<std::string> cells = {
        cell(d.candidates[i].name), fmt::format("{}/{}", s.passed, d.in.workloads.size()),
        std::to_string(s.failed),   std::to_string(s.timed),
        std::to_string(s.flaky),    s.timed ? format_us(s.latency_sum) : "—",
        opt_us(s.geomean_latency),  opt_us(s.median_latency)};
    if (d.any_fraction)
      cells.push_back(s.median_fraction_of_floor ? format_percent(*s.median_fraction_of_floor)
                                                 : "—");
    if (compared && i == 0) {
      cells.insert(cells.end(), {"(baseline)", "—"});
    } else if (compared) {
      const Comparison& c = d.comparisons[i - 1];
      cells.insert(cells.end(),
                   {speedup_cell(c), fmt::format("{} / {}", c.a_only_passed, c.b_only_passed)});
    }
    md += row(cells);
  }
  return md + "\n";
}

std::string share_cell(const RegimeShare& s) {
  if (s.measured == 0) return "—";
  if (s.measured == s.workloads) return format_percent(s.share);
  return fmt::format("{} ({}/{})", format_percent(s.share), s.measured, s.workloads);
}

std::string regime_section(const ReportData& d) {
  std::string md = "## Regimes\n\n";
  md +=
      "Latency share: the regime's part of the candidate's latency sum over the workloads it "
      "timed (timed/all shown when some were not). Speedup: geometric mean of baseline / "
      "candidate over the workloads both passed and timed.\n\n";
  std::vector<std::string> titles = {"#", "regime", "workloads"};
  for (const CandidateResults& c : d.candidates) titles.push_back(cell(c.name) + " share");
  for (std::size_t i = 1; i < d.candidates.size(); ++i)
    titles.push_back(fmt::format("{} vs {}", cell(d.candidates[i].name), cell(d.baseline().name)));
  md += header(titles, 2);
  for (std::size_t r = 0; r < d.in.partition.regimes.size(); ++r) {
    const Regime& regime = d.in.partition.regimes[r];
    std::vector<std::string> cells = {std::to_string(r), cell(regime.label),
                                      std::to_string(regime.workloads.size())};
    for (const auto& shares : d.shares) cells.push_back(share_cell(shares[r]));
    for (const Comparison& c : d.comparisons) cells.push_back(speedup_cell(c.regimes[r]));
    md += row(cells);
  }
  std::vector<std::string> total = {"", "**all**", std::to_string(d.in.workloads.size())};
  for (const CandidateResults& c : d.candidates) {
    const DistributionSummary s = summarize_distribution(c);
    total.push_back(s.timed ? fmt::format("100% ({} timed)", s.timed) : "—");
  }
  for (const Comparison& c : d.comparisons) total.push_back(speedup_cell(c));
  return md + row(total) + "\n";
}

std::vector<Plot> plots_of(const ReportData& d) {
  Plot latency;
  latency.file = "latency.png";
  latency.title = fmt::format("{}: latency per workload", d.in.definition);
  latency.xlabel = "workload index (dataset order)";
  latency.ylabel = "latency (us)";
  latency.log_y = true;
  latency.style = "points";
  for (const CandidateResults& c : d.candidates) {
    PlotSeries s{c.name, {}};
    for (std::size_t i = 0; i < d.in.workloads.size(); ++i) {
      const WorkloadResult* r = c.find(d.in.workloads[i].uuid);
      if (r && r->timed()) s.points.emplace_back(static_cast<double>(i), *r->latency * kMicro);
    }
    latency.series.push_back(std::move(s));
  }
  std::vector<Plot> plots = {latency};
  if (d.comparisons.empty()) return plots;

  // Sorted speedups against the share of compared workloads: candidates compared on different
  // numbers of workloads still share the x axis, and the curve's crossing of 1 reads directly
  // as the fraction of workloads where the candidate is slower.
  Plot speedup;
  speedup.file = "speedup.png";
  speedup.title = fmt::format("speedup against {} (sorted)", d.baseline().name);
  speedup.xlabel = "percent of workloads compared";
  speedup.ylabel = fmt::format("{} latency / candidate latency", d.baseline().name);
  speedup.log_y = true;
  speedup.reference_y = 1.0;
  for (const Comparison& c : d.comparisons) {
    std::vector<double> values;
    for (const WorkloadComparison& w : c.workloads)
      if (w.speedup) values.push_back(*w.speedup);
    std::sort(values.begin(), values.end());
    PlotSeries s{c.b, {}};
    for (std::size_t k = 0; k < values.size(); ++k)
      s.points.emplace_back(100.0 * (static_cast<double>(k) + 0.5) / values.size(), values[k]);
    speedup.series.push_back(std::move(s));
  }
  plots.push_back(speedup);
  return plots;
}

std::string plot_section(const ReportData& d, const std::filesystem::path& dir) {
  std::string md = "## Plots\n\n";
  const PlotOutcome outcome = draw_plots(plots_of(d), dir, d.in.gnuplot);
  for (const std::string& file : outcome.drawn) md += fmt::format("![{}]({})\n\n", file, file);
  if (!outcome.note.empty()) md += fmt::format("_{}._\n\n", cell(outcome.note));
  return md;
}

std::string axes_text(const Workload& w) {
  std::string s;
  for (const auto& [name, value] : w.axes)
    s += fmt::format("{}{}={}", s.empty() ? "" : " ", name, value);
  return s;
}

/// Latency in µs when timed (flaky marked), the status otherwise, "—" without a result.
std::string result_cell(const WorkloadResult* r) {
  if (!r) return "—";
  std::string text = r->timed() ? format_us(*r->latency) : cell(r->status);
  return r->flaky ? text + " (flaky)" : text;
}

std::string workload_section(const ReportData& d) {
  const ReportInput& in = d.in;
  const bool any_floor = !in.floor_seconds.empty();
  std::string md = "## Workloads\n\n";
  std::vector<std::string> titles = {"#", "workload", "regime", "axes"};
  if (any_floor) titles.push_back("floor (µs)");
  for (const CandidateResults& c : d.candidates) {
    titles.push_back(cell(c.name) + " (µs)");
    if (d.any_fraction) titles.push_back(cell(c.name) + " of floor");
  }
  for (std::size_t i = 1; i < d.candidates.size(); ++i)
    titles.push_back(fmt::format("{} vs {}", cell(d.candidates[i].name), cell(d.baseline().name)));
  md += header(titles, 4);
  for (std::size_t i = 0; i < in.workloads.size(); ++i) {
    const Workload& w = in.workloads[i];
    const std::optional<std::size_t> regime = in.partition.regime_of(w);
    std::vector<std::string> cells = {std::to_string(i),
                                      "`" + w.uuid.substr(0, kUuidPrefixChars) + "`",
                                      regime ? std::to_string(*regime) : "—", axes_text(w)};
    if (any_floor) {
      const auto floor = in.floor_seconds.find(w.uuid);
      cells.push_back(floor == in.floor_seconds.end() ? "—" : format_us(floor->second));
    }
    for (const CandidateResults& c : d.candidates) {
      const WorkloadResult* r = c.find(w.uuid);
      cells.push_back(result_cell(r));
      if (d.any_fraction)
        cells.push_back(
            r && r->timed() && r->fraction_of_floor ? format_percent(*r->fraction_of_floor) : "—");
    }
    for (const Comparison& c : d.comparisons) {
      const std::optional<double>& s = c.workloads[i].speedup;
      cells.push_back(s ? format_speedup(*s) : "—");
    }
    md += row(cells);
  }
  return md;
}

}  // namespace

void write_report(const ReportInput& in, const std::filesystem::path& dir) {
  if (in.candidates.empty())
    fail("report for {} in {}: no candidates to report", in.definition, dir.string());
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    fail("report for {}: cannot create folder {}: {}", in.definition, dir.string(), ec.message());
  const ReportData d = prepare(in);
  const std::string md = header_section(d) + summary_section(d) + regime_section(d) +
                         plot_section(d, dir) + workload_section(d);
  write_text_file_atomic(dir / "report.md", md);
}

}  // namespace kh
