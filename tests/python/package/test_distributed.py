"""inferopt.distributed on a local Ray cluster (num_cpus=2): results equal the single process's."""

import os
import pathlib

import numpy as np
import pytest

import inferopt
from conftest import random_feeds

ray = pytest.importorskip("ray")
from inferopt import distributed  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def local_cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": os.environ.get("PYTHONPATH", "")}})
    yield
    ray.shutdown()


def batches_for(model, count):
    session = inferopt.Session(model, threads=1)
    return [random_feeds(session, seed=k) for k in range(count)]


@pytest.mark.parametrize("split", [[4, 4], [1, 7], [3, 2, 3]])
def test_sharded_calibration_equals_one_process_whatever_the_split(corpus, split):
    model = inferopt.load(corpus / "resnet_ts.onnx")
    batches = batches_for(model, 8)
    shards, start = [], 0
    for n in split:
        shards.append(batches[start:start + n])
        start += n
    result = distributed.calibrate(model, shards, method="entropy")
    prepared = inferopt.prepare_for_quantization(model)
    state, ranges = inferopt.calibrate(prepared, batches, threads=1)
    assert result["state"] == state
    assert result["ranges"] == ranges


def test_sharded_calibration_quantizes_like_quantize(corpus):
    model = inferopt.load(corpus / "resnet_ts.onnx")
    batches = batches_for(model, 4)
    result = distributed.calibrate(model, [batches[:2], batches[2:]], quantize=True, threads=1)
    _, report = inferopt.quantize(model, batches, threads=1)
    assert result["report"]["ranges"] == report["ranges"]


def test_sensitivity_sweep_on_ray_equals_one_process(corpus):
    model = inferopt.load(corpus / "resnet_ts.onnx")
    batches = batches_for(model, 4)
    rows = distributed.prune_sensitivity(model, batches, tasks=2)
    single = inferopt.prune_sensitivity(model, batches)
    assert rows == single and len(rows) == len(inferopt.prunable_groups(model)) > 0
    # The rows prune itself reports when it shares the budget by sensitivity.
    _, report = inferopt.prune(model, ratio=0.25, batches=batches, sensitivity=True)
    assert report["sensitivity"] == rows


def test_block_sparsity_sweep_on_ray_equals_one_process(corpus):
    model = inferopt.load(corpus / "bert_ts.onnx")
    session = inferopt.Session(model, threads=1)
    batches = [{i["name"]: np.ones([d if isinstance(d, int) else 1 for d in i["shape"]], dtype=i["dtype"]) * (k + 1)
                for i in session.inputs} for k in range(4)]
    rows = distributed.block_sparsity_sensitivity(model, batches, tasks=2, min_size=1024)
    single = inferopt.block_sparsity_sensitivity(model, batches, min_size=1024)
    assert rows == single and [r["node"] for r in rows] == inferopt.sparsifiable_layers(model, min_size=1024)
    assert all(r["relative_error"][0] < 1e-9 and r["levels"][0] == 0.0 for r in rows)
    # End to end, each layer is still measured alone on the unchanged model: split rows are the whole's.
    rows = distributed.block_sparsity_sensitivity(model, batches, tasks=2, min_size=1024, end_to_end=True)
    assert rows == inferopt.block_sparsity_sensitivity(model, batches, min_size=1024, end_to_end=True)
    assert all(r["cosine_drop"][0] == 0.0 and r["cosine_drop"] == sorted(r["cosine_drop"]) for r in rows)
