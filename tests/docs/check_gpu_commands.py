#!/usr/bin/env python3
"""The "On a GPU" section of page 01 (English and Chinese) cannot run in CI, which has no GPU, so
its commands' text is checked instead: every script it names exists (and is executable where run
directly), every flag it gives build/bin/gpt is one `gpt --help` lists, and every flag it gives
bench/gpt/torch_gpt.py is one that script defines.

    check_gpu_commands.py ROOT BUILD"""
import pathlib
import re
import subprocess
import sys

root, build = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
gpt_help = subprocess.run([str(build / "bin" / "gpt"), "--help"], capture_output=True, text=True).stdout
torch_flags = set(re.findall(r'add\("(--[a-z0-9-]+)"', (root / "bench/gpt/torch_gpt.py").read_text()))
failures = []


def commands(page):
    """The shell commands of the console blocks between "### On a GPU" (or its translation) and the next heading."""
    text = page.read_text(encoding="utf-8")
    start = text.index("\n### On a GPU\n" if "/zh/" not in str(page) else "\n### 在 GPU 上运行\n")
    section = text[start + 1:text.index("\n#", start + 2)]
    out = []
    for block in re.findall(r"```console\n(.*?)```", section, re.S):
        joined = re.sub(r"\\\n\s*", " ", block)
        out += [line[2:].split("#")[0].strip() for line in joined.splitlines() if line.startswith("$ ")]
    return out


for page in (root / "docs/01-quickstart.md", root / "docs/zh/01-quickstart.md"):
    cmds = commands(page)
    if len(cmds) < 3:
        failures.append(f"{page}: expected the script and its two commands, found {cmds}")
    for cmd in cmds:
        words = cmd.split()
        program = words[1] if words[0] == "python3" else words[0]
        path = root / program if not program.startswith("build/") else build / program[len("build/"):]
        if not path.exists():
            failures.append(f"{page}: `{cmd}` names {program}, which does not exist")
            continue
        if words[0] != "python3" and not path.stat().st_mode & 0o111:
            failures.append(f"{page}: {program} is not executable")
        flags = [w for w in words if w.startswith("--")]
        for flag in flags:
            known = torch_flags if program.endswith("torch_gpt.py") else None
            if program == "build/bin/gpt" and not re.search(rf"^\s*{re.escape(flag)}\b", gpt_help, re.M):
                failures.append(f"{page}: build/bin/gpt takes no {flag} (gpt --help)")
            if known is not None and flag not in known:
                failures.append(f"{page}: bench/gpt/torch_gpt.py defines no {flag}")
        print(f"ok: {page.relative_to(root)}: {program} with {len(flags)} flag(s)")

if failures:
    print("\n".join("FAIL: " + f for f in failures))
    sys.exit(1)
print("check_gpu_commands: the GPU section's commands name real scripts and flags")
