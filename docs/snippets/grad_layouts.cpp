// Pages 02, 03 and 05: the layouts that gradients take in backward, seen from inside. `spy` is an
// identity op whose backward prints the layout of the gradient reaching it; the forward lines
// print the layouts the ops chose, and a CommTrace table what the step communicated (rank 0's).
// It uses the internal op interface (globe/ops/op.h), which ordinary programs never need. Rank 0
// prints, except where each rank's local values are shown.
//
//   build/bin/globe-launch --nproc_per_node 2 build/bin/grad_layouts [PART]
//   PART: data-parallel, column-stack, column-row or local (default: all four)
#include <iostream>
#include <sstream>
#include <string>

#include <globe/globe.h>

#include "globe/ops/op.h"
#include "globe/ops/sbp_rules.h"

namespace nn = globe::nn;
namespace sbp = globe::sbp;
using globe::Tensor;

namespace {

void say(const std::string& line) {
  if (globe::dist::world_rank() == 0) std::cout << line << std::endl;
}
std::string layout(const Tensor& t) {
  return t.sbp().to_string();
}
// Every line of `text` indented by two spaces, without the last newline.
std::string indent(const std::string& text) {
  std::string out = "  ";
  for (size_t i = 0; i + 1 < text.size(); ++i) out += text[i] == '\n' ? std::string("\n  ") : std::string(1, text[i]);
  return out;
}
std::string values(const std::vector<float>& v) {
  std::ostringstream os;
  for (size_t i = 0; i < v.size(); ++i) os << (i ? " " : "") << v[i];
  return os.str();
}

// Identity. S(i) -> S(i) and P -> P (B -> B is always valid), so it never moves data or changes a
// layout; its backward prints the gradient's layout and passes the gradient on unchanged.
class Spy final : public globe::Op {
 public:
  explicit Spy(std::string tag) : tag_(std::move(tag)) {}
  std::string name() const override { return "spy"; }
  globe::TensorMeta infer(const std::vector<globe::TensorMeta>& in) const override { return in[0]; }
  std::vector<globe::SbpSignature> sbp_signatures(const std::vector<globe::TensorMeta>& in,
                                                  const globe::SbpContext&) const override {
    std::vector<globe::SbpSignature> s;
    globe::sbp_rules::add_same_split(s, 1, int64_t(in[0].shape.size()));
    globe::sbp_rules::add_all_partial(s, 1);
    return s;
  }
  Tensor compute(const std::vector<Tensor>& in, const globe::ComputeArgs&) const override {
    Tensor out = Tensor::empty(in[0].shape(), in[0].dtype());
    globe::copy_(out, in[0]);
    return out;
  }
  std::vector<Tensor> vjp(const std::vector<Tensor>&, const Tensor&, const Tensor& g,
                          const std::vector<bool>&) const override {
    say("  gradient reaching " + tag_ + ": " + layout(g));
    return {g};
  }

 private:
  std::string tag_;
};

Tensor spy(const std::string& tag, const Tensor& t) {
  return globe::apply_op<Spy>({t}, tag);
}

// Page 05: a data-parallel Linear step.
void data_parallel(const globe::Placement& p) {
  say("data parallel: Linear(10, 16) broadcast, x split(0)");
  globe::manual_seed(0);
  nn::Linear fc(10, 16);
  fc.to_global(p, sbp::broadcast);
  Tensor x = globe::randn({20, 10}, p, sbp::split(0));
  Tensor labels = globe::randn({20, 16}, p, sbp::split(0));
  globe::CommTrace comm;  // what the step communicates: the table below
  Tensor w = spy("weight", fc.weight);
  Tensor y = spy("y", globe::matmul(x, globe::transpose(w, 0, 1)) + fc.bias);
  Tensor loss = globe::mse_loss(y, labels);
  say("  forward: x " + layout(x) + " @ weight^T " + layout(w) + " -> y " + layout(y) + "; loss " +
      layout(loss));
  loss.backward();
  const Tensor gw = fc.weight.grad(), gb = fc.bias.grad();
  comm.stop();
  say("  weight.grad() " + layout(gw) + ", bias.grad() " + layout(gb));
  say(indent(comm.table(/*with_time=*/false)));
  const std::vector<float> v = gw.to_vector<float>();  // collective: every rank reads
  say("  weight.grad()[0][0:3] = " + values({v[0], v[1], v[2]}));
}

// Page 03: two Linear layers split along their output features (weight and bias S(0)), x broadcast.
void column_stack(const globe::Placement& p) {
  say("two column-parallel layers: Linear(10, 20), ReLU, Linear(20, 16), weights and biases "
      "split(0), x broadcast");
  globe::manual_seed(0);
  nn::Linear fc1(10, 20), fc2(20, 16);
  for (nn::Linear* fc : {&fc1, &fc2})
    fc->distribute(p, {{"weight", sbp::split(0)}, {"bias", sbp::split(0)}}, sbp::broadcast);
  Tensor x = globe::randn({20, 10}, p, sbp::broadcast);
  Tensor labels = globe::randn({20, 16}, p, sbp::broadcast);
  Tensor h = fc1(x), r = globe::relu(h), y = fc2(r);
  Tensor loss = globe::mse_loss(y, labels);
  say("  forward: x " + layout(x) + ", fc1.weight " + layout(fc1.weight) + " -> h " + layout(h) +
      ", relu " + layout(r) + ", fc2.weight " + layout(fc2.weight) + " -> y " + layout(y) +
      "; loss " + layout(loss));
  loss.backward();
  const Tensor g1 = fc1.weight.grad(), g2 = fc2.weight.grad();
  say("  fc1.weight.grad() " + layout(g1) + ", fc2.weight.grad() " + layout(g2));
}

// How column_row() ends the step: MSE against B targets (pages 03 and 05), or cross-entropy
// against class labels with the logits y as they come (P) or made B first (page 03).
enum class Loss { mse, cross_entropy, cross_entropy_b };

// Pages 03 and 05: a column-parallel layer, then a row-parallel one; x a broadcast leaf.
void column_row(const globe::Placement& p, Loss kind) {
  say("column then row parallel: ColumnParallelLinear(10, 20), GELU, RowParallelLinear(20, 16), x "
      "broadcast" + std::string(kind == Loss::mse ? "" : kind == Loss::cross_entropy
                                                        ? "; cross-entropy of y"
                                                        : "; cross-entropy of y made B"));
  globe::manual_seed(0);
  nn::ColumnParallelLinear fc1(10, 20, p);
  nn::RowParallelLinear fc2(20, 16, p);
  Tensor x = globe::randn({20, 10}, p, sbp::broadcast);
  x.set_requires_grad();
  Tensor labels = globe::randn({20, 16}, p, sbp::broadcast);
  Tensor classes = globe::randint(0, 16, {20}, p, sbp::broadcast);
  globe::CommTrace comm;
  Tensor h = spy("h (column out)", fc1(spy("x", x)));
  Tensor g = globe::gelu(h);
  Tensor y = spy("y (row out)", fc2(g));
  Tensor loss;
  if (kind == Loss::mse) {
    loss = globe::mse_loss(y, labels);
  } else {
    if (kind == Loss::cross_entropy_b) y = y.to_global(p, sbp::broadcast);  // the one line
    loss = globe::cross_entropy(y, classes);
  }
  say("  forward: h " + layout(h) + ", gelu " + layout(g) + ", fc2.weight " + layout(fc2.weight) +
      ", fc2.bias " + layout(fc2.bias) + " -> y " + layout(y) + "; loss " + layout(loss));
  loss.backward();
  const Tensor g1 = fc1.weight.grad(), g2 = fc2.weight.grad(), gb = fc2.bias.grad(), gx = x.grad();
  comm.stop();
  say("  fc1.weight.grad() " + layout(g1) + ", fc2.weight.grad() " + layout(g2) +
      ", fc2.bias.grad() " + layout(gb) + ", x.grad() " + layout(gx));
  say(indent(comm.table(/*with_time=*/false)));
}

// Page 05: gradients of local tensors made global, and of to_local. Each rank prints its own.
void local_global(const globe::Placement& p) {
  say("local -> global and back: each rank's local gradient");
  const int rank = globe::dist::world_rank();
  auto tell = [&](const std::string& what) {
    std::cout << "  rank " << rank << ": " << what << std::endl;
  };

  Tensor xl = globe::full({3}, rank + 1.0);  // each rank's piece: 1s on rank 0, 2s on rank 1
  xl.set_requires_grad();
  Tensor xg = xl.to_global(p, sbp::split(0));
  globe::sum(xg * xg).backward();
  tell("split(0), sum(x * x): xl.grad() = " + values(xl.grad().to_vector<float>()));

  Tensor wl = globe::ones({3});
  wl.set_requires_grad();
  globe::sum(wl.to_global(p, sbp::broadcast) * 2.0).backward();  // a B gradient
  tell("broadcast, sum(2 * w): wl.grad() = " + values(wl.grad().to_vector<float>()));

  Tensor vl = globe::ones({3});
  vl.set_requires_grad();
  Tensor d = globe::full({2, 3}, 2.0, p, sbp::split(0));
  globe::sum(d * vl.to_global(p, sbp::broadcast)).backward();  // a P gradient: each rank's rows
  tell("broadcast, sum(d * v), d [2, 3] of 2s split(0): vl.grad() = " +
       values(vl.grad().to_vector<float>()));

  Tensor b = globe::ones({3}, p, sbp::broadcast);
  b.set_requires_grad();
  globe::sum(b.to_local()).backward();  // on every rank: the accumulation into b is collective
  const Tensor gb = b.grad();
  say("  to_local of a B tensor, sum(b.to_local()).backward() on every rank: b.grad() " +
      layout(gb) + " = " + values(gb.to_vector<float>()));
}

}  // namespace

int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "all";
  const auto p = globe::Placement::all("cpu");
  say("world size " + std::to_string(globe::dist::world_size()));
  using Part = void (*)(const globe::Placement&);
  const std::pair<std::string, Part> parts[] = {{"data-parallel", data_parallel},
                                                {"column-stack", column_stack},
                                                {"column-row", [](const globe::Placement& p) { column_row(p, Loss::mse); }},
                                                {"cross-entropy", [](const globe::Placement& p) { column_row(p, Loss::cross_entropy); }},
                                                {"cross-entropy-b", [](const globe::Placement& p) { column_row(p, Loss::cross_entropy_b); }},
                                                {"local", local_global}};
  bool known = false;
  for (const auto& [name, run] : parts)
    if (what == "all" || what == name) {
      run(p);
      known = true;
    }
  if (!known) {
    std::cerr << "grad_layouts: unknown part " << what
              << " (data-parallel, column-stack, column-row, cross-entropy, cross-entropy-b, local)\n";
    return 2;
  }
  return 0;
}
