"""`pip install .`: CMake builds the library, the extension module `_globe` and `globe-launch`;
this copies what the package needs out of the build tree into the wheel:

    globe/            the Python files and _globe*.so, as in build/python/globe/
    globe/bin/        globe-launch, the launcher (the `globe-launch` command runs it)

The build tree is build/pip/ (GLOBE_PIP_BUILD_DIR overrides it), configured for this interpreter
without tests, examples or benchmarks. GLOBE_PREBUILT=DIR instead takes the package from a build
tree already built (scripts/setup.sh's build/), compiling nothing: the test suite installs that way.
"""
import os
import pathlib
import re
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_ext import build_ext
from setuptools.dist import Distribution

ROOT = pathlib.Path(__file__).resolve().parent


def version():
    """The project's version, from CMakeLists.txt's project() (one place for it)."""
    m = re.search(r"project\(globe VERSION ([0-9.]+)", (ROOT / "CMakeLists.txt").read_text())
    if not m:
        sys.exit("setup.py: no 'project(globe VERSION x.y.z)' in CMakeLists.txt")
    return m.group(1)


def built_tree():
    """A build tree holding python/globe/_globe*.so and bin/globe-launch, built here unless
    GLOBE_PREBUILT names one."""
    prebuilt = os.environ.get("GLOBE_PREBUILT")
    if prebuilt:
        tree = pathlib.Path(prebuilt).resolve()
    else:
        tree = pathlib.Path(os.environ.get("GLOBE_PIP_BUILD_DIR", ROOT / "build" / "pip")).resolve()
        jobs = os.environ.get("GLOBE_JOBS", str(os.cpu_count() or 1))
        subprocess.check_call(["cmake", "-S", str(ROOT), "-B", str(tree), "-DCMAKE_BUILD_TYPE=Release",
                               "-DGLOBE_BUILD_TESTS=OFF", "-DGLOBE_BUILD_BENCH=OFF",
                               f"-DPython3_EXECUTABLE={sys.executable}"]
                              + (["-G", "Ninja"] if shutil.which("ninja") and not (tree / "CMakeCache.txt").exists() else []))
        subprocess.check_call(["cmake", "--build", str(tree), "-j", jobs, "--target", "_globe", "globe-launch"])
    missing = [p for p in ("python/globe/__init__.py", "bin/globe-launch") if not (tree / p).exists()]
    if missing or not list((tree / "python" / "globe").glob("_globe*.so")):
        sys.exit(f"setup.py: {tree} lacks {', '.join(missing) or 'python/globe/_globe*.so'}: not a built Globe tree "
                 "(pybind11-dev and python3-dev missing when it was configured?)")
    return tree


class BuildWithCMake(build_ext):
    """setuptools' build_ext step, run because the distribution says it has compiled code: CMake
    builds, and the package is copied where the wheel is assembled (build_lib)."""

    def run(self):
        tree = built_tree()
        target = pathlib.Path(self.build_lib) / "globe"
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(tree / "python" / "globe", target,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        (target / "bin").mkdir()
        shutil.copy2(tree / "bin" / "globe-launch", target / "bin" / "globe-launch")


class CompiledDistribution(Distribution):
    """The wheel holds compiled code (_globe, globe-launch): tagged for this Python and platform."""

    def has_ext_modules(self):
        return True


setup(version=version(), cmdclass={"build_ext": BuildWithCMake}, distclass=CompiledDistribution)
