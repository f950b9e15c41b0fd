"""The package's API against the CLI's outputs on corpus models, and its contracts."""

import json
import subprocess

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import inferopt
from conftest import random_feeds

CNN = "resnet_ts.onnx"
CNN_MODELS = ["resnet_ts.onnx", "mobilenet_v3_dynamo.onnx", "efficientnet_ts.onnx"]
ALL_MODELS = CNN_MODELS + ["bert_ts.onnx", "vit_dynamo.onnx", "minilm_ts.onnx"]


def run_cli(cli, *args):
    done = subprocess.run([cli, *map(str, args)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done


def ort_outputs(model_bytes, feeds):
    session = ort.InferenceSession(model_bytes, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


@pytest.mark.parametrize("name", ALL_MODELS)
def test_optimize_writes_the_bytes_and_report_the_cli_writes(cli, corpus, tmp_path, name):
    out = tmp_path / "cli.onnx"
    report_path = tmp_path / "report.json"
    run_cli(cli, "optimize", corpus / name, "-o", out, "-O3", "--report", report_path)
    model, report = inferopt.optimize(corpus / name, level=3)
    assert model.to_bytes() == out.read_bytes()
    cli_report = json.loads(report_path.read_text())
    assert [p["name"] for p in report["passes"]] == [p["name"] for p in cli_report["passes"]]
    assert [p["rewrites"] for p in report["passes"]] == [p["rewrites"] for p in cli_report["passes"]]
    assert report["after"] == cli_report["after"] and report["pipeline"] == cli_report["pipeline"]


@pytest.mark.parametrize("name", ALL_MODELS)
def test_optimized_model_runs_in_onnxruntime_like_the_original(corpus, name):
    original = inferopt.load(corpus / name)
    model, report = inferopt.optimize(original, level=3, verify=True)
    assert report["verify"]["match"]
    feeds = random_feeds(inferopt.Session(original, threads=1), seed=1)
    expected = ort_outputs(original.to_bytes(), feeds)
    for got, want in zip(ort_outputs(model.to_bytes(), feeds), expected):
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("name", ALL_MODELS)
def test_inspect_is_the_cli_json(cli, corpus, name):
    printed = json.loads(run_cli(cli, "inspect", corpus / name, "--json").stdout)
    assert inferopt.inspect(corpus / name) == printed


def test_plan_is_the_cli_json(cli, corpus):
    printed = json.loads(run_cli(cli, "plan", corpus / CNN, "--json").stdout)
    printed.pop("model")
    assert inferopt.plan(corpus / CNN) == printed


def test_fp16_matches_the_cli(cli, corpus, tmp_path):
    out = tmp_path / "fp16.onnx"
    run_cli(cli, "fp16", corpus / CNN, "-o", out)
    model, report = inferopt.fp16(corpus / CNN)
    assert model.to_bytes() == out.read_bytes()
    assert any(p["name"] == "to-fp16" and p["rewrites"] > 0 for p in report["passes"])


def test_quantize_matches_the_cli_on_random_calibration(cli, corpus, tmp_path):
    # The same batches reach both: as arrays here, as TensorProto files for --calib-dir.
    model = inferopt.load(corpus / CNN)
    session = inferopt.Session(model, threads=1)
    out = tmp_path / "q.onnx"
    report_path = tmp_path / "q.json"
    state_path = tmp_path / "q.state"
    batches = [random_feeds(session, seed=k) for k in range(4)]
    calib = write_batches(batches, tmp_path / "calib")
    run_cli(cli, "quantize", corpus / CNN, "-o", out, "--calib-dir", calib, "--report", report_path, "--save-state",
            state_path, "--threads", "1")
    quantized, report = inferopt.quantize(model, batches, threads=1)
    cli_report = json.loads(report_path.read_text())
    assert report["state"] == state_path.read_bytes()
    assert quantized.to_bytes() == out.read_bytes()
    for key in ("nodes_quantized", "weights_quantized", "fallback_nodes", "top1_agreement"):
        assert report[key] == cli_report[key], key
    ort.InferenceSession(quantized.to_bytes(), providers=["CPUExecutionProvider"])


def write_batches(batches, folder):
    """Batches as TensorProto files in the ONNX test-data layout, for the CLI's --calib-dir."""
    for k, batch in enumerate(batches):
        (folder / f"b{k}").mkdir(parents=True)
        for i, (name, array) in enumerate(batch.items()):
            tensor = onnx.numpy_helper.from_array(array, name)
            (folder / f"b{k}" / f"input_{i}.pb").write_bytes(tensor.SerializeToString())
    return folder


def token_batches(model, count):
    """Batches of a text encoder: every token id (and mask) k + 2 in batch k."""
    session = inferopt.Session(model, threads=1)
    return [{i["name"]: np.full([d if isinstance(d, int) else 1 for d in i["shape"]], k + 2, dtype=i["dtype"])
             for i in session.inputs} for k in range(count)]


def test_dynamic_quantize_matches_the_cli(cli, corpus, tmp_path):
    out = tmp_path / "d.onnx"
    report_path = tmp_path / "d.json"
    run_cli(cli, "quantize", corpus / "bert_ts.onnx", "-o", out, "--mode", "dynamic", "--report", report_path)
    model, report = inferopt.quantize(corpus / "bert_ts.onnx", mode="dynamic")
    assert model.to_bytes() == out.read_bytes()
    cli_report = json.loads(report_path.read_text())
    for key in ("nodes_quantized", "weights_quantized", "left_in_float", "mode"):
        assert report[key] == cli_report[key], key
    ort.InferenceSession(model.to_bytes(), providers=["CPUExecutionProvider"])


def test_quantize_excludes_and_smooths_like_the_cli(cli, corpus, tmp_path):
    model = inferopt.load(corpus / "minilm_ts.onnx")
    batches = token_batches(model, 3)
    out = tmp_path / "s.onnx"
    calib = write_batches(batches, tmp_path / "calib")
    run_cli(cli, "quantize", corpus / "minilm_ts.onnx", "-o", out, "--calib-dir", calib, "--smooth-quant", "0.5",
            "--exclude", "Gemm", "--threads", "1", "--no-fallback")
    quantized, report = inferopt.quantize(model, batches, smooth_quant=0.5, exclude=["Gemm"], threads=1, fallback=False)
    assert quantized.to_bytes() == out.read_bytes()
    assert report["smooth_quant"] and all(s["outlier_ratio_after"] <= s["outlier_ratio_before"] for s in report["smooth_quant"])


@pytest.mark.parametrize("flags, keywords", [((), {}), (("--residual-target",), {"residual_target": True}),
                                             (("--criterion", "obs-greedy", "--damping", "0.05", "--max-layer-sparsity", "0.75"),
                                              {"greedy": True, "damping": 0.05, "max_layer_sparsity": 0.75}),
                                             (("--sensitivity",), {"sensitivity": True}),
                                             (("--permute",), {"permute": True})])
def test_calibrated_sparsify_matches_the_cli(cli, corpus, tmp_path, flags, keywords):
    model = inferopt.load(corpus / "bert_ts.onnx")
    batches = token_batches(model, 3)
    out = tmp_path / "c.onnx"
    report_path = tmp_path / "c.json"
    run_cli(cli, "sparsify", corpus / "bert_ts.onnx", "-o", out, "--sparsity", "0.5", "--min-size", "1024", "--calib-dir",
            write_batches(batches, tmp_path / "calib"), "--report", report_path, *flags)
    sparse, report = inferopt.sparsify(model, sparsity=0.5, min_size=1024, batches=batches, **keywords)
    assert sparse.to_bytes() == out.read_bytes()
    cli_report = json.loads(report_path.read_text())
    assert report["criterion"] == cli_report["criterion"] == ("obs-greedy" if keywords.get("greedy") else "obs")
    assert report["calibrated"]["layers"] == cli_report["calibrated"]["layers"]
    assert report["calibrated"]["damping"] == cli_report["calibrated"]["damping"] == keywords.get("damping", 0.01)
    assert report["calibrated"]["max_layer_sparsity"] == cli_report["calibrated"]["max_layer_sparsity"] == \
        keywords.get("max_layer_sparsity", 0.9375)
    assert report["calibrated"]["residual_target"] == cli_report["calibrated"]["residual_target"] == bool(keywords.get("residual_target"))
    assert report["calibrated"]["sensitivity"] == cli_report["calibrated"]["sensitivity"] == bool(keywords.get("sensitivity"))
    assert report["calibrated"]["permuted_groups"] == cli_report["calibrated"]["permuted_groups"]
    assert (report["calibrated"]["permuted_groups"] > 0) == bool(keywords.get("permute"))


def test_prune_on_batches_refits_and_recalibrates_like_the_cli(cli, corpus, tmp_path):
    model = inferopt.load(corpus / "resnet_ts.onnx")
    batches = [random_feeds(inferopt.Session(model, threads=1), seed=k) for k in range(4)]
    out = tmp_path / "pb.onnx"
    run_cli(cli, "prune", corpus / "resnet_ts.onnx", "-o", out, "--ratio", "0.25", "--criterion", "energy", "--calib-dir",
            write_batches(batches, tmp_path / "calib"), "--sequential")
    pruned, report = inferopt.prune(model, ratio=0.25, criterion="energy", batches=batches, sequential=True)
    assert pruned.to_bytes() == out.read_bytes()
    assert report["refits"] is not None


def test_prune_to_a_multiply_add_budget_matches_the_cli(cli, corpus, tmp_path):
    model = inferopt.load(corpus / "resnet_ts.onnx")
    batches = [random_feeds(inferopt.Session(model, threads=1), seed=k) for k in range(2)]
    out = tmp_path / "pm.onnx"
    report_path = tmp_path / "pm.json"
    run_cli(cli, "prune", corpus / "resnet_ts.onnx", "-o", out, "--ratio", "0.3", "--criterion", "energy", "--global",
            "--budget", "macs", "--calib-dir", write_batches(batches, tmp_path / "calib"), "--report", report_path)
    pruned, report = inferopt.prune(model, ratio=0.3, criterion="energy", batches=batches, global_ranking=True,
                                    budget="macs")
    assert pruned.to_bytes() == out.read_bytes()
    assert report["budget"] == "macs"
    assert report["budget_macs"] == json.loads(report_path.read_text())["budget_macs"]
    # The ratio is a share of what the prunable channels take; the residual stream's stay.
    assert report["budget_macs"]["after"] < 0.95 * report["budget_macs"]["before"]


def test_prune_matches_the_cli(cli, corpus, tmp_path):
    out = tmp_path / "p.onnx"
    report_path = tmp_path / "p.json"
    run_cli(cli, "prune", corpus / CNN, "-o", out, "--ratio", "0.25", "--report", report_path)
    model, report = inferopt.prune(corpus / CNN, ratio=0.25)
    assert model.to_bytes() == out.read_bytes()
    cli_report = json.loads(report_path.read_text())
    for key in ("removed_channels", "params", "macs", "layers"):
        assert report[key] == cli_report[key], key


def test_sparsify_matches_the_cli(cli, corpus, tmp_path):
    out = tmp_path / "s.onnx"
    report_path = tmp_path / "s.json"
    run_cli(cli, "sparsify", corpus / "bert_ts.onnx", "-o", out, "--sparsity", "0.5", "--min-size", "1024", "--report",
            report_path)
    model, report = inferopt.sparsify(corpus / "bert_ts.onnx", sparsity=0.5, min_size=1024)
    assert model.to_bytes() == out.read_bytes()
    assert report["nodes"] == json.loads(report_path.read_text())["nodes"]


def test_load_takes_a_path_bytes_and_a_model_proto(corpus):
    path = corpus / CNN
    proto = onnx.load(str(path))
    a = inferopt.load(path)
    assert inferopt.load(str(path)).to_bytes() == a.to_bytes()
    assert inferopt.load(path.read_bytes()).to_bytes() == a.to_bytes()
    assert inferopt.load(proto).to_bytes() == a.to_bytes()
    assert inferopt.to_onnx(a).graph.name == proto.graph.name


def test_functions_never_change_their_input(corpus):
    model = inferopt.load(corpus / CNN)
    before = model.to_bytes()
    inferopt.optimize(model, level=3)
    inferopt.prune(model, ratio=0.5)
    inferopt.fp16(model)
    assert model.to_bytes() == before


def test_save_writes_what_to_bytes_gives(corpus, tmp_path):
    model, _ = inferopt.optimize(corpus / CNN, level=2)
    inferopt.save(model, tmp_path / "m.onnx")
    assert (tmp_path / "m.onnx").read_bytes() == model.to_bytes()
    onnx.checker.check_model(str(tmp_path / "m.onnx"))


def test_progress_reports_every_pass_and_every_calibration_batch(corpus):
    seen = []
    _, report = inferopt.optimize(corpus / CNN, level=2, progress=lambda stage, done, total: seen.append((stage, done)))
    assert [d for _, d in seen] == list(range(1, sum(p["runs"] for p in report["passes"]) + 1))
    model = inferopt.load(corpus / CNN)
    batches = [random_feeds(inferopt.Session(model), seed=k) for k in range(3)]
    calls = []
    inferopt.calibrate(model, batches, threads=1, progress=lambda stage, done, total: calls.append((stage, done, total)))
    assert calls == [("calibrate", 1, 3), ("calibrate", 2, 3), ("calibrate", 3, 3)]


def test_an_exception_in_progress_reaches_the_caller(corpus):
    def fail(stage, done, total):
        raise KeyboardInterrupt("stop")

    with pytest.raises(KeyboardInterrupt):
        inferopt.optimize(corpus / CNN, level=1, progress=fail)
