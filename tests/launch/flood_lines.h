// The lines the launch fixture's `flood` mode prints, for test_launch to check what arrived.
#pragma once

#include <cstdint>
#include <string>

namespace launch_test {

// Line `i` (0-based) of rank `rank`, without its newline: 1 to 2000 bytes, its length and letters
// drawn from a hash of (rank, i), starting with "R.i " when there is room for it.
inline std::string flood_line(int rank, int i) {
  auto mix = [](std::uint64_t x) {  // splitmix64's finaliser
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
  };
  const std::uint64_t h = mix(std::uint64_t(rank) << 32 | std::uint32_t(i));
  const std::size_t len = 1 + h % 2000;
  std::string line = std::to_string(rank) + "." + std::to_string(i) + " ";
  line.resize(len, char('a' + (h >> 16) % 26));
  return line;
}

}  // namespace launch_test
