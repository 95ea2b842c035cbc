// The device layer: devices by name, memory per device, streams and events, tensors' devices, the
// errors of a build or machine without a GPU, and (on a GPU) moving tensors and mixing devices.
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "device/device_under_test.h"
#include "globe/base/free_lists.h"
#include "globe/globe.h"
#include "globe/device/backend.h"
#include "test_util.h"

namespace globe {
namespace {

using ::testing::HasSubstr;
using testing::error_of;

TEST(Device, ParsesAndPrintsTorchNames) {
  EXPECT_EQ(Device::parse("cpu"), kCPU);
  EXPECT_EQ(Device::parse("cpu:0"), kCPU);
  EXPECT_EQ(Device::parse("cuda"), cuda_device(0));
  EXPECT_EQ(Device::parse("cuda:3"), cuda_device(3));
  EXPECT_EQ(Device::parse("cuda:12").index, 12);
  EXPECT_EQ(kCPU.str(), "cpu");
  EXPECT_EQ(cuda_device(1).str(), "cuda:1");
  EXPECT_EQ(Device::parse(cuda_device(7).str()), cuda_device(7));
  EXPECT_TRUE(kCPU.is_cpu());
  EXPECT_FALSE(cuda_device(0).is_cpu());
  EXPECT_STREQ(device_type_name(cuda_device(0).type), "cuda");
  EXPECT_NE(cuda_device(0), cuda_device(1));
  EXPECT_NE(std::hash<Device>()(kCPU), std::hash<Device>()(cuda_device(0)));
}

TEST(Device, RefusesWhatIsNotADevice) {
  EXPECT_THAT(error_of([] { Device::parse("gpu"); }), HasSubstr("unknown device type 'gpu' (supported: cpu, cuda, sim)"));
  EXPECT_THAT(error_of([] { Device::parse("cuda:x"); }), HasSubstr("'cuda:x' is not a device"));
  EXPECT_THAT(error_of([] { Device::parse("cuda:-1"); }), HasSubstr("'cuda:-1' is not a device"));
  EXPECT_THAT(error_of([] { Device::parse("cuda:"); }), HasSubstr("'cuda:' is not a device"));
  EXPECT_THAT(error_of([] { Device::parse("cpu:1"); }), HasSubstr("the cpu device has only index 0"));
}

TEST(Device, KindsComeFromTheRegistryTheCpuFirst) {
  // Every kind the build lists (GLOBE_DEVICE_KINDS) is registered, built or not; the CPU is kind 0.
  const auto& names = device_type_names();
  ASSERT_EQ(names.size(), 3u);
  EXPECT_EQ(names[0], "cpu");
  EXPECT_EQ(names[1], "cuda");
  EXPECT_EQ(names[2], "sim");
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(parse_device_type(names[i]), DeviceType(i));
    EXPECT_EQ(device_type_name(DeviceType(i)), names[i]);
  }
  EXPECT_TRUE(device_built("cpu"));
  EXPECT_EQ(device_count("cpu"), 1);
  EXPECT_FALSE(device_built("tpu"));  // no such kind: neither built nor counted
  EXPECT_EQ(device_count("tpu"), 0);
  int others = 0;
  for (size_t i = 1; i < names.size(); ++i) others += device_count(names[i]);
  EXPECT_EQ(accelerator_count(), others - device_count("sim"));  // the test device is no accelerator
  EXPECT_STREQ(backend_of(parse_device_type("cuda")).label(), "CUDA");
  EXPECT_THAT(error_of([] { backend_of(DeviceType::cpu); }), HasSubstr("no backend for device kind #0"));
}

TEST(Device, KnowsWhetherThisBuildHasCuda) {
  EXPECT_EQ(cuda_built(), bool(GLOBE_TEST_CUDA_BUILT));
  if (!cuda_built()) {
    EXPECT_EQ(cuda_device_count(), 0);
  }
}

// What a program that asks for a GPU is told where it cannot have one: the CPU-only build and a
// CUDA build on a machine without a GPU say different things, each naming the fix.
std::string no_gpu_reason() {
  return cuda_built() ? "no CUDA device visible" : "this build has no CUDA (configure with a CUDA toolkit";
}

TEST(Device, WithoutAGpuEveryWayInSaysWhy) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a CUDA device is visible";
  const Device gpu = cuda_device(0);
  EXPECT_THAT(error_of([&] { Tensor::empty({2, 3}, kFloat32, gpu); }), HasSubstr(no_gpu_reason()));
  EXPECT_THAT(error_of([&] { zeros({2}, kFloat32, gpu); }), HasSubstr(no_gpu_reason()));
  EXPECT_THAT(error_of([&] { randn({2}, kFloat32, gpu); }), AllOf(HasSubstr("[randn] cuda:0"), HasSubstr(no_gpu_reason())));
  EXPECT_THAT(error_of([&] { to(ones({2}), gpu); }), AllOf(HasSubstr("[to] cuda:0"), HasSubstr(no_gpu_reason())));
  EXPECT_THAT(error_of([&] { placement("cuda", {0}); }),
              AllOf(HasSubstr("[placement] placement(cuda, [0]) on rank 0: cuda:0"), HasSubstr(no_gpu_reason())));
  EXPECT_THAT(error_of([&] { Event e(gpu); }), HasSubstr(no_gpu_reason()));
  EXPECT_THAT(error_of([&] { synchronize(gpu); }), HasSubstr(no_gpu_reason()));
  // Nothing was allocated on the way.
  EXPECT_EQ(memory_stats(gpu).current_bytes, 0);
  EXPECT_EQ(memory_stats(gpu).reserved_bytes, 0);
}

TEST(Device, PlacementNamesOnlyKnownDeviceTypes) {
  EXPECT_THAT(error_of([] { placement("tpu", {0}); }),
              HasSubstr("[placement] placement(tpu, [0]): unknown device type 'tpu' (supported: cpu, cuda, sim)"));
  EXPECT_EQ(placement("cpu", {0}).local_device(), kCPU);
  EXPECT_EQ(placement("cpu", {0}).device_type(), DeviceType::cpu);
}

TEST(Device, TensorsLiveOnTheCpuByDefault) {
  const Tensor x = randn({3, 4});
  EXPECT_EQ(x.device(), kCPU);
  EXPECT_EQ(x.storage()->device, kCPU);
  EXPECT_EQ((x * 2.0).device(), kCPU);
  EXPECT_TRUE(to(x, kCPU).same(x));  // already there: no copy
  EXPECT_EQ(zeros({2}, kFloat32, kCPU).device(), kCPU);
  const Tensor g = randn({4, 2}, placement("cpu", {0}), {sbp::split(0)});
  EXPECT_EQ(g.device(), kCPU);
  EXPECT_THAT(error_of([&] { to(g, kCPU); }), HasSubstr("is global: it changes device with its placement"));
}

TEST(Device, CountsCpuMemory) {
  reset_peak_memory(kCPU);
  const MemoryStats before = memory_stats(kCPU);
  {
    const Tensor big = Tensor::empty({1000}, kFloat64, kCPU);
    const MemoryStats during = memory_stats();
    EXPECT_EQ(during.current_bytes - before.current_bytes, 8000);
    EXPECT_EQ(during.reserved_bytes, during.current_bytes);
  }
  const MemoryStats after = memory_stats(kCPU);
  EXPECT_EQ(after.current_bytes, before.current_bytes);
  EXPECT_GE(after.peak_bytes - before.current_bytes, 8000);
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
const bool kFreeListsOn = false;  // the sanitizer must see every free
#else
const bool kFreeListsOn = std::getenv("GLOBE_FREE_LISTS") == nullptr || std::string(std::getenv("GLOBE_FREE_LISTS")) != "0";
#endif

// The per-thread free lists (base/free_lists.h): a block kept is the next one taken of its size
// class (multiples of 64 bytes), never one of another class or source; at most 16 a class, none
// over 1 KiB.
TEST(FreeLists, KeepAndTakeByClass) {
  if (!kFreeListsOn) GTEST_SKIP() << "the lists are off under AddressSanitizer";
  using detail::BlockSource;
  for (size_t bytes : {8, 100, 130}) {  // what earlier tests left in the classes used here
    while (void* q = detail::take_block(BlockSource::operator_new, bytes)) ::operator delete(q);
    while (void* q = detail::take_block(BlockSource::aligned64, bytes)) std::free(q);
  }
  void* p = ::operator new(detail::kept_block_bytes(100));
  ASSERT_TRUE(detail::keep_block(BlockSource::operator_new, p, 100));
  EXPECT_EQ(detail::take_block(BlockSource::aligned64, 100), nullptr) << "another source";
  EXPECT_EQ(detail::take_block(BlockSource::operator_new, 130), nullptr) << "class 192, not 128";
  EXPECT_EQ(detail::take_block(BlockSource::operator_new, 120), p) << "the same class: 128 bytes";
  EXPECT_EQ(detail::take_block(BlockSource::operator_new, 120), nullptr) << "taken once";
  EXPECT_FALSE(detail::keep_block(BlockSource::operator_new, p, 2000)) << "over 1 KiB: freed by the caller";
  std::vector<void*> kept;
  for (int i = 0; i < 20; ++i) {
    void* q = ::operator new(detail::kept_block_bytes(8));
    if (detail::keep_block(BlockSource::operator_new, q, 8)) kept.push_back(q);
    else ::operator delete(q);
  }
  EXPECT_EQ(kept.size(), 16u);
  for (size_t i = kept.size(); i-- > 0;) EXPECT_EQ(detail::take_block(BlockSource::operator_new, 8), kept[i]);
  for (void* q : kept) ::operator delete(q);
  ::operator delete(p);
}

// A tiny tensor's bytes come back from the lists: freed and made again it gets the same block,
// counted as held only while a tensor holds it, and empty() zeroes the reused block.
TEST(FreeLists, ATinyTensorReusesItsBlockAndIsStillCounted) {
  if (!kFreeListsOn) GTEST_SKIP() << "the lists are off under AddressSanitizer";
  const int64_t before = memory_stats(kCPU).current_bytes;
  const void* first = nullptr;
  {
    Tensor a = Tensor::uninitialized({3}, kFloat32, kCPU);
    a.data<float>()[0] = 7.0f;
    first = a.raw_data();
  }
  EXPECT_EQ(memory_stats(kCPU).current_bytes, before);
  const Tensor b = Tensor::empty({3}, kFloat32, kCPU);
  EXPECT_EQ(b.raw_data(), first) << "the freed block came back";
  EXPECT_EQ(b.to_vector<float>(), std::vector<float>(3, 0.0f));
  EXPECT_EQ(memory_stats(kCPU).current_bytes - before, 12);
}

// Run by test_device_free_lists_off with GLOBE_FREE_LISTS=0: nothing is kept, every block is freed.
TEST(FreeLists, OffByEnvironment) {
  const char* v = std::getenv("GLOBE_FREE_LISTS");
  if (v == nullptr || std::string(v) != "0") GTEST_SKIP() << "runs with GLOBE_FREE_LISTS=0";
  void* p = ::operator new(64);
  EXPECT_FALSE(detail::keep_block(detail::BlockSource::operator_new, p, 64));
  ::operator delete(p);
  const Tensor a = full({3}, 2.0);
  EXPECT_EQ(sum(a).item<float>(), 6.0f);
}

// Run by test_device_memory_limit with GLOBE_MEMORY_LIMIT=1M (the limit is read once per process).
TEST(MemoryLimit, AnAllocationPastItIsAClearErrorAndLosesNothing) {
  const char* limit = std::getenv("GLOBE_MEMORY_LIMIT");
  if (limit == nullptr || std::string(limit) != "1M") GTEST_SKIP() << "runs with GLOBE_MEMORY_LIMIT=1M";
  const Tensor a = full({100000}, 2.0);  // 400 000 bytes
  const std::string e = testing::error_of([] { Tensor::empty({200000}, kFloat32, kCPU); });  // 800 000 more
  EXPECT_THAT(e, ::testing::HasSubstr("[alloc] out of memory on cpu: asked 800000 bytes with "));
  EXPECT_THAT(e, ::testing::HasSubstr("over the limit of 1048576 bytes (GLOBE_MEMORY_LIMIT)"));
  EXPECT_EQ(sum(a).item<float>(), 200000.0f) << "what was held is intact, and work under the limit goes on";
}

TEST(Device, CpuStreamsAndEventsAreImmediate) {
  const Stream s = compute_stream(kCPU);
  EXPECT_EQ(s.handle, nullptr);
  Event e(kCPU);
  e.record(s);
  e.wait(s);
  e.synchronize();
  EXPECT_TRUE(e.done());
  synchronize(kCPU);
}

// cuBLAS costs a process 0.4 s and 210 MB to load (kernels/cuda/cublas_api.h): a program that
// never multiplies on a GPU must not load it, in the CUDA build either.
TEST(Device, CpuWorkNeverLoadsCublas) {
  const Tensor a = randn({8, 8}), b = randn({8, 8});
  EXPECT_EQ(matmul(a, b).numel(), 64);
  (void)cuda_device_count();
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) EXPECT_EQ(line.find("libcublas"), std::string::npos) << line;
}

// ---- on the device under test (device_under_test.h: a GPU, else the sim device) --------------------------------------------------------------------------------

TEST(OnDevice, MovesTensorsBothWaysBitExact) {
  GLOBE_REQUIRE_DEVICE();
  const Device gpu = testing::device_under_test();
  const Tensor x = randn({5, 7});
  const Tensor on_gpu = to(x, gpu);
  EXPECT_EQ(on_gpu.device(), gpu);
  EXPECT_EQ(testing::values(on_gpu), testing::values(x));  // read through the host
  EXPECT_EQ(testing::values(to(on_gpu, kCPU)), testing::values(x));
  // A transposed view copies its elements in its own order.
  const Tensor t = transpose(on_gpu, 0, 1);
  EXPECT_EQ(testing::values(to(t, kCPU)), testing::values(transpose(x, 0, 1)));
  EXPECT_EQ(randn({3}, kFloat32, gpu).device(), gpu);
  EXPECT_EQ(testing::values(full({2, 2}, 1.5, kFloat64, gpu)), std::vector<double>(4, 1.5));
  EXPECT_EQ(testing::values(zeros({3}, kInt64, gpu)), std::vector<double>(3, 0.0));
}

TEST(OnDevice, GradientsGoBackToTheSourceDevice) {
  GLOBE_REQUIRE_DEVICE();
  Tensor w = randn({4, 3}).set_requires_grad();
  const Tensor y = to(mul(to(w, testing::device_under_test()), 3.0), kCPU);
  sum(y).backward();
  EXPECT_EQ(w.grad().device(), kCPU);
  EXPECT_EQ(testing::values(w.grad()), std::vector<double>(12, 3.0));
}

TEST(OnDevice, MixingDevicesInOneOpNamesBoth) {
  GLOBE_REQUIRE_DEVICE();
  const Device gpu = testing::device_under_test();
  const Tensor a = ones({2, 2}), b = ones({2, 2}, kFloat32, gpu);
  EXPECT_THAT(error_of([&] { add(a, b); }),
              HasSubstr("[add] expects all tensors on one device, but input 0 is on cpu and input 1 on " + gpu.str()));
  EXPECT_THAT(error_of([&] { matmul(b, a); }), HasSubstr("input 0 is on " + gpu.str() + " and input 1 on cpu"));
}

TEST(OnDevice, AskingForMoreThanTheGpuHoldsIsAnErrorNotACrash) {
  GLOBE_REQUIRE_DEVICE();
  const Device gpu = testing::device_under_test();
  EXPECT_THAT(error_of([&] { Tensor::empty({int64_t(1) << 50}, kFloat32, gpu); }),
              HasSubstr("[alloc] out of memory on " + gpu.str() + ": asked 4503599627370496 bytes"));
  // The device still works afterwards.
  EXPECT_EQ(testing::values(ones({2}, kFloat32, gpu)), std::vector<double>(2, 1.0));
}

TEST(OnDevice, AGpuPastTheLastOneIsRefused) {
  GLOBE_REQUIRE_DEVICE();
  const std::string kind = testing::kind_under_test();
  const int n = device_count(kind);
  EXPECT_THAT(error_of([&] { zeros({1}, kFloat32, Device::parse(kind + ":" + std::to_string(n))); }),
              HasSubstr(kind + ":" + std::to_string(n) + " does not exist"));
}

TEST(OnDevice, TheCachingAllocatorReusesBlocks) {
  GLOBE_REQUIRE_DEVICE();
  const Device gpu = testing::device_under_test();
  { const Tensor warm = Tensor::empty({1 << 20}, kFloat32, gpu); }
  const MemoryStats before = memory_stats(gpu);
  for (int step = 0; step < 5; ++step) {
    const Tensor a = Tensor::empty({1 << 20}, kFloat32, gpu);
    EXPECT_EQ(memory_stats(gpu).current_bytes, before.current_bytes + (4 << 20));
  }
  EXPECT_EQ(memory_stats(gpu).reserved_bytes, before.reserved_bytes);  // no new block from the driver
  empty_cache(gpu);
  EXPECT_EQ(memory_stats(gpu).reserved_bytes, memory_stats(gpu).current_bytes);
}

TEST(OnDevice, EventsOrderTheComputeStream) {
  GLOBE_REQUIRE_DEVICE();
  const Device gpu = testing::device_under_test();
  const Tensor x = ones({1 << 16}, kFloat32, gpu);
  Event e(gpu);
  e.record(compute_stream(gpu));
  e.synchronize();
  EXPECT_TRUE(e.done());
  EXPECT_EQ(sum(to(x, kCPU)).item(), double(1 << 16));
}

// A global tensor on a placement of the device's kind: shards on the device, ops through its table,
// boxing through the host-staged communicator; its values are the CPU placement's.
TEST(OnDevice, GlobalTensorsOnADevicePlacement) {
  GLOBE_REQUIRE_DEVICE();
  const Device dev = testing::device_under_test();
  const Placement gpu = placement(testing::kind_under_test(), {0}), cpu = placement("cpu", {0});
  EXPECT_EQ(gpu.local_device(), Device(dev.type, 0));
  // The same seed and call number on both (each random op takes the next call number).
  manual_seed(21);
  const Tensor xc = randn({6, 4}, cpu, {sbp::split(0)});
  manual_seed(21);
  const Tensor xg = randn({6, 4}, gpu, {sbp::split(0)});
  EXPECT_EQ(xg.device(), Device(dev.type, 0));
  EXPECT_EQ(xg.to_local().device(), Device(dev.type, 0));
  // The same random values on every device: drawn on the GPU, a normal may differ, rarely, by one
  // float ulp (docs/design.md §16).
  const auto vc = testing::values(xc), vg = testing::values(xg);
  ASSERT_EQ(vg.size(), vc.size());
  for (size_t i = 0; i < vc.size(); ++i) EXPECT_NEAR(vg[i], vc[i], std::abs(vc[i]) * 0x1p-23) << "element " << i;
  const Tensor w = randn({4, 3}, cpu, {sbp::broadcast});
  const Tensor yc = matmul(xc, w), yg = matmul(xg, w.to_global(gpu, {sbp::broadcast}));
  const auto a = testing::values(yc), b = testing::values(yg);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5 * std::max(1.0, std::abs(a[i])));
  // Between placements the shard changes device.
  EXPECT_EQ(yg.to_global(cpu).to_local().device(), kCPU);
  EXPECT_NEAR(sum(xg * 2.0).item(), sum(xc * 2.0).item(), 1e-5);
}

// A shard made on the host and wrapped for a device placement (the GPT's batches) lands on the
// device, so ops with the placement's parameters find one device.
TEST(OnDevice, AHostShardWrappedForADevicePlacementMovesToTheDevice) {
  GLOBE_REQUIRE_DEVICE();
  const Placement gpu = placement(testing::kind_under_test(), {0});
  const Tensor ids = reshape(arange(6, kInt64), {2, 3});
  const Tensor g = make_global(ids, {2, 3}, gpu, {sbp::split(0)});
  EXPECT_EQ(g.to_local().device(), Device(testing::device_under_test().type, 0));
  EXPECT_EQ(testing::values(g), testing::values(ids));
  const Tensor table = randn({6, 4}, gpu, {sbp::broadcast});
  const Tensor on_host = table.to_global(placement("cpu", {0})).to_local();
  EXPECT_EQ(testing::values(embedding(table, g)), testing::values(embedding(on_host, ids)));
}

}  // namespace
}  // namespace globe
