#include "trace_merge.h"

#include <dirent.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <utility>
#include <vector>

namespace globe_launch {

bool merge_traces(const std::string& dir, std::string& said) {
  const std::string prefix = "trace.rank-", suffix = ".json";
  std::vector<std::pair<int, std::string>> files;  // rank, path
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name.size() > prefix.size() + suffix.size() && name.rfind(prefix, 0) == 0 &&
          name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
        files.emplace_back(std::atoi(name.c_str() + prefix.size()), dir + "/" + name);
    }
    ::closedir(d);
  }
  if (files.empty()) {
    said = "no rank wrote a timeline into " + dir;
    return false;
  }
  std::sort(files.begin(), files.end());
  const std::string out_path = dir + "/trace.json";
  std::ofstream out(out_path, std::ios::trunc);
  out << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[";
  bool first = true;
  std::string ranks;
  for (const auto& [rank, path] : files) {
    std::ifstream in(path);
    if (!in) {
      said = "cannot read " + path;
      return false;
    }
    // One event per line, each ending in "}" (then a comma, except the last).
    for (std::string line; std::getline(in, line);) {
      while (!line.empty() && (line.back() == ',' || line.back() == ' ' || line.back() == '\r')) line.pop_back();
      if (line.rfind("{\"name\":", 0) != 0 || line.back() != '}') continue;
      out << (first ? "\n" : ",\n") << line;
      first = false;
    }
    ranks += (ranks.empty() ? "" : ", ") + std::to_string(rank);
  }
  out << "\n]}\n";
  if (!out.flush()) {
    said = "cannot write " + out_path;
    return false;
  }
  said = "timeline of ranks [" + ranks + "] in " + out_path + " (open it in ui.perfetto.dev or chrome://tracing)";
  return true;
}

}  // namespace globe_launch
