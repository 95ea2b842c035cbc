// Uses an installed Globe: one data-parallel SGD step on every rank, rank 0 prints the loss.
#include <cstdio>

#include <globe/globe.h>
#include <globe/version.h>

int main() {
  namespace sbp = globe::sbp;
  const auto p = globe::Placement::all("cpu");
  globe::manual_seed(0);
  globe::nn::Linear fc(8, 4);
  fc.to_global(p, sbp::broadcast);
  globe::optim::SGD sgd(fc.parameters(), {.lr = 0.1});
  const auto x = globe::randn({16, 8}, p, sbp::split(0));
  auto loss = globe::mse_loss(fc(x), globe::zeros({16, 4}, p, sbp::split(0)));
  loss.backward();
  sgd.step();
  const double value = loss.item();
  if (globe::dist::world_rank() == 0)
    std::printf("globe %s, %d ranks, loss %.6f\n", GLOBE_VERSION, globe::dist::world_size(), value);
  return 0;
}
