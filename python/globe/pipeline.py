"""Pipeline parallelism (globe/pipeline, docs/06-pipeline.md): a model cut into stages on their own
placements, run over micro-batches by a schedule (gpipe, 1f1b, interleaved, zb-h1, zbv).

    pipe = globe.pipeline.Pipeline(groups, blocks, schedule="1f1b", microbatches=4,
                                   first=[embed], last=[head])
    result = pipe.step(x, y, globe.cross_entropy)   # forward + backward of every micro-batch
    optimizer.step()
    loss = result.loss.item()

Blocks are any globe.nn modules; every rank builds the same pipeline and calls step()."""
from ._globe import Pipeline, StepResult

__all__ = ["Pipeline", "StepResult"]
