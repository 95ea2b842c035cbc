// Small helpers shared by the example programs: argument parsing and rank-0 printing.
#pragma once

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include <globe/globe.h>

namespace example {

// The value after `--name` on the command line, or `fallback`.
inline int int_flag(int argc, char** argv, const char* name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return std::atoi(argv[i + 1]);
  return fallback;
}

// The string after `--name` on the command line, or `fallback`.
inline std::string string_flag(int argc, char** argv, const char* name, const std::string& fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
  return fallback;
}

// Whether `--name` is on the command line.
inline bool bool_flag(int argc, char** argv, const char* name) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return true;
  return false;
}

// The device type of the example's placements: "cpu", or "cuda" with `--device cuda` (a GPU per
// rank, or ranks sharing one: docs/design.md §16).
inline std::string device(int argc, char** argv) { return string_flag(argc, argv, "--device", "cpu"); }

// Prints from rank 0 only (every rank runs the same program).
inline bool is_rank0() { return globe::dist::world_rank() == 0; }

}  // namespace example
