#!/usr/bin/python3
"""Reads 'globe_mlp|torch_mlp|ops <json>' lines (from run_benchmarks.sh) and prints the ratios."""
import json
import sys

res = {"ops": []}
for line in sys.stdin:
    kind, payload = line.split(" ", 1)
    d = json.loads(payload)
    if kind == "ops":
        res["ops"].append(d)
    else:
        res[kind] = d


def met(ok):
    return "met" if ok else "NOT met"


print("== summary")
ratios = {}
if "globe_mlp" in res and "torch_mlp" in res:
    g, t = res["globe_mlp"], res["torch_mlp"]
    r = g["steps_per_s_median"] / t["steps_per_s_median"]
    ratios["mlp_globe_over_torch"] = r
    print(f"bench_mlp  globe {g['steps_per_s_median']:.1f} steps/s ({g['step_ms_median']:.2f} ms/step) vs torch "
          f"{t['steps_per_s_median']:.1f} steps/s ({t['step_ms_median']:.2f} ms/step): ratio {r:.3f} "
          f"(goal >= 1.2: {met(r >= 1.2)})")
for d in res["ops"]:
    if d["bench"] == "matmul":
        r = d["ratio_globe_over_sgemm"]
        ratios["matmul_globe_over_sgemm"] = r
        print(f"matmul {d['n']}^3  globe {d['globe_gflops_median']:.1f} GFLOP/s vs raw sgemm "
              f"{d['sgemm_gflops_median']:.1f} GFLOP/s: ratio {r:.3f} (goal >= 0.95: {met(r >= 0.95)})")
    elif d["bench"] == "linear_bias":
        print(f"linear+bias [{d['rows']}, {d['in']}] -> {d['out']}  one op / matmul_nt + add: forward "
              f"{d['fwd_speedup_fused']:.3f}x, forward + backward {d['fwd_bwd_speedup_fused']:.3f}x (report)")
    else:
        print(f"{d['bench']:<11} {d['ns_per_op_no_grad']:.0f} ns/op without grad, "
              f"{d['ns_per_op_requires_grad']:.0f} ns/op with requires_grad")
if "globe_dp" in res and "torch_ddp" in res:
    g, t = res["globe_dp"], res["torch_ddp"]
    r = g["steps_per_s_median"] / t["steps_per_s_median"]
    ratios["dp_globe_over_torch_ddp"] = r
    print(f"data parallel 2x1  globe {g['steps_per_s_median']:.1f} steps/s per rank vs torch DDP "
          f"{t['steps_per_s_median']:.1f}: ratio {r:.3f} (goal >= 1.5: {met(r >= 1.5)})")
    if "globe_mlp" in res:
        eff = g["samples_per_s_global_median"] / (2 * res["globe_mlp"]["samples_per_s_global_median"])
        ratios["dp_scaling_efficiency"] = eff
        print(f"data parallel scaling efficiency (2-rank samples/s / 2x 1-rank): {eff:.3f} "
              f"(goal >= 0.75: {met(eff >= 0.75)})")
print("RATIOS " + json.dumps(ratios))
