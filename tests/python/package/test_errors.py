"""Bad input raises an InferoptError subclass carrying the library's one-line message."""

import numpy as np
import pytest

import inferopt
from conftest import random_feeds


def test_garbage_bytes_are_an_invalid_model_error():
    with pytest.raises(inferopt.InvalidModelError) as e:
        inferopt.load(b"\x08\x07garbage that is not a model")
    assert "\n" not in str(e.value) and e.value.code == "invalid_model"
    assert isinstance(e.value, ValueError) and isinstance(e.value, inferopt.InferoptError)


def test_truncated_model_names_the_problem(corpus):
    data = (corpus / "resnet_ts.onnx").read_bytes()
    with pytest.raises(inferopt.InferoptError) as e:
        inferopt.load(data[: len(data) // 2])
    assert str(e.value) and "\n" not in str(e.value)


def test_missing_file_is_a_file_error(tmp_path):
    with pytest.raises(inferopt.InferoptError) as e:
        inferopt.load(tmp_path / "absent.onnx")
    assert isinstance(e.value, (OSError, ValueError)) and "absent.onnx" in str(e.value)


def test_wrong_argument_types_are_refused():
    with pytest.raises(inferopt.InvalidArgumentError):
        inferopt.load(12345)


def test_unknown_pass_suggests_the_name(corpus):
    with pytest.raises(inferopt.InvalidArgumentError, match="eliminate-identity"):
        inferopt.optimize(corpus / "resnet_ts.onnx", pipeline="eliminate-identiy")


def test_level_and_pipeline_together_are_refused(corpus):
    with pytest.raises(inferopt.InvalidArgumentError, match="not both"):
        inferopt.optimize(corpus / "resnet_ts.onnx", level=2, pipeline="dce")


def test_bad_feeds_name_the_input(corpus):
    session = inferopt.Session(inferopt.load(corpus / "resnet_ts.onnx"))
    with pytest.raises(inferopt.InvalidArgumentError, match="input"):
        session.run({"input": np.zeros((1, 3, 8, 8), dtype=np.float32)})
    with pytest.raises(inferopt.InvalidArgumentError, match="dtype"):
        session.run({"input": np.zeros((1, 3, 64, 64), dtype=np.complex64)})
    with pytest.raises(inferopt.InvalidArgumentError):
        session.run([1, 2, 3])


def test_bad_calibration_arguments(corpus):
    model = inferopt.load(corpus / "resnet_ts.onnx")
    with pytest.raises(inferopt.InvalidArgumentError):
        inferopt.quantize(model, batches=[], states=[])
    with pytest.raises(inferopt.InvalidArgumentError, match="method"):
        inferopt.calibrate(model, [random_feeds(inferopt.Session(model))], method="median")
    with pytest.raises(inferopt.InvalidArgumentError):
        inferopt.merge_calibration_states([b"IOCALIB1 truncated"])
    with pytest.raises(inferopt.InvalidArgumentError, match="criterion"):
        inferopt.prune(model, criterion="biggest")
    with pytest.raises(inferopt.InvalidArgumentError, match="budget"):
        inferopt.prune(model, budget="flops")
