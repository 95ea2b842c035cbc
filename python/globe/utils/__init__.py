"""flow.utils: data loading (utils.data), the global view of nested tensors (utils.global_view) and
activation recomputation (utils.checkpoint, torch's spelling)."""
from . import checkpoint, data, global_view  # noqa: F401
