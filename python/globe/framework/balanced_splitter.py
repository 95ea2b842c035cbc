"""How Globe (and OneFlow) cut `total` items into `part_size` balanced parts: part i holds
total // part_size items, one more while i < total % part_size, so the longer parts come first
(docs/design.md §2, "Balanced split"; the C++ rule is split_range in globe/core/sbp.h). A split(d)
tensor's blocks along d are these ranges, in mesh order."""


def BalancedPartNums(total, part_size):  # noqa: N802  (OneFlow's names)
    """The number of items in each of the `part_size` parts."""
    base, extra = divmod(int(total), int(part_size))
    return [base + (1 if i < extra else 0) for i in range(int(part_size))]


def BalancedRanges(total, part_size):  # noqa: N802
    """[(start, end)] of each part, consecutive from 0 to total."""
    ranges, start = [], 0
    for n in BalancedPartNums(total, part_size):
        ranges.append((start, start + n))
        start += n
    return ranges
