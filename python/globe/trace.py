"""See what a step does (docs/design.md §18).

    with globe.CommTrace() as comm:        # the collectives this rank ran, and why
        loss = model(x); loss.backward()
    print(comm.table())                    # per module, per op and layout change: count, bytes, time
    comm.counts()                          # {"all_reduce": 2}

    with globe.Timeline("step.json"):      # every span as a Chrome trace event (Perfetto opens it)
        ...

GLOBE_COMM_TRACE=1 prints each rank's table at exit; GLOBE_TRACE=FILE writes a process's whole
timeline; `python3 -m globe.launch --trace DIR` merges every rank's into DIR/trace.json.
"""
from . import _globe


class CommTrace:
    """Records this rank's collectives and transfers inside the `with` block (PyTorch's
    CommDebugMode, with the layout change that caused each one, its bytes and its time)."""

    def __init__(self):
        self._trace = None

    def __enter__(self):
        self._trace = _globe.CommTrace()
        return self

    def __exit__(self, *exc):
        self._trace.stop()
        return False

    def table(self, with_time=True):
        return self._trace.table(with_time)

    def counts(self):
        return self._trace.counts()

    def records(self):
        """One dict per collective: collective, module, op, layout, backward, in_flight, bytes,
        seconds, group, peer."""
        return self._trace.records()


class Timeline:
    """Writes every span inside the `with` block to `path` as Chrome trace events."""

    def __init__(self, path):
        self.path = str(path)
        self._timeline = None

    def __enter__(self):
        self._timeline = _globe.Timeline(self.path)
        return self

    def __exit__(self, *exc):
        self._timeline.close()
        return False


def region(name):
    """A named span around a block (`with globe.trace.region("step 3"): ...`), shown in timelines."""
    return _globe.TraceSpan("region", str(name))
