// Strict JSON parsing for checkpoint headers and indexes (internal to globe/io).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace globe::io {

// Parses `text`, keeping key order. Rejects what a lenient parser lets through silently: a key
// twice in one object (ambiguous), nesting deeper than 8 levels. Every problem is a globe::Error
// "[<op>] '<file>': <what> ...".
nlohmann::ordered_json parse_json_strict(std::string_view text, const char* op,
                                         const std::string& file, const char* what);

}  // namespace globe::io
