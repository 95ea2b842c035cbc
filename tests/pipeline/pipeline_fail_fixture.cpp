// A two-stage pipeline whose first stage throws at micro-batch 3 (tests/pipeline's failure test
// launches it): rank 1 is then waiting for that micro-batch's activation.
#include <globe/globe.h>

#include <chrono>
#include <iostream>
#include <thread>

using namespace globe;

struct FailsAtCall : nn::UnaryModule {
  int calls = 0, fail_at;
  explicit FailsAtCall(int n) : fail_at(n) {}
  Tensor forward(const Tensor& x) override {
    if (calls++ == fail_at) {
      // Rank 1 has received micro-batches 0-2 by now or soon; let it reach its wait for 3 (a slow
      // sanitizer build may still be starting up).
      std::this_thread::sleep_for(std::chrono::seconds(1));
      throw Error("[fixture] stage 0 fails at micro-batch " + std::to_string(fail_at));
    }
    return x;
  }
};

int main() {
  nn::Linear a(4, 4), b(4, 4);
  FailsAtCall fail(3);
  pipeline::Pipeline pipe({placement("cpu", {0}), placement("cpu", {1})}, {&fail, &a, &b},
                          {.schedule = "gpipe", .microbatches = 6, .stage_of_block = {0, 0, 1}});
  Tensor x = randn({12, 4}), y = randn({12, 4});
  pipe.step(x, y, mse_loss);
  std::cout << "finished without the failure" << std::endl;
  return 0;
}
