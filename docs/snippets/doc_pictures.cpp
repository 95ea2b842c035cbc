// The tutorials' pictures, drawn from Globe itself as SVG (docs/img/): each schedule of page 06 from
// pipeline::Schedule's own simulation, and page 03's split / broadcast / partial-sum drawing from
// real matmuls on 2 ranks (the layouts the dispatcher chose, each rank's block from local_block).
// scripts/sync_docs.py runs it and keeps docs/img/ equal to what it draws (the docs check fails on
// a stale or missing picture):
//
//   build/bin/globe-launch --nproc_per_node 2 build/bin/doc_pictures OUTDIR    (rank 0 writes)
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <globe/globe.h>

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

std::string rect(double x, double y, double w, double h, const std::string& fill, const std::string& extra = "") {
  std::ostringstream os;
  os << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << w << "\" height=\"" << h << "\" fill=\"" << fill
     << "\" stroke=\"#333\" stroke-width=\"0.6\"" << extra << "/>\n";
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

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 || std::string(argv[1]) == "--help") {
    std::cerr << "usage: globe-launch --nproc_per_node 2 doc_pictures OUTDIR (rank 0 writes the tutorials' SVGs)\n";
    return argc == 2 ? 0 : 2;
  }
  const std::string dir = argv[1];
  if (globe::dist::world_size() != 2) {
    std::cerr << "doc_pictures: run it on 2 ranks (page 03's drawing is of a 2-rank matmul)\n";
    return 2;
  }
  const std::string sbp_picture = sbp_svg(globe::Placement::all("cpu"));  // collective: every rank
  if (globe::dist::world_rank() != 0) return 0;
  write(dir, "sbp-matmul.svg", sbp_picture);
  const std::vector<std::tuple<std::string, std::string, int>> schedules = {
      {"gpipe", "GPipe", 1}, {"1f1b", "1F1B", 1}, {"interleaved", "Interleaved 1F1B (2 chunks)", 2}, {"zb-h1", "ZB-H1", 1}};
  for (const auto& [name, title, chunks] : schedules)
    write(dir, "schedule-" + name + ".svg", schedule_svg(pp::Schedule::make(name, 4, 8, chunks), title));
  return 0;
}
