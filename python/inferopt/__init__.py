"""inferopt: make ONNX models run faster, and prove they kept their numbers.

Every function takes a model as an :class:`inferopt.Model`, a path, serialized bytes or an
``onnx.ModelProto``, and returns a new :class:`Model` (the input is never changed) with a report
dict carrying the keys of the CLI's ``--report`` JSON. Tensors are NumPy arrays. Errors are
:class:`InferoptError` subclasses whose message is the library's one-line error. Long jobs take
``progress=fn(stage, done, total)``; the GIL is released while they compute.

    >>> import inferopt
    >>> model, report = inferopt.optimize("model.onnx", level=3, verify=True)
    >>> outputs = inferopt.Session(model).run({"input": x})
"""

from __future__ import annotations

import os
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence, Tuple, Union

from . import _core
from ._core import (
    FileError,
    InferoptError,
    InternalError,
    InvalidArgumentError,
    InvalidModelError,
    Model,
    OutOfMemoryError,
    Session,
    UnsupportedError,
    VerificationError,
    preferred_channel_multiple,
)

__version__ = _core.__version__

ModelLike = Union[Model, str, "os.PathLike[str]", bytes, Any]
Report = dict
Batches = Iterable[Mapping[str, Any]]
Progress = Optional[Callable[[str, int, int], Any]]

__all__ = [
    "Model", "Session", "load", "save", "to_onnx", "optimize", "fp16", "quantize", "calibrate", "prepare_for_quantization",
    "merge_calibration_states", "ranges_from_state", "prune", "prune_sensitivity", "prunable_groups",
    "preferred_channel_multiple",
    "sparsify", "sparsifiable_layers", "block_sparsity_sensitivity", "plan", "inspect", "InferoptError", "InvalidArgumentError", "InvalidModelError",
    "UnsupportedError", "FileError", "VerificationError", "OutOfMemoryError", "InternalError",
]


def load(model: ModelLike) -> Model:
    """A :class:`Model` from a path, serialized bytes, an ``onnx.ModelProto`` or a Model (returned as is)."""
    if isinstance(model, Model):
        return model
    if isinstance(model, (bytes, bytearray, memoryview)):
        return Model.from_bytes(bytes(model))
    if isinstance(model, (str, os.PathLike)):
        return Model.load(os.fspath(model))
    if hasattr(model, "SerializeToString"):  # onnx.ModelProto, without importing onnx
        return Model.from_bytes(model.SerializeToString())
    raise InvalidArgumentError(f"cannot load a model from {type(model).__name__}: give a path, bytes, "
                               "an onnx.ModelProto or an inferopt.Model")


def save(model: ModelLike, path: Union[str, "os.PathLike[str]"], external_data_threshold: Optional[int] = None) -> None:
    """Writes ``model`` to ``path`` atomically (value_info inferred afresh, as the CLI writes models)."""
    load(model).save(os.fspath(path), external_data_threshold)


def to_onnx(model: ModelLike):
    """The model as an ``onnx.ModelProto`` (needs the ``onnx`` package)."""
    import onnx

    return onnx.load_from_string(load(model).to_bytes())


def inspect(model: ModelLike) -> Report:
    """Versions, interface, op histogram, params and MACs: what ``inferopt inspect --json`` prints."""
    return _core.inspect(load(model))


def plan(model: ModelLike, dims: Optional[Mapping[str, int]] = None, include_io: bool = False,
         in_place: bool = True, alignment: int = 64) -> Report:
    """The static arena plan of the intermediate tensors: what ``inferopt plan --json`` prints.

    ``dims`` gives symbolic dims numbers, e.g. ``{"batch": 8}``.
    """
    return _core.plan(load(model), dict(dims or {}), include_io, in_place, alignment)


def optimize(model: ModelLike, level: Optional[int] = None, pipeline: Optional[str] = None,
             disable: Sequence[str] = (), verify: bool = False, feeds: Optional[Mapping[str, Any]] = None,
             rtol: float = 1e-4, atol: float = 1e-5, threads: int = 0, progress: Progress = None) -> Tuple[Model, Report]:
    """Runs an -O level (0..3, default 1) or a pipeline text such as ``"dce,fixpoint(eliminate-identity,dce)"``.

    With ``verify``, the optimized model is run against the original on ``feeds`` (default: random,
    seed 0) and :class:`VerificationError` is raised when an output differs beyond rtol/atol.
    Returns ``(model, report)``; the report has the per-pass table under ``"passes"``.
    """
    return _core.optimize(load(model), level, pipeline, list(disable), verify, feeds, rtol, atol, threads, progress)


def fp16(model: ModelLike, keep_io_types: bool = True, block_ops: Sequence[str] = (),
         block_nodes: Sequence[str] = ()) -> Tuple[Model, Report]:
    """Runs the float32 computation in float16, with Casts where float16 and float32 regions meet."""
    return _core.fp16(load(model), keep_io_types, list(block_ops), list(block_nodes))


def sparsify(model: ModelLike, sparsity: float = 0.75, block: str = "16x16", min_size: int = 65536,
             norm: str = "l2", dry_run: bool = False, batches: Optional[Batches] = None, allocate: bool = True,
             sequential: bool = False, chunk_rows: int = 128, residual_target: bool = False,
             greedy: bool = False, damping: float = 0.01, max_layer_sparsity: float = 0.9375,
             sensitivity: bool = False, permute: bool = False) -> Tuple[Model, Report]:
    """Block sparsity on MatMul/Gemm weights, run as ``inferopt.BlockSparseMatMul`` (``inferopt sparsify``).

    Without ``batches``, the smallest blocks by norm go. With calibration ``batches``, blocks are
    chosen on them and the kept weights updated to make up (SparseGPT-style); ``allocate`` shares
    the sparsity between layers by their measured error, ``sequential`` refits each layer on
    what the earlier ones left (``residual_target``: where a layer's output is added to the
    residual stream, towards the original sum; implies ``sequential``). ``greedy`` removes each block
    column's blocks one at a time with every kept weight refit exactly (``--criterion obs-greedy``):
    slower, less error. ``damping`` is added to the input moments' diagonal, relative to its mean
    (``--damping``); ``max_layer_sparsity`` caps any one layer's share when allocating
    (``--max-layer-sparsity``); ``sensitivity`` allocates by each layer's measured drop of the
    output's cosine, that layer alone sparsified (``--sensitivity``); ``permute`` first reorders
    each transformer FFN's neurons and attention layer's heads by their output energy, which
    changes no output, so that the least important share blocks (``--permute``). This changes the model's numbers. The report lists each product's
    decision and predicted speedup (and, calibrated, each layer's output error).
    """
    return _core.sparsify(load(model), sparsity, block, min_size, norm, dry_run,
                          None if batches is None else list(batches),
                          _core._CalibratedBlocks(allocate, sequential, chunk_rows, residual_target, greedy, damping,
                                                  max_layer_sparsity, sensitivity, permute))


def sparsifiable_layers(model: ModelLike, block: str = "16x16", min_size: int = 65536) -> list:
    """The MatMul/Gemm layers :func:`sparsify` would rewrite, by label, in graph order."""
    return _core.sparsifiable_layers(load(model), block, min_size)


def block_sparsity_sensitivity(model: ModelLike, batches: Batches, layers: Sequence[str] = (), block: str = "16x16",
                               min_size: int = 65536, max_layer_sparsity: float = 0.9375, chunk_rows: int = 128,
                               end_to_end: bool = False) -> list:
    """Per-layer sensitivity to block sparsity: each layer's relative output error at every sixteenth.

    Blocks are chosen on the calibration ``batches`` and the kept weights updated (the table
    ``inferopt sparsify --calib-dir`` allocates sparsity by). Rows ``{"node", "levels",
    "relative_error"}`` in graph order (``end_to_end``: and ``"cosine_drop"``, the model output's mean
    cosine drop on the first 64 batches with that layer alone sparsified); ``layers`` (labels from :func:`sparsifiable_layers`)
    limits the sweep, and sweeps over disjoint layers are rows of the whole.
    """
    return _core.block_sparsity_sensitivity(load(model), list(batches), list(layers), block, min_size,
                                            max_layer_sparsity, chunk_rows, end_to_end)


def _scheme(method: str, percentile: float, activation: str, per_tensor: bool):
    return _core._QuantScheme(method, percentile, activation, per_tensor)


def calibrate(model: ModelLike, batches: Batches, method: str = "entropy", percentile: float = 99.99,
              activation: str = "s8", per_tensor: bool = False, threads: int = 0,
              progress: Progress = None) -> Tuple[bytes, dict]:
    """Calibrates ``model`` on ``batches`` (a list of ``{input: array}``), at the opset QDQ needs.

    The model runs as given, or first raised to the opset QDQ needs (13 for per-channel
    weights) exactly as :func:`quantize` raises it.

    Returns ``(state, ranges)``: the serialized, mergeable calibration state and
    ``{tensor: {"min", "max"}}``. For states that :func:`quantize` merges, calibrate the model
    :func:`prepare_for_quantization` returns.
    """
    return _core.calibrate(load(model), list(batches), _scheme(method, percentile, activation, per_tensor), threads, progress)


def prepare_for_quantization(model: ModelLike, level: int = 2) -> Model:
    """The float model as static :func:`quantize` prepares it before calibrating (-O<level>, attention packed)."""
    return _core.prepare_for_quantization(load(model), level)


def merge_calibration_states(states: Sequence[bytes]) -> bytes:
    """One state from shards' states, merged in the order given."""
    return _core.merge_calibration_states(list(states))


def ranges_from_state(state: bytes, method: str = "entropy", percentile: float = 99.99,
                      activation: str = "s8") -> dict:
    """The ranges a calibrator computes from a state: ``{tensor: {"min", "max"}}``."""
    return _core.ranges_from_state(state, _scheme(method, percentile, activation, False))


def quantize(model: ModelLike, batches: Optional[Batches] = None, states: Sequence[bytes] = (),
             method: str = "entropy", percentile: float = 99.99, activation: str = "s8", per_tensor: bool = False,
             weight_bits: Optional[int] = None, level: Optional[int] = None, mode: str = "static",
             exclude: Sequence[str] = (), op_types: Sequence[str] = (), smooth_quant: Optional[float] = None,
             validation: Optional[Batches] = None, min_agreement: float = 0.99, min_cosine: float = 0.99,
             fallback: bool = True, threads: int = 0, seed: int = 0, progress: Progress = None) -> Tuple[Model, Report]:
    """INT8 quantization, as ``inferopt quantize`` does it.

    ``mode="static"`` (default): calibrates on ``batches`` and merges ``states`` (from
    :func:`calibrate` on shards), inserts QDQ (per-channel int8 weights, ``activation`` s8 or
    u8), and returns the worst layers to float until top-1 agreement (classifiers) or output
    cosine (other models) meets its budget on ``validation`` (default: the first 8 batches).
    ``smooth_quant=alpha`` moves activation outliers into the weights first. The report holds
    ``ranges``, per-tensor ``sqnr`` and the merged calibration ``state`` (bytes).

    ``mode="dynamic"``: int8 weights, activations quantized at run time; no calibration, the
    batches only measure the error. ``level`` defaults to 2 (static) or 0 (dynamic);
    ``weight_bits`` None picks what this CPU's int8 kernels need (7 without VNNI). ``exclude``
    takes op types (Conv) and node names; ``op_types`` limits what is quantized.
    """
    settings = _core._QuantizeSettings(mode, weight_bits, level, list(exclude), list(op_types), smooth_quant,
                                       _core._Fallback(min_agreement, min_cosine, fallback), threads, seed)
    return _core.quantize(load(model), None if batches is None else list(batches), list(states),
                          _scheme(method, percentile, activation, per_tensor), settings,
                          None if validation is None else list(validation), progress)


def _prune_settings(ratio: float = 0.3, criterion: str = "l1", reduction: str = "mean", global_ranking: bool = False,
                    max_layer_ratio: float = 0.9, round_to: Optional[int] = None, ignore: Sequence[str] = (), seed: int = 0,
                    refit: bool = True, sensitivity: bool = False, groups: Sequence[int] = (), sequential: bool = False,
                    residual_target: bool = False, refit_ridge: float = 1e-4, budget: str = "weights"):
    if round_to is None:
        round_to = _core.preferred_channel_multiple()
    return _core._PruneSettings(ratio, criterion, reduction, global_ranking, max_layer_ratio, round_to, list(ignore),
                                seed, refit, sensitivity, list(groups), sequential, residual_target, refit_ridge, budget)


def prune(model: ModelLike, ratio: float = 0.3, criterion: str = "l1", batches: Optional[Batches] = None,
          reduction: str = "mean", global_ranking: bool = False, max_layer_ratio: float = 0.9,
          round_to: Optional[int] = None,
          ignore: Sequence[str] = (), seed: int = 0, refit: bool = True, sensitivity: bool = False,
          sequential: bool = False, residual_target: bool = False, refit_ridge: float = 1e-4,
          budget: str = "weights") -> Tuple[Model, Report]:
    """Structured channel pruning: removes ``ratio`` of each prunable group's channels (or globally).

    ``criterion``: l1, l2, bn, fpgm, random, or (with ``batches``) energy and obs. Kept channel
    counts stay multiples of ``round_to`` (None: :func:`preferred_channel_multiple`). With batches,
    readers of removed channels are refit by least squares (``sequential``: layer after layer;
    ``residual_target``: towards the original output), BatchNormalization statistics are
    recalibrated, and ``sensitivity`` shares the budget by measured end-to-end sensitivity.
    ``budget="macs"`` makes a weighed ratio (calibrated ``global_ranking`` or ``sensitivity``) a
    share of the prunable channels' multiply-adds at the largest batch's shapes (attention
    products included), not of their weights.
    The report is what ``inferopt prune --report`` writes.
    """
    settings = _prune_settings(ratio, criterion, reduction, global_ranking, max_layer_ratio, round_to, ignore, seed,
                               refit, sensitivity, (), sequential, residual_target, refit_ridge, budget)
    return _core.prune(load(model), settings, None if batches is None else list(batches))


def prunable_groups(model: ModelLike, criterion: str = "l1", ignore: Sequence[str] = ()) -> list:
    """Indices of the channel groups :func:`prune` may cut."""
    return _core.prunable_groups(load(model), _prune_settings(criterion=criterion, ignore=ignore))


def prune_sensitivity(model: ModelLike, batches: Batches, groups: Sequence[int] = (), criterion: str = "l1",
                      round_to: Optional[int] = None, max_layer_ratio: float = 0.9, refit: bool = True,
                      ignore: Sequence[str] = ()) -> list:
    """Per-group end-to-end sensitivity: each group cut alone at 25/50/75% and the output cosine drop.

    ``groups`` (indices from :func:`prunable_groups`) limits the sweep; rows of sweeps over
    disjoint groups, in group order, equal one sweep over all (see inferopt.distributed).
    """
    settings = _prune_settings(criterion=criterion, max_layer_ratio=max_layer_ratio, round_to=round_to, ignore=ignore,
                               refit=refit, sensitivity=True, groups=groups)
    return _core.prune_sensitivity(load(model), settings, list(batches))
