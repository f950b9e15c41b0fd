"""Session: NumPy in and out, every dtype the executor takes, against onnxruntime."""

import resource
import threading
import time

import numpy as np
import onnx
import onnx.helper as oh
import onnxruntime as ort
import pytest

import inferopt
from conftest import random_feeds

# NumPy dtype -> ONNX element type, for every type the executor runs (Identity and Cast).
DTYPES = {
    np.float32: onnx.TensorProto.FLOAT, np.float64: onnx.TensorProto.DOUBLE, np.float16: onnx.TensorProto.FLOAT16,
    np.int8: onnx.TensorProto.INT8, np.uint8: onnx.TensorProto.UINT8, np.int16: onnx.TensorProto.INT16,
    np.uint16: onnx.TensorProto.UINT16, np.int32: onnx.TensorProto.INT32, np.uint32: onnx.TensorProto.UINT32,
    np.int64: onnx.TensorProto.INT64, np.uint64: onnx.TensorProto.UINT64, np.bool_: onnx.TensorProto.BOOL,
}


def identity_model(elem_type, shape):
    graph = oh.make_graph([oh.make_node("Identity", ["x"], ["y"]), oh.make_node("Identity", ["y"], ["z"])],
                          "round_trip", [oh.make_tensor_value_info("x", elem_type, shape)],
                          [oh.make_tensor_value_info("z", elem_type, shape)])
    return oh.make_model(graph, opset_imports=[oh.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize("dtype", list(DTYPES), ids=lambda d: np.dtype(d).name)
def test_every_dtype_round_trips_through_run(dtype):
    session = inferopt.Session(inferopt.load(identity_model(DTYPES[dtype], [2, 3, 5])))
    x = (np.arange(30).reshape(2, 3, 5) % 7).astype(dtype)
    z = session.run({"x": x})["z"]
    assert z.dtype == x.dtype and z.shape == x.shape
    np.testing.assert_array_equal(z, x)


def test_non_contiguous_and_misaligned_inputs_are_read_correctly():
    session = inferopt.Session(inferopt.load(identity_model(onnx.TensorProto.FLOAT, [4, 3])))
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    strided = base[:, ::2]
    np.testing.assert_array_equal(session.run({"x": strided})["z"], strided)
    raw = np.zeros(4 * 3 * 4 + 1, dtype=np.uint8)[1:].view(np.float32).reshape(4, 3)
    raw[...] = np.arange(12, dtype=np.float32).reshape(4, 3)
    assert not raw.flags["ALIGNED"]
    np.testing.assert_array_equal(session.run({"x": raw})["z"], raw)
    fortran = np.asfortranarray(np.arange(12, dtype=np.float32).reshape(4, 3))
    np.testing.assert_array_equal(session.run({"x": fortran})["z"], fortran)


def test_outputs_stay_valid_after_later_runs_and_the_session_is_gone(corpus):
    session = inferopt.Session(inferopt.load(corpus / "resnet_ts.onnx"), threads=1)
    feeds = [random_feeds(session, seed=k) for k in range(3)]
    first = session.run(feeds[0])["logits"]
    kept = first.copy()
    session.run(feeds[1])
    del session
    np.testing.assert_array_equal(first, kept)


@pytest.mark.parametrize("name", ["resnet_ts.onnx", "mobilenet_v3_dynamo.onnx", "bert_ts.onnx", "vit_dynamo.onnx"])
def test_run_agrees_with_onnxruntime(corpus, name):
    model = inferopt.load(corpus / name)
    session = inferopt.Session(model)
    feeds = random_feeds(session, seed=3)
    for i in session.inputs:
        if i["dtype"] == np.int64:  # token ids and masks
            feeds[i["name"]] = np.ones_like(feeds[i["name"]], dtype=np.int64)
    ours = session.run(feeds)
    reference = ort.InferenceSession(model.to_bytes(), providers=["CPUExecutionProvider"])
    names = [o.name for o in reference.get_outputs()]
    for name_, want in zip(names, reference.run(None, feeds)):
        np.testing.assert_allclose(ours[name_], want, rtol=1e-3, atol=1e-4)


def test_outputs_are_handed_over_without_a_copy(corpus):
    session = inferopt.Session(inferopt.load(corpus / "bert_ts.onnx"), threads=1)
    feeds = {i["name"]: np.ones([d if isinstance(d, int) else 1 for d in i["shape"]], dtype=i["dtype"])
             for i in session.inputs}
    for value in session.run(feeds).values():
        assert not value.flags["OWNDATA"] and value.base is not None  # the session's buffer, kept by the array
        assert value.flags["C_CONTIGUOUS"] and value.flags["WRITEABLE"]


def test_run_picks_outputs_and_describes_the_interface(corpus):
    session = inferopt.Session(inferopt.load(corpus / "resnet_dynbatch_ts.onnx"))
    assert session.inputs[0]["name"] == "input" and isinstance(session.inputs[0]["shape"][0], str)
    feeds = random_feeds(session, batch=3)
    out = session.run(feeds, outputs=[session.outputs[0]["name"]])
    assert list(out) == [session.outputs[0]["name"]] and out[session.outputs[0]["name"]].shape[0] == 3
    with pytest.raises(inferopt.InvalidArgumentError, match="no output 'nope'"):
        session.run(feeds, outputs=["nope"])


def test_concurrent_runs_of_one_session_are_serialized_not_broken(corpus):
    session = inferopt.Session(inferopt.load(corpus / "resnet_ts.onnx"), threads=1)
    feeds = random_feeds(session)
    want = session.run(feeds)["logits"]
    results = []

    def worker():
        for _ in range(5):
            results.append(session.run(feeds)["logits"])

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 20
    for r in results:
        np.testing.assert_array_equal(r, want)


def test_winograd_can_be_turned_off_and_the_weights_held_are_reported(corpus):
    model = inferopt.load(corpus / "resnet_ts.onnx")
    fast, direct = inferopt.Session(model, threads=1), inferopt.Session(model, threads=1, winograd=False)
    feeds = random_feeds(fast, seed=5)
    np.testing.assert_allclose(fast.run(feeds)["logits"], direct.run(feeds)["logits"], rtol=1e-4, atol=1e-5)
    held_fast, held_direct = fast.weight_memory(), direct.weight_memory()
    assert set(held_fast) == {"initializer_bytes", "kernel_bytes"}
    # Winograd's transformed 3x3 taps are larger than the direct layout (equal where the CPU has no such kernel).
    assert held_fast["kernel_bytes"] >= held_direct["kernel_bytes"] > 0


def test_an_idle_session_leaves_the_cpu_alone(corpus):
    # Between runs the session's worker threads must sleep, not spin: a thread that busy-waits
    # would burn most of the idle second (OMP_WAIT_POLICY=active does: about 1 s here).
    session = inferopt.Session(inferopt.load(corpus / "resnet_ts.onnx"), threads=2)
    feeds = random_feeds(session)
    for _ in range(5):
        session.run(feeds)
    before = resource.getrusage(resource.RUSAGE_SELF)
    time.sleep(1.0)
    after = resource.getrusage(resource.RUSAGE_SELF)
    busy = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    assert busy < 0.25, f"{busy:.3f} s of CPU while idle for 1 s"
