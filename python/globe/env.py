"""This process's place in the world (OneFlow's flow.env)."""
from . import _globe


def get_rank():
    return _globe.rank()


def get_world_size():
    return _globe.world_size()


def get_local_rank():
    """This rank's index among the ranks of its node (OneFlow's flow.env.get_local_rank)."""
    return _globe.local_rank()


rank = get_rank
world_size = get_world_size
