// Numbers as people read them in tables and progress lines.
#pragma once

#include <string>

namespace globe {

// "512 B", "1.5 KiB", "3.2 MiB", ... (binary units, one decimal above bytes).
std::string format_bytes(double bytes);
// Seconds as "45s", "3m05s", "2h10m"; "?" for a negative or infinite time.
std::string format_duration(double seconds);

}  // namespace globe
