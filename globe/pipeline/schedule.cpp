#include "globe/pipeline/schedule.h"

#include <algorithm>
#include <cctype>
#include <iomanip>
#include <sstream>
#include <optional>
#include <tuple>

#include "globe/base/error.h"

namespace globe::pipeline {

namespace {

enum class Kind { gpipe, one_f_one_b, interleaved, zb_h1, zbv };

Kind kind_of(const std::string& name) {
  std::string n;
  for (char c : name)
    if (c != '-' && c != '_') n += char(std::tolower(static_cast<unsigned char>(c)));
  if (n == "gpipe") return Kind::gpipe;
  if (n == "1f1b") return Kind::one_f_one_b;
  if (n == "interleaved" || n == "interleaved1f1b") return Kind::interleaved;
  if (n == "zbh1" || n == "zerobubble") return Kind::zb_h1;
  if (n == "zbv" || n == "zerobubblev") return Kind::zbv;
  GLOBE_FAIL("[pipeline] unknown schedule '", name, "'; choose gpipe, 1f1b, interleaved, zb-h1 or zbv");
}

const char* canonical(Kind k) {
  switch (k) {
    case Kind::gpipe: return "gpipe";
    case Kind::one_f_one_b: return "1f1b";
    case Kind::interleaved: return "interleaved";
    case Kind::zb_h1: return "zb-h1";
    case Kind::zbv: return "zbv";
  }
  return "";
}

constexpr int kNever = 1 << 30;

// The simulation: each group runs its program (the schedule's per-group list of actions) in order;
// an action starts once its group is free and the actions it needs have finished.
struct Sim {
  Kind kind;
  int p, v, m, S;
  bool split;
  // End times; kNever until the action has started.
  std::vector<std::vector<int>> f_end, b_end, w_end;
  std::vector<int> alive, peak;  // per group: micro-batch activations held (F started, not freed)

  Sim(Kind k, int p_, int v_, int m_)
      : kind(k), p(p_), v(v_), m(m_), S(p_ * v_), split(k == Kind::zb_h1 || k == Kind::zbv),
        f_end(S, std::vector<int>(m, kNever)), b_end(f_end), w_end(f_end), alive(p, 0), peak(p, 0) {}

  int dur(Phase ph) const { return Schedule::unit_time(ph); }
  int group(int stage) const { return stage_group(stage, p, kind == Kind::zbv); }
  bool started(const std::vector<std::vector<int>>& e, int c, int k) const { return e[c][k] != kNever; }

  bool ready(const Action& a, int t) const {
    const int c = a.stage, k = a.microbatch;
    switch (a.phase) {
      case Phase::forward: return !started(f_end, c, k) && (c == 0 || f_end[c - 1][k] <= t);
      case Phase::backward:
      case Phase::input_grad:
        return !started(b_end, c, k) && f_end[c][k] <= t && (c == S - 1 || b_end[c + 1][k] <= t);
      case Phase::weight_grad: return !started(w_end, c, k) && b_end[c][k] <= t;
    }
    return false;
  }

  // Megatron's interleaved order: micro-batches in groups of p, each group through chunk 0, then
  // chunk 1, ...; backwards mirror it from the last chunk.
  std::tuple<int, int, int> key(const Action& a) const {
    const int j = a.stage / p;
    const int jj = a.phase == Phase::forward ? j : v - 1 - j;
    return {a.microbatch / p, jj, a.microbatch % p};
  }

  // Group g's actions of one phase in the order the schedule runs them.
  std::vector<Action> sequence(int g, Phase phase) const {
    std::vector<Action> seq;
    for (int j = 0; j < v; ++j)
      for (int k = 0; k < m; ++k) seq.push_back({g + j * p, k, phase});
    std::stable_sort(seq.begin(), seq.end(), [&](const Action& x, const Action& y) { return key(x) < key(y); });
    return seq;
  }

  // Group g's program of forwards and backwards (input gradients when split): `warm` forwards,
  // then one backward after each forward, then the remaining backwards. Weight gradients are not
  // in it: they fill the gaps (fill()).
  std::vector<Action> program(int g) const {
    const Phase back = split ? Phase::input_grad : Phase::backward;
    const std::vector<Action> fs = sequence(g, Phase::forward), bs = sequence(g, back);
    const int n = int(fs.size());
    int warm = n;  // gpipe: every forward first
    if (kind == Kind::one_f_one_b || kind == Kind::zb_h1) warm = std::min(n, p - g - 1);
    if (kind == Kind::interleaved) warm = std::min(n, (p - g - 1) * 2 + (v - 1) * p);
    std::vector<Action> prog(fs.begin(), fs.begin() + warm);
    for (int f = warm; f < n; ++f) {
      prog.push_back(fs[f]);
      prog.push_back(bs[f - warm]);
    }
    prog.insert(prog.end(), bs.begin() + (n - warm), bs.end());
    return prog;
  }

  // ZB-H1 keeps 1F1B's peak (Qi et al. 2023): every stage may hold as many micro-batches whose
  // weight gradient is still to come as 1F1B's first stage holds, p; a forward beyond it waits,
  // and the group runs a weight gradient. Later stages thereby defer their W's to the cool-down,
  // where they fill what would otherwise be the bubble: (p - 1)(F + I - W) in all.
  // zbv counts half-stage chunks: 2p of them are the same bytes as 1F1B's p stages.
  bool may_start(const Action& a, int g) const {
    return !split || a.phase != Phase::forward || alive[g] < p * v;
  }

  // zbv has no fixed program: a free group takes, of its two stages' next actions that are ready,
  // the first of: the input gradient of its earlier stage (that of an older micro-batch, since the
  // backward reaches it last), that of its later stage, the forward of its later stage, the forward
  // of its earlier stage (a forward only within the memory bound); else a weight gradient, as in
  // zb-h1. Preferring the later stage's forward keeps the group that turns the V (p - 1) from
  // filling its memory with first-chunk activations that nothing can drain. Of the orders tried,
  // this gave the smallest bubbles, and none stalls for p <= 8, m <= 24 (a stall would be refused
  // below, naming the counts).
  std::optional<Action> pick(int g, int t, const std::vector<std::vector<int>>& next) const {
    const int early = g, late = 2 * p - 1 - g;
    const std::pair<Phase, int> order[] = {
        {Phase::input_grad, early}, {Phase::input_grad, late}, {Phase::forward, late}, {Phase::forward, early}};
    for (const auto& [ph, c] : order) {
      const int k = next[size_t(c)][ph == Phase::forward ? 0 : 1];
      if (k >= m) continue;
      const Action a{c, k, ph};
      if (ready(a, t) && may_start(a, g)) return a;
    }
    return std::nullopt;
  }

  void start(const Action& a, int t) {
    const int g = group(a.stage), end = t + dur(a.phase);
    switch (a.phase) {
      case Phase::forward:
        f_end[a.stage][a.microbatch] = end;
        peak[g] = std::max(peak[g], ++alive[g]);
        break;
      case Phase::backward:
      case Phase::input_grad: b_end[a.stage][a.microbatch] = end; break;
      case Phase::weight_grad: w_end[a.stage][a.microbatch] = end; break;
    }
  }
  // Frees the activations of actions that finished by t (after B, or after W when split).
  void release(int t, std::vector<std::vector<bool>>& freed) {
    const auto& last = split ? w_end : b_end;
    for (int c = 0; c < S; ++c)
      for (int k = 0; k < m; ++k)
        if (!freed[c][k] && last[c][k] <= t) {
          freed[c][k] = true;
          --alive[group(c)];
        }
  }
};

}  // namespace

std::string to_string(const Action& a, bool with_stage) {
  static const char kLetter[] = {'F', 'B', 'I', 'W'};
  std::string s = kLetter[int(a.phase)] + std::to_string(a.microbatch);
  if (with_stage) s += "@s" + std::to_string(a.stage);
  return s;
}

Schedule Schedule::make(const std::string& name, int groups, int microbatches, int chunks) {
  const Kind kind = kind_of(name);
  GLOBE_CHECK(groups >= 1, "[pipeline] a pipeline needs at least one stage, got ", groups);
  GLOBE_CHECK(microbatches >= 1, "[pipeline] the number of micro-batches must be at least 1, got ", microbatches);
  if (kind == Kind::interleaved)
    GLOBE_CHECK(chunks >= 2, "[pipeline] the interleaved schedule needs at least 2 model chunks per rank group ",
                "(chunks = ", chunks, "); with one chunk use 1f1b");
  else if (kind == Kind::zbv)
    GLOBE_CHECK(chunks == 2, "[pipeline] the zbv schedule runs exactly 2 model chunks per rank group, in a V ",
                "(chunks = ", chunks, "); give chunks = 2");
  else
    GLOBE_CHECK(chunks == 1, "[pipeline] chunks = ", chunks, " applies to the interleaved and zbv schedules only, not ",
                canonical(kind));

  Schedule s;
  s.name_ = canonical(kind);
  s.groups_ = groups;
  s.chunks_ = chunks;
  s.microbatches_ = microbatches;
  s.split_ = kind == Kind::zb_h1 || kind == Kind::zbv;
  s.v_shape_ = kind == Kind::zbv;

  Sim sim(kind, groups, chunks, microbatches);
  const int per_mb = s.split_ ? 3 : 2;  // actions per (stage, micro-batch)
  const int total = sim.S * microbatches * per_mb;
  std::vector<std::vector<bool>> freed(sim.S, std::vector<bool>(microbatches, false));
  std::vector<int> free_at(groups, 0);
  std::vector<std::vector<Action>> programs;
  std::vector<size_t> next(groups, 0);
  std::vector<std::vector<Action>> weight_queue(groups);  // split backward: W's ready to run, oldest first
  if (kind != Kind::zbv)
    for (int g = 0; g < groups; ++g) programs.push_back(sim.program(g));
  else
    programs.assign(size_t(groups), {});
  std::vector<std::vector<int>> next_of(size_t(sim.S), std::vector<int>(2, 0));  // zbv: per stage, next F / I
  std::vector<std::tuple<int, int, Action>> started;  // (start, group, action)
  s.grid_.assign(groups, {});
  for (int t = 0; int(started.size()) < total; ++t) {
    sim.release(t, freed);
    bool busy = false;
    for (int g = 0; g < groups; ++g) {
      busy |= free_at[g] > t;
      if (free_at[g] > t) continue;
      Action a{};
      const bool has_next = next[g] < programs[g].size();
      const std::optional<Action> picked = kind == Kind::zbv ? sim.pick(g, t, next_of) : std::nullopt;
      if (picked) {
        a = *picked;
        ++next_of[size_t(a.stage)][a.phase == Phase::forward ? 0 : 1];
        if (a.phase == Phase::input_grad) weight_queue[g].push_back({a.stage, a.microbatch, Phase::weight_grad});
      } else if (has_next && sim.ready(programs[g][next[g]], t) && sim.may_start(programs[g][next[g]], g)) {
        a = programs[g][next[g]++];
        if (a.phase == Phase::input_grad) weight_queue[g].push_back({a.stage, a.microbatch, Phase::weight_grad});
      } else if (!weight_queue[g].empty() && sim.ready(weight_queue[g].front(), t)) {
        // A weight gradient fills the time the program's next action would wait.
        a = weight_queue[g].front();
        weight_queue[g].erase(weight_queue[g].begin());
      } else {
        continue;
      }
      sim.start(a, t);
      free_at[g] = t + sim.dur(a.phase);
      busy = true;
      started.emplace_back(t, g, a);
      s.busy_ += sim.dur(a.phase);
      auto& row = s.grid_[g];
      row.resize(free_at[g], ".");
      for (int u = t; u < free_at[g]; ++u) row[u] = pipeline::to_string(a, chunks > 1);
    }
    // Nothing runs and nothing can start: each group waits for another's next action.
    GLOBE_CHECK(busy || int(started.size()) == total, "[pipeline] the ", s.name_, " schedule cannot run ",
                microbatches, " micro-batches on ", groups, " rank groups x ", chunks,
                " chunks: its order stalls after ", started.size(), " of ", total, " actions",
                kind == Kind::interleaved ? " (a multiple of the number of rank groups always runs)" : "");
  }
  s.makespan_ = *std::max_element(free_at.begin(), free_at.end());
  for (auto& row : s.grid_) row.resize(s.makespan_, ".");
  std::stable_sort(started.begin(), started.end(), [](const auto& x, const auto& y) {
    return std::tie(std::get<0>(x), std::get<1>(x)) < std::tie(std::get<0>(y), std::get<1>(y));
  });
  for (const auto& [start, g, a] : started) {
    s.order_.push_back(a);
    s.start_.push_back(start);
  }
  s.peak_alive_ = sim.peak;
  return s;
}

int Schedule::default_chunks(const std::string& name) {
  const Kind k = kind_of(name);
  return k == Kind::interleaved || k == Kind::zbv ? 2 : 1;
}

int Schedule::position(const Action& a) const {
  auto it = std::find(order_.begin(), order_.end(), a);
  return it == order_.end() ? -1 : int(it - order_.begin());
}

double Schedule::simulated_bubble() const {
  return makespan_ == 0 ? 0.0 : 1.0 - double(busy_) / (double(groups_) * makespan_);
}

std::string Schedule::to_string() const {
  std::ostringstream os;
  os << "schedule " << name_ << ": " << stages() << " stages";
  if (chunks_ > 1) os << " (" << chunks_ << " chunks on each of " << groups_ << " rank groups)";
  os << " x " << microbatches_ << " micro-batches; unit times F 1, " << (split_ ? "I 1, W 1" : "B 2")
     << "; bubble " << int(simulated_bubble() * 100 + 0.5) << "%\n";
  size_t width = 2;
  for (const auto& row : grid_)
    for (const auto& cell : row) width = std::max(width, cell.size());
  for (int g = 0; g < groups_; ++g) {
    os << (chunks_ > 1 ? "group " : "stage ") << g << " |";
    for (const auto& cell : grid_[g]) os << ' ' << std::setw(int(width)) << std::left << cell;
    os << '\n';
  }
  return os.str();
}

}  // namespace globe::pipeline
