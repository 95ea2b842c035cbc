"""The Python editions of the tutorial programs print what the C++ programs print: run with
`python3 -m globe.launch` on 1 and 2 ranks, against build/bin/<program> (GLOBE_BUILD_DIR)."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("GLOBE_BUILD_DIR", os.path.join(ROOT, "build"))


ENV = dict(os.environ, PYTHONPATH=os.path.join(BUILD, "python"))


def run(cmd, cwd):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=240, cwd=cwd, env=ENV)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


@pytest.mark.parametrize("ranks", [1, 2])
@pytest.mark.parametrize("program, losses", [("quickstart", 20), ("data_parallel", 10), ("model_parallel", 10),
                                             ("save_load", 10), ("pipeline", 20)])
def test_python_edition_prints_the_cpp_losses(program, losses, ranks, tmp_path):
    launch = [os.path.join(BUILD, "bin", "globe-launch"), "--nproc_per_node", str(ranks), "--no-prefix"]
    cpp = run(launch + [os.path.join(BUILD, "bin", program)], tmp_path)  # save_load writes a file here
    py = run([sys.executable, "-m", "globe.launch", "--nproc_per_node", str(ranks), "--no-prefix",
              os.path.join(ROOT, "examples", "python", program + ".py")], tmp_path)
    assert py == cpp
    assert py.count(" loss ") == losses


@pytest.mark.parametrize("program", ["quickstart", "data_parallel", "model_parallel", "save_load", "pipeline", "gpt"])
def test_python_edition_on_the_sim_device_prints_the_cpu_losses(program, tmp_path):
    """With --device sim each rank's shards live in the sim device's memory (globe/device/sim/),
    collectives are staged through the host and .numpy() copies back, as on a GPU: the losses
    are the CPU's, on 2 ranks."""
    if program == "gpt" and not os.path.isdir("/usr/share/games/fortunes"):
        pytest.skip("the corpus (apt-get install fortunes: scripts/setup.sh) is missing")
    flags = ["--steps", "3", "--dp", "2", "--log-every", "1"] if program == "gpt" else ["--iters", "3"]
    cmd = [sys.executable, "-m", "globe.launch", "--nproc_per_node", "2", "--no-prefix",
           os.path.join(ROOT, "examples", "python", program + ".py")] + flags

    def losses(out):
        return [line for line in out.splitlines() if " loss " in line]

    cpu = losses(run(cmd, tmp_path))
    sim = losses(run(cmd + ["--device", "sim"], tmp_path))
    assert sim == cpu and len(cpu) >= 3, (cpu, sim)


def test_oneflow_launch_module_path_runs_the_same(tmp_path):
    """The tutorial's `python3 -m oneflow.distributed.launch`, with only the package renamed:
    `python3 -m globe.distributed.launch` prints what `python3 -m globe.launch` prints."""
    program = [os.path.join(ROOT, "examples", "python", "quickstart.py"), "--iters", "2"]
    ours = run([sys.executable, "-m", "globe.launch", "--nproc_per_node", "2"] + program, tmp_path)
    theirs = run([sys.executable, "-m", "globe.distributed.launch", "--nproc_per_node", "2"] + program, tmp_path)
    assert theirs == ours and ours.count(" loss ") == 2


@pytest.mark.parametrize("ranks, layout", [(1, []), (2, ["--dp", "2"]), (2, ["--tp", "2"]),
                                           (4, ["--dp", "2", "--tp", "2"])])
def test_gpt_in_python_trains_the_cpp_programs_losses(ranks, layout, tmp_path):
    """examples/python/gpt.py (page 07) against build/bin/gpt: the same losses, bit for bit, on
    every data x tensor layout (same seed, same batches, same op order)."""
    if not os.path.isdir("/usr/share/games/fortunes"):
        pytest.skip("the corpus (apt-get install fortunes: scripts/setup.sh) is missing")
    flags = ["--steps", "3", "--warmup", "0", "--log-every", "0"] + layout
    launch = [os.path.join(BUILD, "bin", "globe-launch"), "--nproc_per_node", str(ranks), "--no-prefix"]
    run(launch + [os.path.join(BUILD, "bin", "gpt"), "--val-batches", "0", "--losses-out",
                  str(tmp_path / "cpp.json")] + flags, tmp_path)
    py = run([sys.executable, "-m", "globe.launch", "--nproc_per_node", str(ranks), "--no-prefix",
              os.path.join(ROOT, "examples", "python", "gpt.py"), "--losses-out", str(tmp_path / "py.json")] + flags,
             tmp_path)
    assert "globe GPT (Python) 834304 params" in py, py
    with open(tmp_path / "cpp.json") as f:
        cpp_losses = json.load(f)
    with open(tmp_path / "py.json") as f:
        py_losses = json.load(f)
    assert len(py_losses) == 3 and py_losses == cpp_losses


@pytest.mark.parametrize("ranks", [1, 2, 4])
def test_backward_local_prints_the_cpp_snippets_lines(ranks, tmp_path):
    """examples/python/backward_local.py against the "local" part of docs/snippets/grad_layouts.cpp
    (each rank prints its own lines: compared in any order)."""
    launch = [os.path.join(BUILD, "bin", "globe-launch"), "--nproc_per_node", str(ranks)]
    cpp = run(launch + [os.path.join(BUILD, "bin", "grad_layouts"), "local"], tmp_path)
    py = run([sys.executable, "-m", "globe.launch", "--nproc_per_node", str(ranks),
              os.path.join(ROOT, "examples", "python", "backward_local.py")], tmp_path)
    assert sorted(py.splitlines()) == sorted(cpp.splitlines())
    assert "xl.grad() = 2 2 2" in py


@pytest.mark.parametrize("ranks, schedule", [(1, "1f1b"), (2, "1f1b"), (2, "interleaved"), (2, "zb-h1"), (2, "zbv"), (4, "gpipe")])
def test_pipeline_object_prints_the_cpp_plan_and_losses(ranks, schedule, tmp_path):
    """The Pipeline over Python modules: the same stage plan, schedule and losses as in C++."""
    args = ["--schedule", schedule, "--iters", "5"]
    launch = [os.path.join(BUILD, "bin", "globe-launch"), "--nproc_per_node", str(ranks), "--no-prefix"]
    cpp = run(launch + [os.path.join(BUILD, "bin", "pipeline_schedules")] + args, tmp_path)
    py = run([sys.executable, "-m", "globe.launch", "--nproc_per_node", str(ranks), "--no-prefix",
              os.path.join(ROOT, "examples", "python", "pipeline_schedules.py")] + args, tmp_path)
    assert py == cpp
    assert py.count(" loss ") == 5 and "stage 0 on placement" in py


def test_python_exception_in_forward_ends_the_job_naming_the_rank(tmp_path):
    """Bad input: a Python exception inside a module's forward on one rank ends the job within
    seconds with exit code 1, the traceback once (from that rank) and the launcher naming it; no
    abort, no C++ backtrace, no rank hangs."""
    import time
    start = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "globe.launch", "--nproc_per_node", "2",
                        os.path.join(ROOT, "tests", "python", "raising_forward.py")],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path, env=ENV)
    took = time.monotonic() - start
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert "[rank1] ValueError: a bug in forward on rank 1" in out, out
    assert out.count("Traceback (most recent call last)") == 1, out
    assert "rank 1 failed first: exit code 1" in out, out
    assert "terminate called" not in out and "SIGABRT" not in out and "core dumped" not in out, out
    assert took < 30, f"took {took:.1f} s"


def test_the_same_error_on_every_rank_shows_one_traceback_and_names_the_ranks(tmp_path):
    """Every rank of 4 raises the same Globe error at the same line: its traceback appears once and
    the launcher's summary names the ranks that raised it alike (each error names its own rank)."""
    import re
    r = subprocess.run([sys.executable, "-m", "globe.launch", "--nproc_per_node", "4",
                        os.path.join(ROOT, "docs", "snippets", "same_error_everywhere.py")],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path, env=ENV)
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert out.count("Traceback (most recent call last)") == 1, out
    assert out.count("inner dims differ: [8, 3] @ [4, 2]") == 1, out
    m = re.search(r"globe-launch: ranks ([0-9, ]+) raised the same error; it is shown once, from rank (\d)", out)
    assert m, out
    named = [int(x) for x in m.group(1).split(", ")]
    # A rank still starting its traceback when mpirun stops the job is not named; the others are.
    assert len(named) >= 2 and set(named) <= {0, 1, 2, 3} and int(m.group(2)) in named, out
    assert f"[rank{m.group(2)}] Traceback" in out, out


def test_an_error_filed_alike_is_not_printed_again_but_a_different_one_is(tmp_path):
    """The filing itself (globe/dist/error_report.h), in one process: the first text prints, the
    same text again (up to the rank it names) does not, another text does; without the launcher's
    run directory every error prints."""
    code = ("import globe as flow\n"
            "f = flow._globe.print_error_here\n"
            "print(f('E: shape (rank 0)\\n'), f('E: shape (rank 0)\\n'), f('E: other\\n'))\n")
    filed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                           env=dict(ENV, GLOBE_RUN_DIR=str(tmp_path)))
    assert filed.stdout == "True False True\n", filed.stdout + filed.stderr
    assert (tmp_path / "first_error").read_text() == "rank 0\nE: shape (rank *)\n"
    plain = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=ENV)
    assert plain.stdout == "True True True\n", plain.stdout + plain.stderr


@pytest.mark.parametrize("ranks", [2, 4])
def test_printing_a_global_tensor_on_one_rank_fails_at_once_naming_the_ranks_that_left(ranks, tmp_path):
    """`if rank == 0: print(x)` on a global tensor: the other ranks end normally while rank 0 waits
    for them in the print's gather. Rank 0 fails within seconds (GLOBE_TIMEOUT is 300 s), with its
    Python traceback and an error naming a rank that left."""
    import time
    start = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "globe.launch", "--nproc_per_node", str(ranks),
                        os.path.join(ROOT, "docs", "snippets", "print_on_one_rank.py")],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path, env=dict(ENV, GLOBE_TIMEOUT="300"))
    took = time.monotonic() - start
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert "[rank0] Traceback (most recent call last)" in out, out
    assert "ended its program" in out and "printing a global tensor" in out, out
    assert "rank 0 failed first: exit code 1" in out, out
    assert took < 30, f"took {took:.1f} s"


def test_rank_and_world_size_set_by_hand_are_refused_naming_them():
    """torchrun's RANK / WORLD_SIZE on a plain `python3`: an error naming both and the command to
    run, with the Python traceback; not a silent world of one."""
    r = subprocess.run([sys.executable, "-c", "import globe as flow\nprint(flow.env.get_rank())"],
                       capture_output=True, text=True, timeout=60, env=dict(ENV, RANK="1", WORLD_SIZE="2"))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "Traceback (most recent call last)" in r.stderr, r.stderr
    assert "RANK=1 and WORLD_SIZE=2 are set, but this process was not started by globe-launch" in r.stderr, r.stderr
    assert "python3 -m globe.launch --nproc_per_node 2 script.py" in r.stderr, r.stderr
    ok = subprocess.run([sys.executable, "-c", "import globe as flow\nprint(flow.env.get_rank())"],
                        capture_output=True, text=True, timeout=60, env=dict(ENV, RANK="0", WORLD_SIZE="1"))
    assert ok.returncode == 0 and ok.stdout == "0\n", ok.stdout + ok.stderr


def test_wrong_argument_types_are_type_errors():
    import globe as flow
    with pytest.raises(TypeError, match="matmul"):
        flow.matmul(flow.randn(2, 2), "not a tensor")
    with pytest.raises(TypeError, match="placement= takes a globe.placement"):
        flow.randn(2, 2, placement="cpu")
    with pytest.raises(TypeError, match="sbp= takes"):
        flow.randn(4, 2).to_global(placement=flow.placement("cpu"), sbp="split")


@pytest.mark.parametrize("ranks, layout, checkpoint", [
    (1, [], "gqa"), (2, ["--tp", "2"], "gqa"), (4, ["--dp", "2", "--tp", "2"], "gqa"), (2, ["--pp", "2"], "gqa"),
    (4, ["--tp", "2", "--pp", "2", "--microbatches", "2"], "gqa"), (2, ["--pp", "2"], "tied"),
    (2, ["--dp", "2", "--zero", "3"], "gqa"), (4, ["--dp", "2", "--pp", "2", "--zero", "2", "--recompute"], "gqa")])
def test_llama_in_python_matches_the_cpp_program(ranks, layout, checkpoint, tmp_path):
    """examples/python/llama.py (page 09) against build/bin/llama on the transformers-made
    checkpoints (gqa; tied: the head is the embedding, on another stage under --pp): the same greedy
    tokens, and AdamW losses within 1e-5 (their rotary tables are computed apart, numpy's float32
    against C++'s; the Python stages are placements moved between with to_global, the C++ ones a
    1F1B pipeline), ZeRO 2 and 3 and recomputation included."""
    hf = os.path.join(ROOT, "tests", "llama", "data", checkpoint)
    tokens = tmp_path / "train.bin"  # uint32 ids: the bytes of this file's source, one token each
    with open(__file__, "rb") as f:
        tokens.write_bytes(b"".join(b.to_bytes(4, "little") for b in f.read()[:4000]))
    launch = [os.path.join(BUILD, "bin", "globe-launch"), "--nproc_per_node", str(ranks), "--no-prefix"]
    flags = ["--load-hf", hf, "--data", str(tokens), "--steps", "4", "--generate", "5,6,7", "--tokens", "6"] + layout
    cpp = run(launch + [os.path.join(BUILD, "bin", "llama"), "--losses-out", str(tmp_path / "cpp.json"), "--log-every", "0"]
              + flags, tmp_path)
    py = run([sys.executable, "-m", "globe.launch", "--nproc_per_node", str(ranks), "--no-prefix",
              os.path.join(ROOT, "examples", "python", "llama.py"), "--losses-out", str(tmp_path / "py.json")] + flags,
             tmp_path)
    line = next(x for x in cpp.splitlines() if x.startswith("generated: "))
    assert line in py.splitlines(), py
    # Without the KV cache (the whole context again for each token): the same tokens.
    again = run([sys.executable, "-m", "globe.launch", "--nproc_per_node", str(ranks), "--no-prefix",
                 os.path.join(ROOT, "examples", "python", "llama.py"), "--no-kv-cache"] + flags, tmp_path)
    assert line in again.splitlines(), again
    with open(tmp_path / "cpp.json") as f:
        cpp_losses = json.load(f)
    with open(tmp_path / "py.json") as f:
        py_losses = json.load(f)
    assert len(py_losses) == 4
    assert all(abs(p - c) <= 1e-5 * abs(c) for p, c in zip(py_losses, cpp_losses)), (py_losses, cpp_losses)
