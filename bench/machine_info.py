"""The machine a PyTorch reference ran on, in the fields of globe::dist::machine_info() (bench
RESULT lines carry it as "machine"): CPU model, usable cores, vector ISA, the BLAS and threading
torch was built with, torch's version, GPUs."""
import os
import re


def machine(torch):
    cpu, flags = "unknown", set()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name") and cpu == "unknown":
                    cpu = line.split(":", 1)[1].strip()
                elif line.startswith("flags") and not flags:
                    flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    isa = [name for flag, name in (("avx2", "AVX2"), ("avx512f", "AVX-512"), ("avx512_bf16", "AVX-512 BF16"),
                                   ("amx_tile", "AMX")) if flag in flags]
    config = torch.__config__.show()
    blas = re.search(r"BLAS_INFO=([^,\s]+)", config)
    return {"cpu": cpu, "cores": str(len(os.sched_getaffinity(0))), "isa": ", ".join(isa) or "baseline x86-64",
            "blas": f"torch's {blas.group(1) if blas else 'BLAS'}; torch {torch.__version__}",
            "gpus": str(torch.cuda.device_count() if torch.cuda.is_available() else 0)}
