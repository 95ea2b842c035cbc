"""Page 06's nn.Graph form, whole: OneFlow's pipeline tutorial program ("cuda" -> "cpu"), a
two-stage MLP whose stages live on ranks 0 and 1, trained through an nn.Graph with 2 micro-batches.

    PYTHONPATH=build/python /usr/bin/python3 -m globe.launch --nproc_per_node 2 docs/snippets/pipeline_graph.py
"""
import os
import sys

import globe as flow
import globe.nn as nn

# The two stages of page 06's plain form (examples/python/pipeline.py), as OneFlow's tutorial has them.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "python"))
from pipeline import Stage0, Stage1  # noqa: E402

BATCH = 16
BROADCAST = flow.sbp.broadcast
P0 = flow.placement("cpu", ranks=[0])
P1 = flow.placement("cpu", ranks=[1])


class PipelineModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.m_stage0 = Stage0()
        self.m_stage1 = Stage1()
        self.m_stage0.to_global(placement=P0, sbp=BROADCAST)
        self.m_stage1.to_global(placement=P1, sbp=BROADCAST)

    def forward(self, x):
        out_stage0 = self.m_stage0(x)
        in_stage1 = out_stage0.to_global(placement=P1, sbp=BROADCAST)  # stage 0 -> stage 1
        return self.m_stage1(in_stage1)


flow.manual_seed(0)
module_pipeline = PipelineModule()
sgd = flow.optim.SGD(module_pipeline.parameters(), lr=0.01)


class PipelineGraph(flow.nn.Graph):
    def __init__(self):
        super().__init__()
        self.module_pipeline = module_pipeline
        self.module_pipeline.m_stage0.to(flow.nn.graph.GraphModule).set_stage(stage_id=0, placement=P0)
        self.module_pipeline.m_stage1.to(flow.nn.graph.GraphModule).set_stage(stage_id=1, placement=P1)
        self.loss_fn = flow.nn.CrossEntropyLoss()
        self.config.set_gradient_accumulation_steps(2)
        self.add_optimizer(sgd)

    def build(self, x, y):
        loss = self.loss_fn(self.module_pipeline(x), y)
        loss.backward()
        return loss


graph_pipeline = PipelineGraph()
x = flow.randn(BATCH, 1, 28, 28, placement=P0, sbp=BROADCAST)  # the inputs on stage 0
y = flow.randint(0, 10, (BATCH,), placement=P1, sbp=BROADCAST)  # the labels on stage 1
for i in range(3):
    loss = graph_pipeline(x, y)  # one iteration: 2 micro-batches, the optimizer's step
    mean = loss.mean().item()  # the micro-batches' losses, stacked (collective: every rank reads)
    if flow.env.get_rank() == 0:
        print(f"iter {i} loss {mean:.4f}")
