"""SBP layouts, as OneFlow spells them: globe.sbp.split(dim), globe.sbp.broadcast,
globe.sbp.partial_sum. A layout for an N-D placement is a tuple of these, one per mesh axis."""
from ._globe import broadcast, partial_sum, split

__all__ = ["split", "broadcast", "partial_sum"]
