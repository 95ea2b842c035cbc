#include "globe/io/json_parse.h"

#include <set>
#include <vector>

#include "globe/base/error.h"

namespace globe::io {

namespace {
constexpr int kMaxDepth = 8;  // a header needs 3, an index 5
}

nlohmann::ordered_json parse_json_strict(std::string_view text, const char* op,
                                         const std::string& file, const char* what) {
  using json = nlohmann::ordered_json;
  std::vector<std::set<std::string>> open_objects;
  auto cb = [&](int depth, json::parse_event_t event, json& parsed) {
    GLOBE_CHECK(depth <= kMaxDepth, "[", op, "] '", file, "': ", what, " nests deeper than ",
                kMaxDepth, " levels");
    if (event == json::parse_event_t::object_start) open_objects.emplace_back();
    if (event == json::parse_event_t::object_end && !open_objects.empty()) open_objects.pop_back();
    if (event == json::parse_event_t::key && !open_objects.empty()) {
      const std::string& key = parsed.get_ref<const std::string&>();
      GLOBE_CHECK(open_objects.back().insert(key).second, "[", op, "] '", file, "': ", what,
                  " has the key '", key, "' twice");
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), cb);
  } catch (const json::exception& e) {
    GLOBE_FAIL("[", op, "] '", file, "': ", what, " is not valid JSON: ", e.what());
  }
}

}  // namespace globe::io
