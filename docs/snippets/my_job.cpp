// Quick start, "A program of your own": the smallest Globe program, compiled against the build tree
// (docs/01-quickstart.md shows the command). A batch split over every rank, one Linear layer
// replicated, one training step.
#include <iostream>

#include <globe/globe.h>

int main() {
  namespace sbp = globe::sbp;
  const auto p = globe::Placement::all("cpu");
  globe::manual_seed(0);
  globe::nn::Linear fc(8, 4);
  fc.to_global(p, sbp::broadcast);
  globe::optim::SGD sgd(fc.parameters(), {.lr = 0.1});

  auto x = globe::randn({16, 8}, p, sbp::split(0));
  auto loss = globe::mse_loss(fc(x), globe::zeros({16, 4}, p, sbp::split(0)));
  loss.backward();
  sgd.step();
  const float value = loss.item<float>();  // collective: every rank reads it
  if (globe::dist::world_rank() == 0)
    std::cout << "ranks " << globe::dist::world_size() << ", loss " << value << std::endl;
  return 0;
}
