"""Which rank of a distributed job this process is, found without importing torch.

The rank comes from an initialised ``torch.distributed`` process group when torch is already
imported, else from an initialised ``jax.distributed`` job when jax is already imported (its
``jax.process_index()``), else from what launchers set (torchrun's
``RANK``/``WORLD_SIZE``/``LOCAL_RANK``, Slurm, Open MPI), else this is the only process.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class RankInfo:
    """This process's place in the job: ``rank`` of ``world_size``; ``source`` says who told."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    source: str = "single"

    @property
    def is_zero(self) -> bool:
        return self.rank == 0


_ENV_SOURCES = (
    ("torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"),
    ("slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"),
    ("openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"),
)


def _env_int(name: str) -> int | None:
    text = os.environ.get(name)
    if text is None or not text.strip().lstrip("-").isdigit():
        return None
    return int(text)


def from_process_group() -> RankInfo | None:
    """The rank of an initialised ``torch.distributed`` default group, if torch is imported."""
    dist = sys.modules.get("torch.distributed")
    if dist is None:
        return None
    try:
        if not (dist.is_available() and dist.is_initialized()):
            return None
        rank, world = int(dist.get_rank()), int(dist.get_world_size())
    except Exception:
        return None
    return _joined(rank, world, "torch.distributed")


def from_jax() -> RankInfo | None:
    """The process index of an initialised ``jax.distributed`` job, if jax is imported."""
    jax = sys.modules.get("jax")
    if jax is None:
        return None
    try:
        if not jax.distributed.is_initialized():
            return None
        rank, world = int(jax.process_index()), int(jax.process_count())
    except Exception:
        return None
    return _joined(rank, world, "jax.distributed")


def _joined(rank: int, world: int, source: str) -> RankInfo:
    """A rank a framework's job gave: its local rank from ``LOCAL_RANK``, else the rank."""
    local = _env_int("LOCAL_RANK")
    return RankInfo(rank, world, local if local is not None else rank, source)


def from_environment() -> RankInfo | None:
    """The rank a launcher put in the environment, if any."""
    for source, rank_var, world_var, local_var in _ENV_SOURCES:
        rank, world = _env_int(rank_var), _env_int(world_var)
        if rank is None or world is None or world < 1 or not 0 <= rank < world:
            continue
        local = _env_int(local_var)
        return RankInfo(rank, world, local if local is not None else rank, source)
    return None


def current() -> RankInfo:
    """This process's rank: torch's process group first, then jax's job, then the launcher's
    environment."""
    return from_process_group() or from_jax() or from_environment() or RankInfo()


def in_dataloader_worker() -> bool:
    """True inside a ``torch.utils.data.DataLoader`` worker process (only if torch is imported)."""
    data = sys.modules.get("torch.utils.data")
    if data is None:
        return False
    try:
        return data.get_worker_info() is not None
    except Exception:
        return False
