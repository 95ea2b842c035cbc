"""OneFlow's oneflow.framework helpers that programs and tests import (balanced_splitter)."""
