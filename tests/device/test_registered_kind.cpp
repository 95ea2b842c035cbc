// A device kind added by a program alone, at run time (device/backend.h's register_device_kind): a
// backend over plain host memory and the CPU's kernels through kernels/host_memory_table.h, a few
// lines. Ops reach it through dispatch like any built-in kind, its devices parse and print, mixed
// devices are refused naming it, and global tensors on its placement give the CPU's values. Its
// own binary: the registration stays out of every other test.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "globe/device/backend.h"
#include "globe/globe.h"
#include "globe/kernels/host_memory_table.h"
#include "test_util.h"

namespace globe {
namespace {

using ::testing::HasSubstr;
using testing::error_of;

// ---- the whole device: memory, copies, synchronous streams ----
class ToyBackend final : public DeviceBackend {
 public:
  explicit ToyBackend(const char* name = "toy") : name_(name) {}
  const char* name() const override { return name_; }
  const char* label() const override { return "toy"; }
  bool built() const override { return true; }
  std::string build_hint() const override { return ""; }
  int count() const override { return 1; }
  std::string no_device_reason() const override { return ""; }
  void* allocate(int, size_t n) override { return std::aligned_alloc(64, (n + 63) / 64 * 64); }
  void release(int, void* p) override { std::free(p); }
  size_t cached_bytes(int) const override { return 0; }
  void empty_cache(int) override {}
  void copy(int, void* dst, bool, const void* src, bool, size_t n) override { std::memcpy(dst, src, n); }
  void copy_peer(int, void* dst, int, const void* src, size_t n) override { std::memcpy(dst, src, n); }
  void zero(int, void* p, size_t n) override { std::memset(p, 0, n); }
  void* compute_stream(int) override { return this; }
  void synchronize(int) override {}
  void* event_create(int) override { return this; }
  void event_destroy(void*) override {}
  void event_record(void*, void*) override {}
  void stream_wait_event(void*, void*) override {}
  void event_synchronize(void*) override {}
  bool event_done(void*) override { return true; }

 private:
  const char* name_;
};
struct NoGuard {};

const DeviceType kToy = [] {
  const DeviceType t = register_device_kind(std::make_unique<ToyBackend>());
  kernels::register_kernel_table(t, kernels::host_memory_table<NoGuard>("toy"));
  return t;
}();

// ---- what it can do ----
TEST(RegisteredKind, ParsesPrintsAndIsNamedInErrors) {
  EXPECT_EQ(Device::parse("toy:0"), Device(kToy, 0));
  EXPECT_EQ(Device(kToy, 0).str(), "toy:0");
  EXPECT_GE(size_t(kToy), built_in_device_kinds());
  EXPECT_THAT(error_of([] { Device::parse("tpu"); }), HasSubstr("(supported: cpu, cuda, sim, toy)"));
  EXPECT_THAT(error_of([] { register_device_kind(std::make_unique<ToyBackend>()); }),
              HasSubstr("the kind 'toy' is registered already"));
  EXPECT_THAT(error_of([] { kernels::register_kernel_table(DeviceType::cpu, kernels::host_memory_table<NoGuard>("x")); }),
              HasSubstr("is built in"));
}

TEST(RegisteredKind, BadRegistrationsAreClearErrors) {
  EXPECT_THAT(error_of([] { register_device_kind(std::make_unique<ToyBackend>("bad:name")); }),
              HasSubstr("'bad:name' is not a kind's name (no ':' or ',')"));
  EXPECT_THAT(error_of([] { register_device_kind(nullptr); }), HasSubstr("register_device_kind: no backend"));
  // A kind without a kernel table: its tensors exist, an op on them says what is missing.
  register_device_kind(std::make_unique<ToyBackend>("bare"));
  const Tensor x = to(ones({2}), Device::parse("bare"));
  EXPECT_THAT(error_of([&] { (void)(x * 2.0); }), HasSubstr("bare: the kind has no kernel table (register_kernel_table)"));
  // Globe holds kMaxDeviceKinds kinds, the CPU included.
  static const char* const names[] = {"k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8"};
  size_t i = 0;
  while (device_type_names().size() < kMaxDeviceKinds) register_device_kind(std::make_unique<ToyBackend>(names[i++]));
  EXPECT_THAT(error_of([&] { register_device_kind(std::make_unique<ToyBackend>(names[i])); }),
              HasSubstr("Globe holds at most 8 kinds besides the CPU"));
}

TEST(RegisteredKind, OpsRunThroughDispatchWithTheCpusValuesAndGradients) {
  const Device toy = Device::parse("toy");
  const Tensor a = randn({4, 3}), b = randn({3, 5});
  Tensor ta = to(a, toy).set_requires_grad();
  const Tensor y = relu(matmul(ta, to(b, toy)));
  EXPECT_EQ(y.device(), toy);
  EXPECT_EQ(testing::values(y), testing::values(relu(matmul(a, b))));
  sum(y).backward();
  Tensor ca = a.detach().set_requires_grad();
  sum(relu(matmul(ca, b))).backward();
  EXPECT_EQ(ta.grad().device(), toy);
  EXPECT_EQ(testing::values(ta.grad()), testing::values(ca.grad()));
  EXPECT_THAT(error_of([&] { add(ta, a); }), HasSubstr("input 0 is on toy:0 and input 1 on cpu"));
}

TEST(RegisteredKind, GlobalTensorsOnItsPlacement) {
  const Placement p = placement("toy", {0});
  manual_seed(5);
  const Tensor x = randn({6, 4}, p, {sbp::split(0)});
  manual_seed(5);
  const Tensor c = randn({6, 4}, placement("cpu", {0}), {sbp::split(0)});
  EXPECT_EQ(x.to_local().device(), Device::parse("toy:0"));
  EXPECT_EQ(testing::values(softmax(x, -1)), testing::values(softmax(c, -1)));
}

}  // namespace
}  // namespace globe
