"""oneflow.distributed's name for what Globe has: `python3 -m globe.distributed.launch` is
`python3 -m globe.launch` (OneFlow's `python3 -m oneflow.distributed.launch`, renamed)."""
