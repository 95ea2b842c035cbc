"""torch.utils.data / flow.utils.data: datasets, samplers and a DataLoader that batches samples
into Globe tensors. Loading runs in the calling process (num_workers is accepted and not used:
Globe's ranks are already one process per core)."""
import math

import numpy as np

from ... import _globe
from ..._globe import Tensor
from . import distributed  # noqa: F401
from .distributed import DistributedSampler


class Dataset:
    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__}.__getitem__")


class TensorDataset(Dataset):
    """Sample i is (t[i] for each tensor): the tensors must have one first-dim length."""

    def __init__(self, *tensors):
        lengths = {int(t.shape[0]) for t in tensors}
        if len(lengths) != 1:
            raise ValueError(f"TensorDataset: the tensors' first dims differ: {sorted(lengths)}")
        self._arrays = [t.numpy() if isinstance(t, Tensor) else np.asarray(t) for t in tensors]

    def __len__(self):
        return len(self._arrays[0])

    def __getitem__(self, index):
        return tuple(a[index] for a in self._arrays)


class Subset(Dataset):
    def __init__(self, dataset, indices):
        self.dataset, self.indices = dataset, list(indices)

    def __len__(self):
        return len(self.indices)

    def __getitem__(self, index):
        return self.dataset[self.indices[index]]


class SequentialSampler:
    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler:
    """A new permutation per pass, from the seed (default: drawn from Globe's local stream)."""

    def __init__(self, data_source, generator=None):
        self.data_source, self.seed, self._epoch = data_source, generator, 0

    def __iter__(self):
        seed = self.seed if self.seed is not None else int(_globe.randint(0, 2**31 - 1, [1]).numpy()[0])
        self._epoch += 1
        return iter(np.random.RandomState((seed + self._epoch) % 2**32).permutation(len(self.data_source)).tolist())

    def __len__(self):
        return len(self.data_source)


def default_collate(samples):
    """A batch from samples: tensors, arrays and numbers stacked along a new first dim (ints as
    int64, floats as float32 unless already float64); tuples, lists and dicts field by field."""
    first = samples[0]
    if isinstance(first, (tuple, list)):
        return type(first)(default_collate([s[i] for s in samples]) for i in range(len(first)))
    if isinstance(first, dict):
        return {k: default_collate([s[k] for s in samples]) for k in first}
    arrays = [s.numpy() if isinstance(s, Tensor) else np.asarray(s) for s in samples]
    batch = np.stack(arrays)
    if batch.dtype.kind in "iub":
        batch = batch.astype(np.int64)
    elif batch.dtype != np.float64:
        batch = batch.astype(np.float32)
    return _globe.from_numpy(np.ascontiguousarray(batch))


class DataLoader:
    def __init__(self, dataset, batch_size=1, shuffle=False, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, **kwargs):  # noqa: ARG002
        if sampler is not None and shuffle:
            raise ValueError("DataLoader: sampler and shuffle=True are mutually exclusive (the sampler shuffles)")
        if batch_size is None or batch_size < 1:
            raise ValueError(f"DataLoader: batch_size must be >= 1, got {batch_size!r}")
        self.dataset, self.batch_size, self.drop_last = dataset, batch_size, drop_last
        self.sampler = sampler if sampler is not None else (RandomSampler(dataset) if shuffle
                                                             else SequentialSampler(dataset))
        self.batch_sampler = batch_sampler
        self.collate_fn = collate_fn or default_collate

    def _batches(self):
        if self.batch_sampler is not None:
            yield from self.batch_sampler
            return
        batch = []
        for i in self.sampler:
            batch.append(i)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __iter__(self):
        for indices in self._batches():
            yield self.collate_fn([self.dataset[i] for i in indices])

    def __len__(self):
        if self.batch_sampler is not None:
            return len(self.batch_sampler)
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)


__all__ = ["DataLoader", "Dataset", "DistributedSampler", "RandomSampler", "SequentialSampler", "Subset",
           "TensorDataset", "default_collate"]
