"""flow.utils: data loading (utils.data) and the global view of nested tensors (utils.global_view)."""
from . import data, global_view  # noqa: F401
