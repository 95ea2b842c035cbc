"""The machine a PyTorch reference ran on, in the fields of globe::dist::machine_info() (bench
RESULT lines carry it as "machine"): CPU model, usable cores, vector ISA, the BLAS and threading
torch was built with, torch's version, GPUs. Also gives the peer Globe's OpenBLAS kernels."""
import ctypes
import os
import re

# The widest vector ISA of an OpenBLAS kernel set, as globe/kernels/cpu/blas_core.cpp ranks them.
_CORE_LEVEL = {"sandybridge": 1, "bulldozer": 1, "piledriver": 1, "steamroller": 1, "excavator": 2, "haswell": 2,
               "zen": 2, "skylakex": 3, "cooperlake": 4, "sapphirerapids": 4}
_BEST_CORE = {4: "Cooperlake", 3: "SkylakeX", 2: "Haswell", 1: "Sandybridge"}


def _cpu_flags():
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def _openblas():
    """The process's OpenBLAS (the library torch loads too), or None."""
    try:
        lib = ctypes.CDLL("libopenblas.so.0", mode=ctypes.RTLD_GLOBAL)
    except OSError:
        return None
    lib.openblas_get_corename.restype = ctypes.c_char_p
    return lib


def same_blas_kernels_as_globe():
    """Before torch loads: where OpenBLAS picked kernels that use less of the CPU than it has (0.3.21 on
    an Emerald Rapids runs Prescott's), re-run its selection as Globe does when it loads
    (globe/kernels/cpu/blas_core.cpp: the best kernel set the library holds for the CPU's ISA, once), so
    that PyTorch and Globe multiply with the same kernels."""
    lib = _openblas()
    if lib is None or "OPENBLAS_CORETYPE" in os.environ or os.environ.get("GLOBE_BLAS_CORE") == "keep" \
            or not hasattr(lib, "gotoblas_dynamic_init"):
        return
    flags = _cpu_flags()
    avx512 = {"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"} <= flags
    level = (4 if avx512 and "avx512_bf16" in flags else 3 if avx512 else 2 if {"avx2", "fma"} <= flags
             else 1 if "avx" in flags else 0)
    while level > 0 and not hasattr(lib, "gotoblas_" + _BEST_CORE[level].upper()):
        level -= 1  # a build without that kernel set
    if _CORE_LEVEL.get(lib.openblas_get_corename().decode().lower(), 0) >= level:
        return
    # OpenBLAS's memory initialised first: its threads, starting, then no longer run the selection,
    # which would race this one (globe/kernels/cpu/blas_core.cpp says how that crashed).
    lib.blas_memory_alloc.restype = ctypes.c_void_p
    lib.blas_memory_free.argtypes = [ctypes.c_void_p]
    lib.blas_memory_free(lib.blas_memory_alloc(0))
    os.environ["OPENBLAS_CORETYPE"] = _BEST_CORE[level]
    lib.gotoblas_dynamic_quit()
    lib.gotoblas_dynamic_init()
    del os.environ["OPENBLAS_CORETYPE"]
    if lib.openblas_get_corename().decode().lower() != _BEST_CORE[level].lower():
        lib.gotoblas_dynamic_quit()  # it did not take: OpenBLAS's own choice again
        lib.gotoblas_dynamic_init()


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
    lib = _openblas()
    core = lib.openblas_get_corename().decode() if lib is not None else ""
    return {"cpu": cpu, "cores": str(len(os.sched_getaffinity(0))), "isa": ", ".join(isa) or "baseline x86-64",
            "blas": f"torch's {blas.group(1) if blas else 'BLAS'}" + (f", OpenBLAS core {core}" if core else "")
                    + f"; torch {torch.__version__}",
            "gpus": str(torch.cuda.device_count() if torch.cuda.is_available() else 0)}
