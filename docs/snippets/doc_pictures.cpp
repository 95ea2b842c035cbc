// The tutorials' pictures, drawn from Globe itself as SVG (docs/img/): each schedule of page 06
// from pipeline::Schedule's own simulation; page 01's one value in each layout from each rank's
// local tensor; page 03's split / broadcast / partial-sum drawing from real matmuls on 2 ranks (the
// layouts the dispatcher chose, each rank's block from local_block); and, from measured data in
// DATADIR, page 07's loss curves (gpt-loss-curves.json, written by bench/gpt/loss_curves.sh) and
// traced steps of the quick start (quickstart-step.json, bench/quickstart_trace.sh) and of a
// pipeline (pipeline-1f1b-trace.json, bench/pipeline_trace.sh). scripts/sync_docs.py runs it and
// keeps docs/img/ equal to what it draws (the docs check fails on a stale or missing picture):
//
//   build/bin/globe-launch --nproc_per_node 2 build/bin/doc_pictures OUTDIR DATADIR   (rank 0 writes)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <globe/globe.h>
#include <nlohmann/json.hpp>

namespace pp = globe::pipeline;
namespace sbp = globe::sbp;

namespace {

const char* kFont = "font-family=\"DejaVu Sans, Arial, sans-serif\"";

std::string svg_open(int width, int height) {
  std::ostringstream os;
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
     << "\" viewBox=\"0 0 " << width << " " << height << "\" " << kFont << " font-size=\"12\">\n"
     << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  return os.str();
}

// A rectangle, outlined unless `outline` is false.
std::string rect(double x, double y, double w, double h, const std::string& fill, const std::string& extra = "",
                 bool outline = true) {
  std::ostringstream os;
  os << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << w << "\" height=\"" << h << "\" fill=\"" << fill
     << "\"" << (outline ? " stroke=\"#333\" stroke-width=\"0.6\"" : "") << extra << "/>\n";
  return os.str();
}

std::string text(double x, double y, const std::string& s, const std::string& extra = "") {
  std::ostringstream os;
  os << "<text x=\"" << x << "\" y=\"" << y << "\"" << extra << ">" << s << "</text>\n";
  return os.str();
}

void write(const std::string& dir, const std::string& name, const std::string& svg) {
  std::ofstream out(dir + "/" + name);
  out << svg << "</svg>\n";
  if (!out) throw std::runtime_error("cannot write " + dir + "/" + name);
}

// ---- page 06: a schedule as a stage x time chart ----

std::string phase_colour(pp::Phase p, int chunk) {
  // F blue, B green, I light green, W orange; a second chunk (interleaved) in a lighter shade.
  const char* base[][2] = {{"#4e79a7", "#a0cbe8"}, {"#59a14f", "#8cd17d"}, {"#86bc86", "#b6dcb0"}, {"#f28e2b", "#ffbe7d"}};
  const int i = p == pp::Phase::forward ? 0 : p == pp::Phase::backward ? 1 : p == pp::Phase::input_grad ? 2 : 3;
  return base[i][chunk > 0 ? 1 : 0];
}

std::string schedule_svg(const pp::Schedule& s, const std::string& title) {
  const int unit = 22, row = 28, left = 70, top = 44;
  int makespan = 0;
  for (size_t i = 0; i < s.order().size(); ++i)
    makespan = std::max(makespan, s.simulated_starts()[i] + pp::Schedule::unit_time(s.order()[i].phase));
  const int width = left + makespan * unit + 20, height = top + s.groups() * row + 46;
  std::ostringstream os;
  os << svg_open(width, height);
  char bubble[64];
  std::snprintf(bubble, sizeof bubble, "bubble %.0f%%", s.simulated_bubble() * 100);
  os << text(10, 20, title + " — " + std::to_string(s.stages()) + " stages, " + std::to_string(s.microbatches()) +
                         " micro-batches, " + bubble, " font-size=\"14\" font-weight=\"bold\"");
  for (int g = 0; g < s.groups(); ++g)
    os << text(10, top + g * row + row / 2 + 4, (s.chunks() > 1 ? "group " : "stage ") + std::to_string(g));
  for (size_t i = 0; i < s.order().size(); ++i) {
    const pp::Action& a = s.order()[i];
    const int g = s.group_of(a.stage), chunk = a.stage / s.groups();
    const double x = left + s.simulated_starts()[i] * unit, w = pp::Schedule::unit_time(a.phase) * unit;
    os << rect(x, top + g * row, w, row - 4, phase_colour(a.phase, chunk));
    os << text(x + w / 2, top + g * row + row / 2 + 2, std::to_string(a.microbatch),
               " text-anchor=\"middle\" font-size=\"11\"");
  }
  // Legend and time axis.
  const int ly = top + s.groups() * row + 18;
  os << text(left, ly, "time (unit: one forward) →", " font-size=\"11\" fill=\"#555\"");
  int lx = left + 190;
  std::vector<std::pair<pp::Phase, std::string>> keys = {{pp::Phase::forward, "F forward"}};
  if (s.splits_backward()) keys.insert(keys.end(), {{pp::Phase::input_grad, "I input gradient"}, {pp::Phase::weight_grad, "W weight gradient"}});
  else keys.push_back({pp::Phase::backward, "B backward"});
  for (const auto& [p, label] : keys) {
    os << rect(lx, ly - 10, 14, 12, phase_colour(p, 0)) << text(lx + 18, ly, label, " font-size=\"11\"");
    lx += 24 + int(label.size()) * 7;
  }
  if (s.chunks() > 1) os << text(lx, ly, "(lighter: the second chunk)", " font-size=\"11\" fill=\"#555\"");
  os << text(left, ly + 18, "numbers: micro-batch", " font-size=\"11\" fill=\"#555\"");
  return os.str();
}

// ---- page 03: split, broadcast and partial sum in a 2-rank matmul ----

const char* kRankColour[] = {"#4e79a7", "#f28e2b"};

// A matrix as its logical rectangle, each rank's block drawn in the rank's colour (a broadcast
// matrix: both ranks hold it all, drawn as two stacked copies; a partial sum: two full-size
// addends).
std::string matrix(const globe::Tensor& t, double x, double y, double scale, const std::string& name) {
  std::ostringstream os;
  const auto& shape = t.shape();
  const double h = double(shape[0]) * scale, w = double(shape[1]) * scale;
  const globe::Placement& p = t.placement();
  const bool split = t.sbp()[0].is_split(), partial = t.sbp()[0].is_partial();
  for (int r = 0; r < p.size(); ++r) {
    const globe::Block b = globe::local_block(shape, p, t.sbp(), p.ranks()[size_t(r)]);
    const double off = split ? 0 : 5.0 * r;  // copies and addends drawn offset, behind each other
    os << rect(x + double(b.start[1]) * scale + off, y + double(b.start[0]) * scale + off,
               double(b.shape[1]) * scale, double(b.shape[0]) * scale, kRankColour[r],
               split ? " fill-opacity=\"0.85\"" : " fill-opacity=\"0.55\"");
  }
  os << text(x + w / 2 + 2, y + h + 22, name + " " + t.sbp().to_string(),
             " text-anchor=\"middle\" font-size=\"12\"" + std::string(partial ? " font-style=\"italic\"" : ""));
  return os.str();
}

std::string sbp_svg(const globe::Placement& p) {
  globe::NoGradGuard no_grad;
  struct Row {
    std::string what;
    globe::Tensor x, w;
  };
  const std::vector<Row> rows = {
      {"data parallel: x split by rows, W broadcast", globe::zeros({8, 6}, p, sbp::split(0)), globe::zeros({6, 4}, p, sbp::broadcast)},
      {"column parallel: x broadcast, W split by columns", globe::zeros({8, 6}, p, sbp::broadcast), globe::zeros({6, 4}, p, sbp::split(1))},
      {"row parallel: x split by columns, W by rows: partial sums", globe::zeros({8, 6}, p, sbp::split(1)), globe::zeros({6, 4}, p, sbp::split(0))},
  };
  const double scale = 9, row_h = 130;
  std::ostringstream os;
  os << svg_open(560, int(40 + row_h * double(rows.size()) + 30));
  os << text(10, 20, "y = x · W on 2 ranks: which rank holds which block", " font-size=\"14\" font-weight=\"bold\"");
  for (size_t i = 0; i < rows.size(); ++i) {
    const double y0 = 50 + row_h * double(i);
    const globe::Tensor y = globe::matmul(rows[i].x, rows[i].w);  // the signature the dispatcher chooses
    os << text(10, y0 - 8, rows[i].what, " font-size=\"12\" fill=\"#333\"");
    os << matrix(rows[i].x, 20, y0, scale, "x") << text(100, y0 + 40, "·", " font-size=\"22\"");
    os << matrix(rows[i].w, 125, y0, scale, "W") << text(195, y0 + 40, "=", " font-size=\"18\"");
    os << matrix(y, 225, y0, scale, "y");
    if (y.sbp()[0].is_partial())
      os << text(280, y0 + 30, "each rank: a full-size addend;", " font-size=\"11\" fill=\"#555\"")
         << text(280, y0 + 45, "y is their sum (P)", " font-size=\"11\" fill=\"#555\"");
  }
  const double ly = 40 + row_h * double(rows.size());
  for (int r = 0; r < 2; ++r)
    os << rect(20 + 90 * r, ly, 14, 12, kRankColour[r]) << text(40 + 90 * r, ly + 10, "rank " + std::to_string(r));
  os << text(200, ly + 10, "B: both ranks hold all of it; P: each holds an addend", " font-size=\"11\" fill=\"#555\"");
  return os.str();
}

// ---- page 01: one value under S(0), S(1), B and P on two ranks ----

// A local matrix with its numbers, in the rank's colour.
std::string numbers(const std::vector<float>& v, int64_t rows, int64_t cols, double x, double y, int rank) {
  const double cell = 22;
  std::ostringstream os;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      const double cx = x + double(j) * cell, cy = y + double(i) * cell;
      char label[16];
      std::snprintf(label, sizeof label, "%g", double(v[size_t(i * cols + j)]));
      os << rect(cx, cy, cell, cell, rank < 0 ? "#eeeeee" : kRankColour[rank], rank < 0 ? "" : " fill-opacity=\"0.45\"")
         << text(cx + cell / 2, cy + 15, label, " text-anchor=\"middle\" font-size=\"11\"");
    }
  return os.str();
}

std::string sbp_layouts_svg(const globe::Placement& p) {
  globe::NoGradGuard no_grad;
  const std::vector<float> values = {1, 2, 3, 4, 5, 6, 7, 8};
  const globe::Tensor value = globe::from_vector(values, {4, 2});
  const std::vector<std::pair<globe::NdSbp, std::string>> layouts = {
      {sbp::split(0), "S(0): split rows"}, {sbp::split(1), "S(1): split columns"},
      {sbp::broadcast, "B: a copy each"}, {sbp::partial_sum, "P: addends"}};
  std::ostringstream os;
  os << svg_open(680, 230);
  os << text(10, 20, "One 4 × 2 value on ranks 0 and 1, in each layout: what each rank holds",
             " font-size=\"14\" font-weight=\"bold\"");
  os << numbers(values, 4, 2, 20, 60, -1) << text(42, 52, "the value", " text-anchor=\"middle\" font-size=\"11\"");
  for (size_t k = 0; k < layouts.size(); ++k) {
    const double x0 = 100 + 145 * double(k);
    // Each rank's local tensor as Globe holds it, gathered to every rank to be drawn.
    const globe::Tensor g = value.to_global(p, sbp::broadcast).to_global(p, layouts[k].first);
    const globe::Tensor local = g.to_local();
    const int64_t rows = local.shape()[0], cols = local.shape()[1];
    const std::vector<float> all =
        globe::reshape(local, {1, rows * cols}).to_global(p, sbp::split(0)).to_global(p, sbp::broadcast).to_local()
            .to_vector<float>();
    os << text(x0 + 55, 52, layouts[k].second, " text-anchor=\"middle\" font-size=\"12\" font-weight=\"bold\"");
    for (int r = 0; r < 2; ++r) {
      const double x = x0 + 60 * double(r);
      os << text(x + double(cols) * 11, 75 + 22 * double(rows) + 4 + 14, "rank " + std::to_string(r),
                 " text-anchor=\"middle\" font-size=\"10\" fill=\"#555\"");
      os << numbers(std::vector<float>(all.begin() + r * rows * cols, all.begin() + (r + 1) * rows * cols), rows, cols,
                    x, 70, r);
    }
  }
  os << text(10, 200, "S(0) and S(1): each rank holds one block; B: each holds all of it; P: each holds a full-size",
             " font-size=\"11\" fill=\"#555\"")
     << text(10, 216, "tensor and the value is their sum (here rank 0's copy and zeros; any two that add up to it).",
             " font-size=\"11\" fill=\"#555\"");
  return os.str();
}

// One traced quick-start step (bench/quickstart_trace.sh): rank 0's module calls and collectives in
// the order they ran, one row for the forward, one for the backward, one for what follows.
std::string quickstart_step_svg(const nlohmann::json& data) {
  struct Item {
    bool comm;
    std::string title, line2, line3;
  };
  auto short_layout = [](std::string s) {  // "P -> S(0) on mesh axis 0" as "P → S(0)"
    if (const size_t at = s.find(" on mesh axis"); at != std::string::npos) s.erase(at);
    if (const size_t at = s.find("->"); at != std::string::npos) s.replace(at, 2, "→");
    return s;
  };
  auto bytes = [](int64_t b) { return b < 1024 ? std::to_string(b) + " B" : std::to_string(b / 1024) + " KiB"; };
  std::vector<std::vector<Item>> rows(3);  // forward, backward, after
  int row = 0;
  for (const auto& s : data.at("steps")) {
    const bool backward = s[6].get<bool>();
    if (backward && row == 0) row = 1;
    if (!backward && row == 1) row = 2;
    if (s[0] == "module") {
      rows[size_t(row)].push_back({false, s[1].get<std::string>(), "", ""});
      continue;
    }
    const std::string module = s[2], op = s[3];
    std::string where = op.empty() ? (module.empty() ? "to_global" : module) : (module.empty() ? op : module + "'s " + op);
    rows[size_t(row)].push_back({true, s[1].get<std::string>() + " " + bytes(s[5].get<int64_t>()),
                                 short_layout(s[4].get<std::string>()), "in " + where});
  }
  const char* labels[] = {"forward", "backward", "loss.item()"};
  const double left = 90, top = 46, row_h = 74, module_w = 56, comm_w = 150, gap = 16, h = 46;
  std::ostringstream os;
  os << svg_open(960, int(top + row_h * 2 + h + 12));
  os << text(10, 22, "One quick-start step on 2 ranks as rank 0 ran it: module calls and the collectives",
             " font-size=\"14\" font-weight=\"bold\"");
  for (size_t r = 0; r < rows.size(); ++r) {
    const double y = top + row_h * double(r);
    os << text(10, y + h / 2 + 4, labels[r], " font-size=\"12\" font-weight=\"bold\"");
    double x = left;
    for (size_t i = 0; i < rows[r].size(); ++i) {
      const Item& it = rows[r][i];
      const double w = it.comm ? comm_w : module_w;
      if (i > 0)
        os << "<line x1=\"" << x - gap << "\" y1=\"" << y + h / 2 << "\" x2=\"" << x - 2 << "\" y2=\"" << y + h / 2
           << "\" stroke=\"#888\" stroke-width=\"1.2\"/>\n";
      os << rect(x, y, w, h, it.comm ? "#e15759" : kRankColour[0], it.comm ? " fill-opacity=\"0.25\" rx=\"3\"" : " fill-opacity=\"0.35\" rx=\"3\"");
      if (it.comm)
        os << text(x + w / 2, y + 14, it.title, " text-anchor=\"middle\" font-size=\"11\" font-weight=\"bold\"")
           << text(x + w / 2, y + 28, it.line2, " text-anchor=\"middle\" font-size=\"10\"")
           << text(x + w / 2, y + 41, it.line3, " text-anchor=\"middle\" font-size=\"10\" fill=\"#555\"");
      else
        os << text(x + w / 2, y + h / 2 + 4, it.title, " text-anchor=\"middle\" font-size=\"12\"");
      x += w + gap;
    }
  }
  return os.str();
}

// A measured pipeline step (bench/pipeline_trace.sh): each rank's actions where they ran, in milliseconds,
// with the time spent receiving hatched grey.
std::string traced_step_svg(const nlohmann::json& data) {
  const double left = 70, top = 44, row = 28, w = 640;
  double end_us = 0;
  for (const auto& r : data.at("ranks"))
    end_us = std::max(end_us, r.at("step_start_us").get<double>() + r.at("step_us").get<double>());
  auto px = [&](double us) { return left + w * us / end_us; };
  const size_t n = data.at("ranks").size();
  std::ostringstream os;
  os << svg_open(int(left + w + 30), int(top + double(n) * row + 50));
  char title[160];
  std::snprintf(title, sizeof title, "A measured 1F1B step: %zu stages x 8 micro-batches, %.1f ms (%d cores for %zu ranks)",
                n, end_us / 1000, data.at("cores").get<int>(), n);
  os << text(10, 20, title, " font-size=\"14\" font-weight=\"bold\"");
  for (size_t i = 0; i < n; ++i) {
    const auto& r = data.at("ranks")[i];
    const double y = top + double(i) * row;
    os << text(10, y + row / 2 + 2, "rank " + std::to_string(r.at("rank").get<int>()));
    for (const auto& a : r.at("actions")) {
      const std::string name = a[0].get<std::string>();
      const double x0 = px(a[1].get<double>()), x1 = px(a[1].get<double>() + a[2].get<double>());
      const pp::Phase phase = name[0] == 'F' ? pp::Phase::forward : pp::Phase::backward;
      os << rect(x0, y, std::max(0.5, x1 - x0), row - 4, phase_colour(phase, 0), " fill-opacity=\"0.9\"");
      if (x1 - x0 > 12) os << text((x0 + x1) / 2, y + row / 2 - 2, name.substr(1, name.find('@') - 1), " text-anchor=\"middle\" font-size=\"10\"");
    }
    // Receiving happens inside an action: a grey band over the lower half of its bar.
    for (const auto& wt : r.at("receives")) {
      const double x0 = px(wt[0].get<double>()), x1 = px(wt[0].get<double>() + wt[1].get<double>());
      os << rect(x0, y + row / 2, std::max(0.5, x1 - x0), row / 2 - 4, "#777777", " fill-opacity=\"0.75\"", /*outline=*/false);
    }
  }
  const double ly = top + double(n) * row + 18;
  for (double ms = 0; ms <= end_us / 1000 + 1e-9; ms += std::max(1.0, std::floor(end_us / 1000 / 8)))
    os << text(px(ms * 1000) - 4, ly, std::to_string(int(ms)), " font-size=\"10\"");
  os << text(left, ly + 18, "ms from the first rank's step start; blue F, green B (numbers: micro-batch); grey band: receiving",
             " font-size=\"11\" fill=\"#555\"");
  return os.str();
}

// ---- page 07: loss curves ----

std::string loss_curves_svg(const nlohmann::json& data) {
  const double left = 60, top = 40, w = 560, h = 300, lo = 2.0, hi = 6.0;
  const int steps = 600, window = 20;
  const char* colours[] = {"#222222", "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1"};
  auto px = [&](double step) { return left + w * step / steps; };
  auto py = [&](double loss) { return top + h * (hi - std::clamp(loss, lo, hi)) / (hi - lo); };
  std::ostringstream os;
  os << svg_open(int(left + w + 200), int(top + h + 60));
  os << text(10, 22, "GPT, 600 steps from the same initial weights: training loss (mean of " + std::to_string(window) +
                         " steps) and validation loss", " font-size=\"13\" font-weight=\"bold\"");
  for (double l = lo; l <= hi + 1e-9; l += 0.5) {
    char label[16];
    std::snprintf(label, sizeof label, "%.1f", l);
    os << "<line x1=\"" << left << "\" y1=\"" << py(l) << "\" x2=\"" << left + w << "\" y2=\"" << py(l)
       << "\" stroke=\"#ddd\"/>\n" << text(left - 30, py(l) + 4, label, " font-size=\"11\"");
  }
  for (int s = 0; s <= steps; s += 100)
    os << text(px(s) - 8, top + h + 18, std::to_string(s), " font-size=\"11\"");
  os << text(left + w / 2 - 15, top + h + 38, "step", " font-size=\"11\"");
  const auto& runs = data.at("runs");
  for (size_t r = 0; r < runs.size(); ++r) {
    const std::vector<double> losses = runs[r].at("losses").get<std::vector<double>>();
    const char* colour = colours[r % 6];
    std::ostringstream path;
    double sum = 0;
    for (size_t i = 0; i < losses.size(); ++i) {
      sum += losses[i] - (i >= size_t(window) ? losses[i - size_t(window)] : 0.0);
      const double mean = sum / double(std::min(i + 1, size_t(window)));
      path << (i ? " L" : "M") << px(double(i + 1)) << "," << py(mean);
    }
    os << "<path d=\"" << path.str() << "\" fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"1.4\""
       << (r == 0 ? " stroke-dasharray=\"5,3\"" : "") << "/>\n";
    if (runs[r].contains("val"))
      for (const auto& v : runs[r].at("val"))
        os << "<circle cx=\"" << px(v[0].get<double>()) << "\" cy=\"" << py(v[1].get<double>()) << "\" r=\"2.6\" fill=\""
           << colour << "\"/>\n";
    const double ly = top + 14 + 18 * double(r);
    os << "<line x1=\"" << left + w + 12 << "\" y1=\"" << ly - 4 << "\" x2=\"" << left + w + 32 << "\" y2=\"" << ly - 4
       << "\" stroke=\"" << colour << "\" stroke-width=\"2\"" << (r == 0 ? " stroke-dasharray=\"5,3\"" : "") << "/>\n"
       << text(left + w + 38, ly, runs[r].at("name").get<std::string>(), " font-size=\"11\"");
  }
  const double ly = top + 14 + 18 * double(runs.size()) + 8;
  os << "<circle cx=\"" << left + w + 22 << "\" cy=\"" << ly - 4 << "\" r=\"2.6\" fill=\"#555\"/>\n"
     << text(left + w + 38, ly, "validation loss", " font-size=\"11\"");
  return os.str();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: globe-launch --nproc_per_node 2 doc_pictures OUTDIR DATADIR (rank 0 writes the tutorials' "
                 "SVGs; DATADIR holds the measured data some are drawn from: docs/data)\n";
    return argc == 2 && std::string(argv[1]) == "--help" ? 0 : 2;
  }
  const std::string dir = argv[1], data_dir = argv[2];
  if (globe::dist::world_size() != 2) {
    std::cerr << "doc_pictures: run it on 2 ranks (page 03's drawing is of a 2-rank matmul)\n";
    return 2;
  }
  // collective: every rank draws these
  const std::string sbp_picture = sbp_svg(globe::Placement::all("cpu"));
  const std::string layouts_picture = sbp_layouts_svg(globe::Placement::all("cpu"));
  if (globe::dist::world_rank() != 0) return 0;
  write(dir, "sbp-matmul.svg", sbp_picture);
  write(dir, "sbp-layouts.svg", layouts_picture);
  const std::vector<std::tuple<std::string, std::string, int>> schedules = {
      {"gpipe", "GPipe", 1}, {"1f1b", "1F1B", 1}, {"interleaved", "Interleaved 1F1B (2 chunks)", 2}, {"zb-h1", "ZB-H1", 1},
      {"zbv", "ZBV (2 chunks in a V)", 2}};
  for (const auto& [name, title, chunks] : schedules)
    write(dir, "schedule-" + name + ".svg", schedule_svg(pp::Schedule::make(name, 4, 8, chunks), title));
  // Measured data: a missing file is an error naming the script that writes it.
  const std::pair<std::string, std::string> measured[] = {{"gpt-loss-curves", "bench/gpt/loss_curves.sh"},
                                                          {"pipeline-1f1b-trace", "bench/pipeline_trace.sh"},
                                                          {"quickstart-step", "bench/quickstart_trace.sh"}};
  for (const auto& [name, script] : measured) {
    std::ifstream in(data_dir + "/" + name + ".json");
    if (!in) {
      std::cerr << "doc_pictures: cannot read " << data_dir << "/" << name << ".json (" << script << " writes it)\n";
      return 1;
    }
    const nlohmann::json data = nlohmann::json::parse(in);
    write(dir, name + ".svg", name == "gpt-loss-curves"   ? loss_curves_svg(data)
                              : name == "quickstart-step" ? quickstart_step_svg(data)
                                                          : traced_step_svg(data));
  }
  return 0;
}
