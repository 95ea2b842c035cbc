#!/usr/bin/python3
"""Generates the golden data of tests/golden/ and tests/optim/ from PyTorch (CPU, float32).

Run from anywhere with Debian's interpreter (the one that has torch):
    /usr/bin/python3 scripts/golden/make_golden.py
Writes tests/golden/data/{mlp_sgd,optim,ops}.json. The test suite reads the committed JSON and
never needs torch. Every float is stored as the shortest decimal of the float32 value widened to
double (repr(float(np.float32(v)))), so parsing it as double and narrowing to float is exact.
"""
import json
import os
import sys

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "golden", "data")


def f32(v):
    return float(np.float32(v))


def tensor_json(t):
    """{"shape": [...], "data": [row-major float32 values]}."""
    a = t.detach().cpu().to(torch.float32).contiguous().numpy()
    return {"shape": list(a.shape), "data": [f32(v) for v in a.reshape(-1)]}


def write(name, obj):
    path = os.path.join(OUT, name)
    with open(path, "w") as f:
        json.dump(obj, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {os.path.normpath(path)} ({os.path.getsize(path)} bytes)")


def meta():
    return {"generator": "scripts/golden/make_golden.py", "torch": torch.__version__,
            "numpy": np.__version__, "python": sys.version.split()[0]}


# ---- mlp_sgd.json --------------------------------------------------------------------------------
def make_mlp():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    g = torch.Generator().manual_seed(1)
    x = torch.randn(12, 8, generator=g)
    y = torch.randn(12, 4, generator=g)
    initial = {k: tensor_json(v) for k, v in model.state_dict().items()}
    lr, steps = 0.05, 20
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append(f32(loss.item()))
    final = {k: tensor_json(v) for k, v in model.state_dict().items()}
    write("mlp_sgd.json", {
        "meta": meta(),
        "model": "Sequential(Linear(8,16), ReLU, Linear(16,4)); mse_loss (mean); SGD(lr) on a fixed batch; "
                 "losses[i] is the loss computed in step i, before that step's update",
        "lr": lr, "steps": steps,
        "x": tensor_json(x), "y": tensor_json(y),
        "initial": initial, "losses": losses, "final": final,
    })


# ---- optim.json ----------------------------------------------------------------------------------
def make_optim():
    g = torch.Generator().manual_seed(2)
    p0 = torch.randn(5, 3, generator=g)
    grads = [torch.randn(5, 3, generator=g) for _ in range(5)]
    configs = [
        ("sgd_plain_wd", "sgd", dict(lr=0.1, momentum=0.0, dampening=0.0, weight_decay=0.01, nesterov=False)),
        ("sgd_momentum", "sgd", dict(lr=0.1, momentum=0.9, dampening=0.0, weight_decay=0.01, nesterov=False)),
        ("sgd_momentum_dampening", "sgd",
         dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01, nesterov=False)),
        ("sgd_nesterov", "sgd", dict(lr=0.1, momentum=0.9, dampening=0.0, weight_decay=0.01, nesterov=True)),
        ("adam", "adam", dict(lr=0.01, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)),
        ("adam_wd", "adam", dict(lr=0.01, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.1)),
        ("adamw", "adamw", dict(lr=0.01, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)),
    ]
    out = []
    for name, kind, opts in configs:
        p = p0.clone().requires_grad_(True)
        cls = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW}[kind]
        opt = cls([p], **opts)
        after = []
        for gr in grads:
            p.grad = gr.clone()
            opt.step()
            after.append(tensor_json(p))
        st = opt.state_dict()["state"].get(0, {})
        state = {k: tensor_json(v) for k, v in st.items() if torch.is_tensor(v) and v.numel() > 1}
        if "step" in st:
            state_step = int(st["step"].item() if torch.is_tensor(st["step"]) else st["step"])
        else:
            state_step = None
        options = dict(opts)
        if "betas" in options:
            options["beta1"], options["beta2"] = options.pop("betas")
        out.append({"name": name, "kind": kind, "options": options, "after": after,
                    "final_state": state, "final_state_step": state_step})
    # A second parameter that gets no gradient in the first two steps (its grad is None): torch
    # skips it then, and Adam's bias correction uses that parameter's own step count.
    q0 = torch.randn(4, generator=g)
    q_grads = [None, None] + [torch.randn(4, generator=g) for _ in range(3)]
    partial = []
    for name, kind, opts in [configs[1], configs[4]]:
        p = p0.clone().requires_grad_(True)
        q = q0.clone().requires_grad_(True)
        cls = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam}[kind]
        opt = cls([p, q], **opts)
        after_p, after_q = [], []
        for gp, gq in zip(grads, q_grads):
            p.grad = gp.clone()
            q.grad = None if gq is None else gq.clone()
            opt.step()
            after_p.append(tensor_json(p))
            after_q.append(tensor_json(q))
        options = dict(opts)
        if "betas" in options:
            options["beta1"], options["beta2"] = options.pop("betas")
        partial.append({"name": name + "_partial", "kind": kind, "options": options,
                        "after": after_p, "after_second": after_q})
    write("optim.json", {
        "meta": meta(),
        "about": "one parameter [5,3] per config, starting at param0; before step i its grad is grads[i]; "
                 "after[i] is the parameter after step i (torch.optim semantics, float32)",
        "param0": tensor_json(p0), "grads": [tensor_json(t) for t in grads], "configs": out,
        "about_partial": "two parameters [param0, second_param0]; the second gets second_grads[i] "
                         "(null: no gradient, grad is None) before step i; after / after_second as above",
        "second_param0": tensor_json(q0),
        "second_grads": [None if t is None else tensor_json(t) for t in q_grads],
        "partial": partial,
    })


# ---- ops.json ------------------------------------------------------------------------------------
def make_ops():
    """Forward outputs and input gradients of sum(out * r) for a fixed weighting r."""
    g = torch.Generator().manual_seed(3)
    cases = []

    def case(name, fn, inputs, **params):
        ins = [t.clone().requires_grad_(t.is_floating_point()) for t in inputs]
        out = fn(*ins)
        r = torch.randn(out.shape, generator=g)
        (out * r).sum().backward()
        cases.append({"name": name, "params": params,
                      "inputs": [tensor_json(t) if t.is_floating_point() else
                                 {"shape": list(t.shape), "int": [int(v) for v in t.reshape(-1)]} for t in inputs],
                      "weight_r": tensor_json(r), "out": tensor_json(out),
                      "grads": [tensor_json(t.grad) if t.grad is not None else None for t in ins]})

    x = torch.randn(4, 6, generator=g) * 2.0
    case("gelu", F.gelu, [x])
    case("softmax_last", lambda a: F.softmax(a, dim=-1), [x], dim=-1)
    case("softmax_dim0", lambda a: F.softmax(a, dim=0), [x], dim=0)
    case("log_softmax_last", lambda a: F.log_softmax(a, dim=-1), [x], dim=-1)
    x3 = torch.randn(2, 3, 5, generator=g) * 3.0 + 1.0
    w = torch.randn(5, generator=g)
    b = torch.randn(5, generator=g)
    case("layer_norm", lambda a, ww, bb: F.layer_norm(a, (5,), ww, bb, eps=1e-5), [x3, w, b],
         normalized_shape=[5], eps=1e-5)
    logits = torch.randn(6, 5, generator=g) * 2.0
    target = torch.tensor([0, 4, 2, 2, 1, 3], dtype=torch.int64)
    case("cross_entropy", lambda a, t: F.cross_entropy(a, t), [logits, target])
    a = torch.randn(7, 3, generator=g)
    t = torch.randn(7, 3, generator=g)
    case("mse_loss", lambda u, v: F.mse_loss(u, v), [a, t])
    write("ops.json", {
        "meta": meta(),
        "about": "out = op(inputs); grads[i] = d sum(out * weight_r) / d inputs[i] (null: not differentiable)",
        "cases": cases,
    })


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    torch.set_num_threads(1)
    make_mlp()
    make_optim()
    make_ops()
