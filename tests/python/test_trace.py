"""Tracing from Python on 2 and 4 ranks: CommTrace names the Python modules and the layout change
of each collective; a Timeline is valid trace-event JSON with a module span per named call."""
import json
import os
import tempfile

import numpy as np

import globe as flow
import globe.nn as nn


class Block(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.fc = nn.Linear(8, 4)
        self.fc.to_global(placement=p, sbp=flow.sbp.broadcast)

    def forward(self, x):
        return self.fc(x)


class Net(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.block = Block(p)

    def forward(self, x):
        return self.block(x).to_global(sbp=flow.sbp.broadcast)  # the rows gathered here, at the top level


def test_comm_trace_names_module_layout_and_counts():
    p = flow.placement("cpu", ranks=list(range(flow.env.get_world_size())))
    net = Net(p)
    x = flow.randn(8, 8, placement=p, sbp=flow.sbp.split(0))
    with flow.CommTrace() as comm:
        y = net(x)
        y.sum().backward()
        grads = [q.grad for q in net.parameters()]  # reading them finishes the deferred reduction
    assert all(g is not None for g in grads)
    records = comm.records()
    forward = [r for r in records if not r["backward"]]
    # The forward's one collective: y's rows (S(0)) gathered to B by Net's to_global, top level.
    assert [(r["collective"], r["layout"], r["module"]) for r in forward] == [("all_gather", "S(0) -> B on mesh axis 0", "")]
    # The backward all-reduces fc's weight and bias gradients (one bucket) when they are read.
    assert comm.counts() == {"all_gather": 1, "all_reduce": 1}, comm.table()
    assert "reduce gradients" in comm.table(with_time=False)


def test_timeline_has_a_span_per_named_module_call():
    p = flow.placement("cpu", ranks=list(range(flow.env.get_world_size())))
    net = Net(p)
    x = flow.randn(8, 8, placement=p, sbp=flow.sbp.split(0))
    path = os.path.join(tempfile.gettempdir(), f"globe_py_trace_{flow.env.get_rank()}.json")
    with flow.Timeline(path):
        with flow.trace.region("step 0"):
            net(x)
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    os.remove(path)
    names = [(e["cat"], e["name"]) for e in events if e["ph"] == "X"]
    assert ("module", "block") in names and ("module", "fc") in names and ("region", "step 0") in names
    fc = next(e for e in events if e["ph"] == "X" and e["name"] == "fc")
    assert fc["args"]["module"] == "block"  # nested: fc runs inside block
    assert np.isfinite(fc["dur"]) and fc["dur"] >= 0
