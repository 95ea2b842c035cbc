// Globe: one header for users.
//
//   #include <globe/globe.h>
//   using namespace globe;
//   nn::Linear fc(4, 2);
//   Tensor loss = mse_loss(fc(randn({8, 4})), zeros({8, 2}));
//   loss.backward();          // fc.weight.grad() now holds d(loss)/d(weight)
#pragma once

#include "globe/autograd/checkpoint.h"
#include "globe/autograd/engine.h"
#include "globe/core/deterministic.h"
#include "globe/core/grad_mode.h"
#include "globe/core/random.h"
#include "globe/core/tensor.h"
#include "globe/nn/init.h"
#include "globe/nn/layers.h"
#include "globe/nn/module.h"
#include "globe/nn/fully_shard.h"
#include "globe/nn/mixed_precision.h"
#include "globe/nn/parameter_use.h"
#include "globe/nn/parallel_layers.h"
#include "globe/ops/ops.h"
#include "globe/optim/clip.h"
#include "globe/optim/grad_scaler.h"
#include "globe/optim/optimizer.h"
#include "globe/base/progress.h"
#include "globe/base/timeline.h"
#include "globe/base/trace.h"
#include "globe/dist/comm_trace.h"
#include "globe/dist/error_report.h"
#include "globe/dist/machine.h"
#include "globe/dist/runtime.h"
#include "globe/global/boxing.h"
#include "globe/global/global_tensor.h"
#include "globe/global/grad_buckets.h"
#include "globe/global/meta_wire.h"
#include "globe/global/placement.h"
#include "globe/core/sbp.h"
#include "globe/io/checkpoint.h"
#include "globe/io/checkpoint_manager.h"
#include "globe/io/hf_checkpoint.h"
#include "globe/io/sharded.h"
#include "globe/device/device.h"
#include "globe/device/memory.h"
#include "globe/device/stream.h"
#include "globe/kernels/matmul_precision.h"
#include "globe/pipeline/pipeline.h"
#include "globe/pipeline/schedule.h"
