"""Flux on torch.distributed groups: the host collectives run on the group's store.

A Flux communicator needs a few host collectives: device UUIDs at bootstrap, the IPC handles of every
symmetric buffer a plan allocates, and plans' agreement checks. Here they run on the process group's
c10d store (the one torchrun / init_process_group made), so no extra port, token or launcher is needed.
Each collective is one step: every rank sets ``<prefix>/<step>/<rank>`` to ``label NUL payload`` and
polls for its peers' keys, bounded by ``FLUX_RDZV_TIMEOUT_MS`` (default 120000 ms); a timeout names the
ranks that never arrived, and ranks that call different collectives at the same step fail naming both
labels. A rank's key of step s-1 is deleted once step s completes (every peer has read it by then).

Works with any backend: an NCCL group (one GPU per rank) or a gloo group (several ranks on one GPU under
MPS, as the GPU tests run).
"""
from __future__ import annotations

import time
from typing import Dict, List, Optional

import torch
import torch.distributed as dist

from . import _C

__all__ = ["register_group", "group_name", "release", "set_plan_cache_limit", "cached_plans", "check_status",
           "StoreExchange"]


def _timeout_ms() -> int:
    # The library's knob (one registry, one default and parser: src/common/knobs.cpp).
    value = int(_C.knob_int("FLUX_RDZV_TIMEOUT_MS"))
    if value <= 0:
        raise ValueError(f"FLUX_RDZV_TIMEOUT_MS={value} (expected > 0 milliseconds)")
    return value


class StoreExchange:
    """Flux's host collectives on a c10d store (called from C++ through flux_torch._C)."""

    def __init__(self, store, prefix: str, rank: int, world: int, timeout_ms: Optional[int] = None):
        self.store = store
        self.prefix = prefix
        self.rank = rank
        self.world = world
        self.timeout_ms = timeout_ms if timeout_ms is not None else _timeout_ms()
        self.step = 0

    def _key(self, step: int, rank: int) -> str:
        return f"{self.prefix}/{step}/{rank}"

    def all_gather(self, label: str, mine: bytes) -> List[bytes]:
        step = self.step
        self.step += 1
        abort_key = f"{self.prefix}/abort"
        self.store.set(self._key(step, self.rank), label.encode() + b"\0" + bytes(mine))
        missing = [r for r in range(self.world) if r != self.rank]
        deadline = time.monotonic() + self.timeout_ms / 1000.0
        pause = 0.0005
        while missing:
            missing = [r for r in missing if not self.store.check([self._key(step, r)])]
            if not missing:
                break
            if self.store.check([abort_key]):
                raise RuntimeError(f"flux (rank {self.rank}): the job was aborted: "
                                   f"{self.store.get(abort_key).decode(errors='replace')}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"flux host exchange (rank {self.rank} of {self.world}, store prefix "
                                   f"'{self.prefix}'): rank(s) {missing} did not reach '{label}' (step {step}) "
                                   f"within {self.timeout_ms} ms (FLUX_RDZV_TIMEOUT_MS)")
            time.sleep(pause)
            pause = min(pause * 2, 0.01)
        out: List[bytes] = []
        for r in range(self.world):
            raw = self.store.get(self._key(step, r))
            their_label, _, payload = raw.partition(b"\0")
            if their_label.decode(errors="replace") != label:
                raise RuntimeError(f"flux host exchange (rank {self.rank}): at step {step} this rank called "
                                   f"'{label}' but rank {r} called '{their_label.decode(errors='replace')}' "
                                   "(ranks must build the same plans in the same order)")
            out.append(payload)
        if step > 0:
            self.store.delete_key(self._key(step - 1, self.rank))
        return out

    def abort(self, why: str) -> None:
        self.store.set(f"{self.prefix}/abort", f"rank {self.rank}: {why}".encode())
        raise RuntimeError(why)


_registered: Dict[str, int] = {}  # group name -> world size (the fake kernels read it)


def group_name(group: Optional[dist.ProcessGroup] = None) -> str:
    """The name of `group` (default: the world), registered with Flux if it is not yet."""
    if not dist.is_initialized():
        raise RuntimeError("flux_torch: torch.distributed is not initialized; call "
                           "torch.distributed.init_process_group first (torchrun sets its environment)")
    pg = group if group is not None else dist.group.WORLD
    name = pg.group_name
    if name not in _registered:
        register_group(pg)
    return name


def register_group(group: Optional[dist.ProcessGroup] = None) -> str:
    """Register `group` (default: the world) with Flux; returns its name, the ops' `group_name`.

    Collective only in the lazy sense: the group's Flux communicator is built by its first op, which every
    rank of the group calls together.
    """
    pg = group if group is not None else dist.group.WORLD
    name = pg.group_name
    if name in _registered:
        return name
    rank, world = dist.get_rank(pg), dist.get_world_size(pg)
    store = dist.distributed_c10d._get_process_group_store(pg)
    exchange = StoreExchange(dist.PrefixStore(f"flux/{name}", store), f"g", rank, world)
    _C.register_group(name, rank, world, exchange)
    _registered[name] = world
    return name


def world_size_of(name: str) -> int:
    """World size of a registered group (used by the fake kernels)."""
    try:
        return _registered[name]
    except KeyError:
        raise ValueError(f"flux_torch: process group '{name}' is not registered with Flux; call "
                         "flux_torch.register_group(group) first") from None


def release(group: Optional[dist.ProcessGroup] = None, communicator: bool = False) -> None:
    """Collective: free the group's cached plans (and, with communicator=True, its Flux communicator).

    Synchronizes the device. CUDA graphs captured with those plans must not be replayed afterwards.
    """
    pg = group if group is not None else dist.group.WORLD
    name = pg.group_name
    if name not in _registered:
        return
    _C.release_group(name, communicator)
    if communicator:
        del _registered[name]


def set_plan_cache_limit(limit: int, group: Optional[dist.ProcessGroup] = None) -> None:
    """At most `limit` plans per group (default 32); the least recently used go first (collective)."""
    _C.set_plan_cache_limit(group_name(group), int(limit))


def cached_plans(group: Optional[dist.ProcessGroup] = None) -> List[str]:
    """The group's cached plan keys, most recently used first."""
    return list(_C.cached_plans(group_name(group)))


def check_status(group: Optional[dist.ProcessGroup] = None) -> None:
    """After a torch.cuda.synchronize(): raise the group's first failure (timeout, peer fault), if any."""
    _C.check_status(group_name(group))


def _release_all_at_exit() -> None:
    # Local teardown only (peers may be gone): drop the Python side so nothing is called after finalization.
    _registered.clear()


import atexit  # noqa: E402

atexit.register(_release_all_at_exit)
