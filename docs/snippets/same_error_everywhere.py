"""Every rank makes the same mistake at the same line: a matmul whose inner sizes differ. Each rank
raises the same error; the job shows its traceback once and names the ranks that raised it."""
import globe as flow

p = flow.placement("cpu")
x = flow.randn(8, 3, placement=p, sbp=flow.sbp.split(0))
w = flow.randn(4, 2, placement=p, sbp=flow.sbp.broadcast)
flow.sum(x).item()  # a collective: the ranks meet here, then all make the same mistake
print(flow.matmul(x, w).shape)
