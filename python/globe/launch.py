"""python3 -m globe.launch [globe-launch options] script.py [args]: runs `script.py` with this
Python on every rank, through globe-launch (the same launcher as for C++ programs; its options,
e.g. --nproc_per_node N, --hosts, --max-restarts). OneFlow's `python3 -m oneflow.distributed.launch`
spelled for Globe."""
import os
import shutil
import sys


def _launcher():
    """globe-launch: $GLOBE_LAUNCH, else inside or next to this package (pip's wheel: globe/bin;
    build tree: build/python/globe -> build/bin; cmake --install: PREFIX/lib/python3/dist-packages/
    globe -> PREFIX/bin), else on PATH."""
    if os.environ.get("GLOBE_LAUNCH"):
        return os.environ["GLOBE_LAUNCH"]
    here = os.path.dirname(os.path.abspath(__file__))
    for up in (("bin",), ("..", "..", "bin"), ("..", "..", "..", "..", "bin")):
        candidate = os.path.normpath(os.path.join(here, *up, "globe-launch"))
        if os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("globe-launch")
    if found:
        return found
    sys.exit("globe.launch: globe-launch not found (set GLOBE_LAUNCH to its path)")


def main(argv):
    # The script is the first argument ending in .py; what comes before is globe-launch's.
    at = next((i for i, a in enumerate(argv) if a.endswith(".py") and not a.startswith("-")), None)
    if at is None:
        sys.exit("usage: python3 -m globe.launch [globe-launch options] script.py [args]")
    cmd = [_launcher()] + argv[:at] + [sys.executable] + argv[at:]
    # The ranks import this same package.
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.environ["PYTHONPATH"] = package_root + (os.pathsep + os.environ["PYTHONPATH"]
                                               if os.environ.get("PYTHONPATH") else "")
    os.execv(cmd[0], cmd)


def run_launcher():
    """The `globe-launch` command of a pip install: the launcher binary, with the arguments as given
    (a C++ program or `python3 script.py` after the options, as with build/bin/globe-launch)."""
    launcher = _launcher()
    if os.path.realpath(launcher) == os.path.realpath(sys.argv[0]):
        sys.exit("globe-launch: the launcher binary is missing from this installation")
    os.execv(launcher, [launcher] + sys.argv[1:])


if __name__ == "__main__":
    main(sys.argv[1:])
