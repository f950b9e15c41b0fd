#!/usr/bin/env python3
"""Every inferopt command on every model of the torch-export corpus, checked with onnxruntime.

The corpus (tests/models/corpus, see tests/models/README.md) holds small torchvision and
Hugging Face models exported by both torch exporters. For each file, one seeded input set is
written as TensorProto files (float inputs standard normal; int64 token ids below the size of
the embedding table they index; attention masks of ones with the last row padded; symbolic
dims taken as batch=2, sequence=16), and onnxruntime (CPU, graph optimizations off, so the
graph runs as written) gives the reference outputs. Then, per command:

  run       `inferopt run` on the inputs: its outputs match the reference within REL_TOL
            (max |diff| / max |ref|)
  O1 O2 O3  `inferopt optimize -O<n>`: the output loads and runs in onnxruntime and matches
            the reference within REL_TOL, with the same graph input and output names
  quantize  `inferopt quantize --calib-dir` (CALIB_BATCHES seeded batches drawn like the
            inputs): the output runs in onnxruntime; the cell gives the lowest cosine
            similarity of its outputs to the reference (not bounded)
  fp16      `inferopt fp16`: the output runs in onnxruntime; the cell gives the max relative
            difference to the reference (not bounded)
  prune     `inferopt prune --ratio 0.3 --round-to 4` (the corpus' layers are 8-32 channels
            wide; the default multiple of 8 would keep every channel of them): the output runs in onnxruntime with the reference's
            output shapes; `inferopt inspect --json` knows the MACs of both files (non-zero,
            no node of unknown MACs), and the pruned file's are lower. A transformer without
            prunable channel groups passes with MACs not higher ("no groups")
  sparsify  `inferopt sparsify --block 16x16 --sparsity 0.5 --min-size 1024` (the corpus'
            weights are small): the output runs in `inferopt run` (onnxruntime has no kernel
            for inferopt.BlockSparseMatMul) with the reference's output shapes and finite values
  infer     `inferopt inspect --json` on the file as exported: shape inference leaves no value
            of unknown shape and meets no op without a shape rule
  plan      `inferopt plan --json` leaves no value of unknown size; for a model with symbolic
            dims, `inferopt plan --json --dims batch=2,sequence=16` (the dims it has)

Every model a command writes must load in onnxruntime (a sparsified one only when it holds no
inferopt op), all outputs must be finite, and every node output must have a complete shape in
the written model's value_info (or graph outputs): static dims for a static model, static or
symbolic (named) dims for a model with symbolic inputs. The `shapes` column gives that count
for the original file as the exporter wrote it, for information only.

It prints one table (models x commands; cell = PASS / FAIL with a short reason, and the
cosine for quantize, the MACs ratio for prune), then every failure in full, and exits 1 when
any cell failed. Commands run in a pool of at most 2 processes, each with one thread.

  torch_corpus_test.py --cli build/bin/inferopt --corpus tests/models/corpus --work build/torch_corpus_work
                       [--only bert] [--commands run,O2,quantize] [--jobs 2]
"""

import argparse
import concurrent.futures
import json
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

from check_harness import cosine, ort_session, read_tensor, relative_diff, run_cli, with_trained_biases

COMMANDS = ("infer", "run", "O1", "O2", "O3", "quantize", "fp16", "prune", "sparsify", "plan")
REL_TOL = 1e-4  # float32 sums in another order, weights folded in double and rounded once
DIMS = {"batch": 2, "sequence": 16}  # symbolic dims of the inputs, and plan --dims
CALIB_BATCHES = 4
PRUNE_RATIO = 0.3
PRUNE_ROUND_TO = 4  # the corpus' narrow layers keep all 8 or 16 channels at the default 8
SPARSIFY_ARGS = ["--block", "16x16", "--sparsity", "0.5", "--min-size", "1024"]
TRANSFORMERS = ("bert", "minilm", "vit")  # may have no prunable channel groups today
LAYERS = {"bert": 2, "minilm": 6, "vit": 2}  # encoder layers of the corpus' transformers
# onnxruntime's "fully optimized" rule, per op family of the -O3 output
ATTENTION_OPS = {"MultiHeadAttention", "Attention"}
NORM_OPS = {"LayerNormalization", "SkipLayerNormalization", "SimplifiedLayerNormalization",
            "SkipSimplifiedLayerNormalization", "RMSNormalization"}
GELU_OPS = {"Gelu", "FastGelu", "BiasGelu", "QuickGelu"}
CLI_TIMEOUT_S = 300
CELL_WIDTH = 34


# ---- inputs ---------------------------------------------------------------------------------------

def graph_inputs(model):
    inits = {t.name for t in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in inits]


def symbolic_dims(model):
    """Names of the symbolic dims of the graph inputs."""
    return sorted({d.dim_param for i in graph_inputs(model) for d in i.type.tensor_type.shape.dim
                   if d.HasField("dim_param")})


def token_range(model, name):
    """Ids below the smallest table that a Gather indexes with input `name` (the vocabulary)."""
    inits = {t.name: t for t in model.graph.initializer}
    sizes = [inits[n.input[0]].dims[0] for n in model.graph.node
             if n.op_type == "Gather" and n.input[1] == name and n.input[0] in inits]
    return min(sizes) if sizes else 2


def make_feed(model, seed):
    """One seeded input set: {name: array}."""
    rng = np.random.default_rng(seed)
    feed = {}
    for i in graph_inputs(model):
        t = i.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else DIMS.get(d.dim_param, 1) for d in t.shape.dim]
        dtype = onnx.helper.tensor_dtype_to_np_dtype(t.elem_type)
        if np.issubdtype(dtype, np.floating):
            feed[i.name] = rng.standard_normal(shape).astype(dtype)
        elif "mask" in i.name:
            mask = np.ones(shape, dtype=dtype)
            mask[-1, shape[-1] * 3 // 4:] = 0  # the last row is padded, so the mask matters
            feed[i.name] = mask
        else:
            feed[i.name] = rng.integers(0, token_range(model, i.name), shape).astype(dtype)
    return feed


def write_feed(feed, folder):
    folder.mkdir(parents=True, exist_ok=True)
    files = {}
    for k, (name, value) in enumerate(feed.items()):
        files[name] = folder / f"input_{k}.pb"
        files[name].write_bytes(numpy_helper.from_array(value, name).SerializeToString())
    return files


# ---- what every written model must satisfy -------------------------------------------------------

def unknown_shapes(path, symbolic_ok):
    """(node outputs without a complete shape in value_info/graph outputs, node outputs)."""
    model = onnx.load(str(path), load_external_data=False)
    g = model.graph
    known = {v.name: v for v in list(g.value_info) + list(g.output)}

    def complete(v):
        t = v.type.tensor_type
        if not t.HasField("shape"):
            return False
        return all(d.HasField("dim_value") or (symbolic_ok and d.HasField("dim_param")) for d in t.shape.dim)

    outputs = [o for n in g.node for o in n.output if o]
    return sum(1 for o in outputs if o not in known or not complete(known[o])), len(outputs)


def short(text, width=CELL_WIDTH - 5):
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[:width - 1] + "~"


def ort_reason(e):
    """The part of an onnxruntime exception that says what went wrong."""
    text = " ".join(str(e).split())
    for marker in ("failed:", "Error:"):  # "[ONNXRuntimeError] : 1 : FAIL : Load model from X failed:..."
        if marker in text:
            text = text.split(marker, 1)[1].strip()
    return text


def cli_reason(e):
    text = str(e)
    if ": inferopt: error: " in text:
        text = text.split(": inferopt: error: ", 1)[1]
    elif "exited" in text:
        text = "exit " + text.split("exited", 1)[1].strip()
    return " ".join(text.split())


class Cell:
    """One (model, command) result: a note (its metric) and failures, each (brief, full); a
    failure whose brief is empty is told by the note."""

    def __init__(self):
        self.failures = []
        self.note = ""

    def fail(self, brief, full):
        self.failures.append((brief, full))

    @property
    def ok(self):
        return not self.failures

    def text(self):
        parts = [p for p in [self.note] + [b for b, _ in self.failures] if p]
        return short(("PASS " if self.ok else "FAIL ") + "; ".join(parts), CELL_WIDTH)


def check_written(cell, path, task, ort_load=True):
    """Shapes, then onnxruntime: returns the outputs onnxruntime gives (None when it cannot)."""
    unknown, total = unknown_shapes(path, task["symbolic"])
    if unknown:
        cell.fail(f"shapes {unknown}/{total}", f"{unknown} of {total} node outputs have no complete shape "
                  f"({'static or named' if task['symbolic'] else 'static'} dims) in the written value_info")
    if not ort_load:
        return None
    try:
        sess = ort_session(path, threads=1)
    except Exception as e:  # noqa: BLE001 - onnxruntime's refusal is the finding
        cell.fail(f"ort: {ort_reason(e)}", f"onnxruntime refuses the output: {ort_reason(e)}")
        return None
    if [i.name for i in sess.get_inputs()] != task["input_names"] or \
            [o.name for o in sess.get_outputs()] != task["output_names"]:
        cell.fail("io names changed", f"graph inputs/outputs {[i.name for i in sess.get_inputs()]} / "
                  f"{[o.name for o in sess.get_outputs()]}, original {task['input_names']} / {task['output_names']}")
        return None
    try:
        outputs = sess.run(None, task["feed"])
    except Exception as e:  # noqa: BLE001
        cell.fail(f"ort run: {ort_reason(e)}", f"onnxruntime fails to run the output: {ort_reason(e)}")
        return None
    return check_outputs(cell, outputs, task)


def check_outputs(cell, outputs, task):
    """Shapes and finiteness against the reference; returns the outputs when both hold."""
    for name, a, e in zip(task["output_names"], outputs, task["reference"]):
        if a.shape != e.shape:
            cell.fail(f"shape {name}", f"output {name}: shape {a.shape}, reference {e.shape}")
            return None
        if np.issubdtype(a.dtype, np.floating) and not np.all(np.isfinite(a)):
            cell.fail(f"non-finite {name}", f"output {name}: {int(np.sum(~np.isfinite(a)))} non-finite values")
            return None
    return outputs


def worst_rel(outputs, task):
    return max(relative_diff(a, e) for a, e in zip(outputs, task["reference"]))


def inspect_macs(cli, path):
    info = json.loads(run_cli(cli, ["inspect", "--json", path], timeout=CLI_TIMEOUT_S).stdout)
    return int(info["macs"]), int(info.get("macs_unknown_nodes", 0))


def executor_outputs(cli, model, task, out_dir):
    """`inferopt run` on the task's inputs: outputs in the reference's order."""
    args = ["run", model, "--threads", 1, "--output-dir", out_dir]
    for name, path in task["input_files"].items():
        args += ["--input", f"{name}={path}"]
    run_cli(cli, args, timeout=CLI_TIMEOUT_S)
    got = dict(read_tensor(p) for p in sorted(Path(out_dir).glob("output_*.pb")))
    missing = [n for n in task["output_names"] if n not in got]
    assert not missing, f"inferopt run wrote no output {missing}"
    return [got[n] for n in task["output_names"]]


# ---- the commands ---------------------------------------------------------------------------------

def do_run(cli, task, work, cell):
    outputs = check_outputs(cell, executor_outputs(cli, task["model"], task, work / "outputs"), task)
    if outputs is not None:
        rel = worst_rel(outputs, task)
        cell.note = f"rel {rel:.1e}"
        if rel > REL_TOL:
            cell.fail("", f"inferopt run vs onnxruntime: max rel diff {rel:.3g} > {REL_TOL}")


def do_optimize(level):
    def check(cli, task, work, cell):
        out = work / f"O{level}.onnx"
        run_cli(cli, ["optimize", task["model"], "-o", out, f"-O{level}"], timeout=CLI_TIMEOUT_S)
        outputs = check_written(cell, out, task)
        if outputs is not None:
            rel = worst_rel(outputs, task)
            cell.note = f"rel {rel:.1e}"
            if rel > REL_TOL:
                cell.fail("", f"-O{level} vs original in onnxruntime: max rel diff {rel:.3g} > {REL_TOL}")
        if level == 3 and task["layers"]:
            check_transformer_fusions(cli, task, work, cell, out)
    return check


def fusion_counts(path):
    """Ops of the attention, LayerNorm and GELU families in the model at `path`."""
    ops = [n.op_type for n in onnx.load(str(path), load_external_data=False).graph.node]
    return {family: sum(op in members for op in ops)
            for family, members in (("attention", ATTENTION_OPS), ("norm", NORM_OPS), ("gelu", GELU_OPS))}


def check_fully_optimized(cell, counts, layers, what):
    if counts["attention"] != layers or counts["gelu"] != layers or counts["norm"] < 2 * layers:
        cell.fail(f"fused {counts['attention']}/{counts['norm']}/{counts['gelu']}",
                  f"-O3 on {what} gives {counts} for {layers} layers: want attention = gelu = layers, norm >= 2 x layers")


def check_transformer_fusions(cli, task, work, cell, out):
    """A transformer's -O3 output: as many attention ops as layers, as many GELU ops, at least
    twice as many LayerNorm-family ops, also with trained (non-zero) biases; and the executor
    on it matches the reference."""
    check_fully_optimized(cell, fusion_counts(out), task["layers"], "the export")
    trained, trained_out = work / "trained_biases.onnx", work / "trained_biases_O3.onnx"
    with_trained_biases(task["model"], trained)
    run_cli(cli, ["optimize", trained, "-o", trained_out, "-O3"], timeout=CLI_TIMEOUT_S)
    check_fully_optimized(cell, fusion_counts(trained_out), task["layers"], "the export with trained biases")
    expected = ort_session(trained, threads=1).run(None, task["feed"])
    rel = max(relative_diff(a, e) for a, e in zip(ort_session(trained_out, threads=1).run(None, task["feed"]), expected))
    if rel > REL_TOL:
        cell.fail("", f"-O3 with trained biases vs its original in onnxruntime: max rel diff {rel:.3g} > {REL_TOL}")
    outputs = check_outputs(cell, executor_outputs(cli, out, task, work / "O3_outputs"), task)
    if outputs is not None:
        rel = worst_rel(outputs, task)
        cell.note += f" x{rel:.0e}"
        if rel > REL_TOL:
            cell.fail("", f"the executor on -O3 vs onnxruntime on the original: max rel diff {rel:.3g} > {REL_TOL}")

def do_quantize(cli, task, work, cell):
    out = work / "quantized.onnx"
    run_cli(cli, ["quantize", task["model"], "-o", out, "--calib-dir", task["calib_dir"], "--threads", 1,
                  "--report", work / "report.json"], timeout=CLI_TIMEOUT_S)
    outputs = check_written(cell, out, task)
    if outputs is not None:
        cos = min(cosine(a, e) for a, e in zip(outputs, task["reference"]))
        cell.note = f"cos {cos:.4f}"


def do_fp16(cli, task, work, cell):
    out = work / "fp16.onnx"
    run_cli(cli, ["fp16", task["model"], "-o", out], timeout=CLI_TIMEOUT_S)
    outputs = check_written(cell, out, task)
    if outputs is not None:
        cell.note = f"rel {worst_rel(outputs, task):.1e}"


def do_prune(cli, task, work, cell):
    out, report_path = work / "pruned.onnx", work / "report.json"
    run_cli(cli, ["prune", task["model"], "-o", out, "--ratio", PRUNE_RATIO, "--round-to", PRUNE_ROUND_TO, "--report", report_path],
            timeout=CLI_TIMEOUT_S)
    check_written(cell, out, task)
    report = json.loads(report_path.read_text())
    groups, removed = report.get("prunable_groups", 0), report.get("removed_channels", 0)
    (before, unknown_before), (after, unknown_after) = inspect_macs(cli, task["model"]), inspect_macs(cli, out)
    transformer = any(t in task["name"] for t in TRANSFORMERS)
    if before <= 0 or after <= 0 or unknown_before or unknown_after:
        cell.note = "MACs unknown"
        cell.fail("", f"inspect --json: MACs {before} -> {after}, nodes of unknown MACs "
                  f"{unknown_before} -> {unknown_after} ({groups} prunable groups, {removed} channels removed)")
        return
    ratio = after / before
    if groups == 0 and transformer:
        cell.note = f"no groups, MACs {ratio:.3f}"
        if after > before:
            cell.fail("", f"no prunable groups, yet MACs {before} -> {after}")
    else:
        cell.note = f"MACs {ratio:.3f}"
        if after >= before:
            cell.fail("", f"{groups} prunable groups, {removed} channels removed, MACs {before} -> {after} (not lower)")


def do_sparsify(cli, task, work, cell):
    out, report_path = work / "sparse.onnx", work / "report.json"
    run_cli(cli, ["sparsify", task["model"], "-o", out, *SPARSIFY_ARGS, "--report", report_path],
            timeout=CLI_TIMEOUT_S)
    rewritten = int(json.loads(report_path.read_text()).get("counters", {}).get("weights-sparsified", 0))
    custom = any(n.domain == "inferopt" for n in onnx.load(str(out), load_external_data=False).graph.node)
    cell.note = f"{rewritten} sparsified"
    check_written(cell, out, task, ort_load=not custom)
    check_outputs(cell, executor_outputs(cli, out, task, work / "outputs"), task)


def do_plan(cli, task, work, cell):
    args = ["plan", "--json", task["model"]]
    dims = task["dims"]
    if dims:
        args += ["--dims", ",".join(f"{d}={DIMS.get(d, 1)}" for d in dims)]
    try:
        report = json.loads(run_cli(cli, args, timeout=CLI_TIMEOUT_S).stdout)
    except AssertionError as e:
        if dims and "--dims" in cli_reason(e):  # the flag itself is refused, not the model
            cell.fail("--dims refused", f"plan {' '.join(map(str, args[1:]))}: {cli_reason(e)}")
            return
        raise
    unknown = int(report.get("unknown_size", 0))
    if not unknown:
        cell.note = f"{report.get('tensors', '?')} planned"
    else:
        first = ", ".join(report.get("unknown_size_values", [])[:3])
        cell.fail(f"{unknown} unknown size", f"{unknown} values of unknown size ({first}, ...)"
                  + (f" with {' '.join(args[3:])}" if dims else ""))


def do_infer(cli, task, work, cell):
    """Shape inference on the file as exported: every value typed, symbolic where the inputs are."""
    info = json.loads(run_cli(cli, ["inspect", "--json", task["model"]], timeout=CLI_TIMEOUT_S).stdout)
    unknown, without_rules = int(info["unknown_shapes"]), info["ops_without_shape_rules"]
    if unknown or without_rules:
        cell.fail(f"{unknown} unknown", f"{unknown} values of unknown shape after inference; ops without rules {without_rules}")
    elif task["symbolic"] and not info["symbolic_dims"]:
        cell.fail("dims lost", "inspect reports no symbolic input dims for a model that has them")
    else:
        cell.note = "0 unknown" + (f", symbolic {','.join(info['symbolic_dims'])}" if task["symbolic"] else "")


CHECKS = {"infer": do_infer, "run": do_run, "O1": do_optimize(1), "O2": do_optimize(2), "O3": do_optimize(3),
          "quantize": do_quantize, "fp16": do_fp16, "prune": do_prune, "sparsify": do_sparsify, "plan": do_plan}


def run_task(cli, task, command, work):
    """One table cell; never raises (a CLI failure or a crash of the check is the cell's reason)."""
    start = time.monotonic()
    cell = Cell()
    work.mkdir(parents=True, exist_ok=True)
    try:
        CHECKS[command](cli, task, work, cell)
    except AssertionError as e:
        if str(e).startswith("inferopt "):
            cell.fail(f"cli: {cli_reason(e)}", str(e))
        else:
            cell.fail(short(e), str(e))
    except Exception as e:  # noqa: BLE001 - reported in the table, not raised
        cell.fail(f"{type(e).__name__}", f"{type(e).__name__}: {e}")
    return task["name"], command, cell, time.monotonic() - start


# ---- the table ----------------------------------------------------------------------------------

def prepare(model_path, work):
    """The per-model task: inputs, calibration batches, reference outputs, names."""
    name = model_path.stem
    model = onnx.load(str(model_path), load_external_data=False)
    feed = make_feed(model, seed=0)
    folder = work / name
    input_files = write_feed(feed, folder / "inputs")
    for k in range(CALIB_BATCHES):
        write_feed(make_feed(model, seed=k + 1), folder / "calib" / f"batch_{k}")
    sess = ort_session(model_path, threads=1)
    reference = sess.run(None, feed)
    dims = symbolic_dims(model)
    unknown, total = unknown_shapes(model_path, bool(dims))
    return {
        "name": name, "model": model_path, "feed": feed, "input_files": input_files,
        "calib_dir": folder / "calib", "reference": reference, "dims": dims, "symbolic": bool(dims),
        "input_names": [i.name for i in sess.get_inputs()], "output_names": [o.name for o in sess.get_outputs()],
        "original_shapes": f"{unknown}/{total}",
        "layers": next((n for family, n in LAYERS.items() if name.startswith(family)), 0),
    }


def print_table(tasks, commands, cells):
    header = ["model", "shapes", *commands]
    width = max(len(t["name"]) for t in tasks) + 1
    widths = [width, 8] + [CELL_WIDTH] * len(commands)
    print(" | ".join(h.ljust(w) for h, w in zip(header, widths)))
    print("-+-".join("-" * w for w in widths))
    for t in tasks:
        row = [t["name"], t["original_shapes"]] + [cells[(t["name"], c)].text() for c in commands]
        print(" | ".join(v.ljust(w) for v, w in zip(row, widths)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cli", required=True, type=Path, help="the inferopt binary")
    parser.add_argument("--corpus", required=True, type=Path, help="tests/models/corpus")
    parser.add_argument("--work", required=True, type=Path, help="scratch folder (emptied first)")
    parser.add_argument("--only", help="only the models whose file name contains this")
    parser.add_argument("--commands", help=f"comma-separated subset of {','.join(COMMANDS)}")
    parser.add_argument("--jobs", type=int, default=2, help="processes running commands (at most 2)")
    args = parser.parse_args()
    commands = COMMANDS if not args.commands else tuple(args.commands.split(","))
    unknown = [c for c in commands if c not in CHECKS]
    if unknown:
        parser.error(f"unknown commands {unknown}; choose from {','.join(COMMANDS)}")
    args.cli, args.corpus, args.work = args.cli.resolve(), args.corpus.resolve(), args.work.resolve()
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)

    models = sorted(p for p in args.corpus.glob("*.onnx") if not args.only or args.only in p.stem)
    if not models:
        print(f"no corpus model in {args.corpus}" + (f" matches {args.only!r}" if args.only else ""))
        return 1
    start = time.monotonic()
    tasks = [prepare(p, args.work) for p in models]
    cells = {}
    jobs = max(1, min(args.jobs, 2))
    with concurrent.futures.ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(run_task, args.cli, t, c, args.work / t["name"] / c) for t in tasks for c in commands]
        for f in concurrent.futures.as_completed(futures):
            name, command, cell, _ = f.result()
            cells[(name, command)] = cell
    elapsed = time.monotonic() - start

    print_table(tasks, commands, cells)
    failed = [(t["name"], c, cells[(t["name"], c)]) for t in tasks for c in commands if not cells[(t["name"], c)].ok]
    if failed:
        print("\nfailures:")
        for name, command, cell in failed:
            for _, full in cell.failures:
                print(f"  {name} {command}: {full}")
    print(f"\n{len(tasks)} models x {len(commands)} commands: {len(tasks) * len(commands) - len(failed)} passed, "
          f"{len(failed)} failed, {elapsed:.0f} s with {jobs} processes")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
