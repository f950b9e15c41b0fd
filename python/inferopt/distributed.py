"""Scale-out on Ray: calibration shards and sensitivity sweeps (pruning's per group, block
sparsity's per layer) as Ray tasks.

Each task gets the serialized model from Ray's object store and returns what the library's
mergeable formats hold: a calibration state, or sensitivity rows. The driver merges them in
shard order, so the result is the one a single process computes over the same samples, whatever
the split. ``ray.init`` is the caller's (e.g. ``ray.init(num_cpus=2)`` for a local cluster);
without it, Ray starts a local one on first use.
"""

from __future__ import annotations

from typing import Any, List, Mapping, Optional, Sequence

import inferopt


def _ray():
    try:
        import ray
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise inferopt.UnsupportedError("inferopt.distributed needs Ray: pip install ray") from e
    return ray


def _calibrate_shard(model_bytes: bytes, shard: Sequence[Mapping[str, Any]], method: str, percentile: float,
                     activation: str, per_tensor: bool, threads: int) -> bytes:
    model = inferopt.Model.from_bytes(model_bytes)
    state, _ = inferopt.calibrate(model, shard, method=method, percentile=percentile, activation=activation,
                                  per_tensor=per_tensor, threads=threads)
    return state


def _block_sensitivity_share(model_bytes: bytes, batches: Sequence[Mapping[str, Any]], layers: Sequence[str],
                             options: Mapping[str, Any]) -> list:
    return inferopt.block_sparsity_sensitivity(inferopt.Model.from_bytes(model_bytes), batches, layers=layers, **options)


def _sensitivity_share(model_bytes: bytes, batches: Sequence[Mapping[str, Any]], groups: Sequence[int],
                       options: Mapping[str, Any]) -> list:
    return inferopt.prune_sensitivity(inferopt.Model.from_bytes(model_bytes), batches, groups=groups, **options)


def _sweep(share_fn, model: inferopt.Model, batches, items: list, tasks: Optional[int], num_cpus_per_task: float,
           options: Mapping[str, Any]) -> list:
    """Runs `share_fn(model_bytes, batches, share, options)` as Ray tasks over `tasks` shares
    of `items` (default: one item a task) and returns their rows, concatenated."""
    ray = _ray()
    count = max(1, min(tasks or len(items), len(items)))
    shares = [items[i::count] for i in range(count)]
    model_ref = ray.put(model.to_bytes())
    batches_ref = ray.put(list(batches))
    task = ray.remote(num_cpus=num_cpus_per_task)(share_fn)
    return [row for part in ray.get([task.remote(model_ref, batches_ref, share, options) for share in shares]) for row in part]


def calibrate(model: inferopt.ModelLike, dataset_shards: Sequence[Sequence[Mapping[str, Any]]], method: str = "entropy",
              percentile: float = 99.99, activation: str = "s8", per_tensor: bool = False, level: int = 2,
              quantize: bool = False, threads_per_task: int = 1, num_cpus_per_task: float = 1,
              **quantize_options: Any) -> dict:
    """Calibrates one Ray task per shard and merges the states in shard order.

    The model is first prepared as :func:`inferopt.quantize` prepares it (``level``), so the
    merged state is what quantize would compute over all the shards' batches. Returns
    ``{"state": bytes, "ranges": {...}, "shards": n}`` and, with ``quantize=True``, also
    ``"model"`` and ``"report"`` from :func:`inferopt.quantize` on the merged state (no
    batches are run again for calibration).
    """
    ray = _ray()
    if not dataset_shards:
        raise inferopt.InvalidArgumentError("distributed.calibrate: no shards")
    prepared = inferopt.prepare_for_quantization(model, level)
    model_ref = ray.put(prepared.to_bytes())
    task = ray.remote(num_cpus=num_cpus_per_task)(_calibrate_shard)
    futures = [task.remote(model_ref, list(shard), method, percentile, activation, per_tensor, threads_per_task)
               for shard in dataset_shards]
    states = ray.get(futures)  # in shard order, whatever order they finished in
    merged = inferopt.merge_calibration_states(states)
    result = {"state": merged, "ranges": inferopt.ranges_from_state(merged, method, percentile, activation),
              "shards": len(states)}
    if quantize:
        # `prepared` is already at `level`; preparing it again changes nothing.
        result["model"], result["report"] = inferopt.quantize(prepared, states=[merged], method=method,
                                                              percentile=percentile, activation=activation,
                                                              per_tensor=per_tensor, level=level, **quantize_options)
    return result


def prune_sensitivity(model: inferopt.ModelLike, batches: Sequence[Mapping[str, Any]], tasks: Optional[int] = None,
                      num_cpus_per_task: float = 1, **options: Any) -> list:
    """The per-group sensitivity sweep of :func:`inferopt.prune_sensitivity`, groups split over Ray tasks.

    Every group is measured alone, so the gathered rows (in group order) are the single-process
    sweep's. ``tasks`` defaults to one per prunable group; ``options`` are prune_sensitivity's.
    """
    m = inferopt.load(model)
    ignore = options.get("ignore", ())
    groups = inferopt.prunable_groups(m, criterion=options.get("criterion", "l1"), ignore=ignore)
    if not groups:
        return []
    rows = _sweep(_sensitivity_share, m, batches, groups, tasks, num_cpus_per_task, options)
    return sorted(rows, key=lambda row: row["group"])


def block_sparsity_sensitivity(model: inferopt.ModelLike, batches: Sequence[Mapping[str, Any]], tasks: Optional[int] = None,
                               num_cpus_per_task: float = 1, **options: Any) -> list:
    """The per-layer block-sparsity sweep of :func:`inferopt.block_sparsity_sensitivity`, layers split over Ray tasks.

    Each layer is measured on its inputs in the unchanged model, so the gathered rows (in graph
    order) are the single-process sweep's. ``tasks`` defaults to one per layer.
    """
    m = inferopt.load(model)
    layers = inferopt.sparsifiable_layers(m, block=options.get("block", "16x16"), min_size=options.get("min_size", 65536))
    if not layers:
        return []
    rows = _sweep(_block_sensitivity_share, m, batches, layers, tasks, num_cpus_per_task, options)
    order = {name: i for i, name in enumerate(layers)}
    return sorted(rows, key=lambda row: order[row["node"]])
