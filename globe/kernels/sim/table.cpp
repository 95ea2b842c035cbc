// The "sim" device's kernel table (device/sim/registration.cpp): the CPU's kernels over its memory,
// opened (device/sim/arena.h) while each runs.
#include "globe/device/sim/arena.h"
#include "globe/kernels/host_memory_table.h"

namespace globe::kernels::sim {

const DeviceKernels& table() { return host_memory_table<globe::sim::Open>("sim"); }

}  // namespace globe::kernels::sim
