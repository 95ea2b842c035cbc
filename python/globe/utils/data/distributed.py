"""DistributedSampler (torch.utils.data.distributed / flow.utils.data.distributed): each rank
iterates its own share of the dataset's indices, every rank the same number."""
import math

import numpy as np

from ... import env


class DistributedSampler:
    """The indices (shuffled by seed + epoch when shuffle) padded by repeating from the start to a
    multiple of num_replicas (or cut to one with drop_last), rank r taking every num_replicas-th
    from r. Every rank shuffles alike: set_epoch(e) on each, before each epoch."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        self.num_replicas = env.get_world_size() if num_replicas is None else num_replicas
        self.rank = env.get_rank() if rank is None else rank
        if not 0 <= self.rank < self.num_replicas:
            raise ValueError(f"DistributedSampler: rank {self.rank} is outside 0..{self.num_replicas - 1}")
        self.dataset, self.shuffle, self.seed, self.drop_last, self.epoch = dataset, shuffle, seed, drop_last, 0
        n = len(dataset)
        if drop_last and n % self.num_replicas:
            self.num_samples = n // self.num_replicas
        else:
            self.num_samples = math.ceil(n / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas

    def __iter__(self):
        n = len(self.dataset)
        order = np.random.RandomState((self.seed + self.epoch) % 2**32).permutation(n) if self.shuffle \
            else np.arange(n)
        indices = order.tolist()
        if self.total_size > n:
            indices += (indices * math.ceil(self.total_size / max(n, 1)))[:self.total_size - n]
        indices = indices[:self.total_size]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        self.epoch = epoch
