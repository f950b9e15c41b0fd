#!/usr/bin/env python3
"""`inferopt sparsify` checked against docs/SPARSE_OPS.md with numpy alone.

ONNX Runtime has no kernel for inferopt.BlockSparseMatMul, so the oracle here is the op's
documented schema, read independently of inferopt's code:

1. a model x [6, 64] -> MatMul (W1 [64, 96]) -> Relu -> Gemm (B [40, 96], transB = 1, C [40])
   -> y goes through `inferopt sparsify --block 8x16 --sparsity 0.5 --min-size 0`;
2. the output passes `onnx.checker.check_model(full_check=True)`, imports `inferopt` version 1
   and holds two BlockSparseMatMul nodes (the Relu folded into the first);
3. each node's arrays, decoded by the documented layout (int64 row_ptr/col_ind, row-major
   [nnz, r, c] blocks, `transposed`), give a weight equal to the original on the kept blocks
   and zero elsewhere, and the kept blocks are the half of the block grid (blocks of
   block_rows along K by block_cols along N) with the largest l2 norms;
4. numpy evaluating the graph with the decoded weights agrees with `inferopt run` on the same
   input within rtol 1e-4, atol 1e-4 (float32 sums in different orders).

Exit status: 0 when every check passed, 1 otherwise.
"""

import argparse
import subprocess
import sys
import traceback
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

BLOCK = (8, 16)  # on W as used: rows along K, columns along N
SPARSITY = 0.5


def make_model(path):
    rng = np.random.default_rng(3)
    w1 = rng.standard_normal((64, 96)).astype(np.float32)
    b = rng.standard_normal((40, 96)).astype(np.float32)
    c = rng.standard_normal((40,)).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"], name="up"),
             helper.make_node("Relu", ["h"], ["hr"], name="relu"),
             helper.make_node("Gemm", ["hr", "b", "c"], ["y"], name="down", transB=1)]
    graph = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [6, 40])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(b, "b"), numpy_helper.from_array(c, "c")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return {"up": w1, "down": b.T.copy()}, c  # weights as used, [K, N]


def decode(node, inits):
    """The dense weight as used ([K, N]) of a BlockSparseMatMul, read by the documented layout."""
    a = {x.name: helper.get_attribute_value(x) for x in node.attribute}
    k, n, br, bc, transposed = a["rows"], a["cols"], a["block_rows"], a["block_cols"], a.get("transposed", 0)
    row_ptr, col_ind, values = (numpy_helper.to_array(inits[name]) for name in node.input[1:4])
    assert row_ptr.dtype == np.int64 and col_ind.dtype == np.int64 and values.dtype == np.float32
    rows, cols, r, c = (n, k, bc, br) if transposed else (k, n, br, bc)
    assert values.shape == (len(col_ind), r, c), (values.shape, r, c)
    assert row_ptr.shape == (-(-rows // r) + 1,) and row_ptr[0] == 0 and row_ptr[-1] == len(col_ind)
    padded = np.zeros((-(-rows // r) * r, -(-cols // c) * c), dtype=np.float32)
    for i in range(len(row_ptr) - 1):
        for blk in range(row_ptr[i], row_ptr[i + 1]):
            j = col_ind[blk]
            padded[i * r:(i + 1) * r, j * c:(j + 1) * c] = values[blk]
    assert not padded[rows:, :].any() and not padded[:, cols:].any(), "nonzeros outside the matrix"
    stored = padded[:rows, :cols]
    return (stored.T if transposed else stored), a


def check_pruning(original, pruned):
    """Kept blocks equal the original, dropped ones are zero, and the kept are the largest."""
    k, n = original.shape
    br, bc = BLOCK
    norms, kept = [], []
    for i in range(0, k, br):
        for j in range(0, n, bc):
            o, p = original[i:i + br, j:j + bc], pruned[i:i + br, j:j + bc]
            is_kept = bool(p.any())
            assert np.array_equal(p, o) if is_kept else not p.any()
            norms.append(float(np.sqrt((o.astype(np.float64) ** 2).sum())))
            kept.append(is_kept)
    norms, kept = np.array(norms), np.array(kept)
    assert kept.sum() == len(kept) - round(SPARSITY * len(kept)), (kept.sum(), len(kept))
    assert norms[kept].min() >= norms[~kept].max(), "a dropped block is larger than a kept one"


def run(args):
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    model, out = work / "mlp.onnx", work / "mlp.sparse.onnx"
    originals, bias = make_model(model)
    proc = subprocess.run([args.cli, "sparsify", str(model), "-o", str(out), "--block", f"{BLOCK[0]}x{BLOCK[1]}",
                           "--sparsity", str(SPARSITY), "--min-size", "0"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr

    sparse = onnx.load(out)
    onnx.checker.check_model(sparse, full_check=True)
    assert any(o.domain == "inferopt" and o.version == 1 for o in sparse.opset_import)
    nodes = [n for n in sparse.graph.node if n.domain == "inferopt" and n.op_type == "BlockSparseMatMul"]
    assert len(nodes) == 2 and len(sparse.graph.node) == 2, [n.op_type for n in sparse.graph.node]
    inits = {t.name: t for t in sparse.graph.initializer}
    weights = {}
    for node in nodes:
        w, attrs = decode(node, inits)
        assert (attrs["block_rows"], attrs["block_cols"]) == BLOCK
        assert w.shape == originals[node.name].shape
        check_pruning(originals[node.name], w)
        weights[node.name] = (w, attrs)
    assert weights["up"][1].get("activation") == b"Relu"  # string attributes decode to bytes
    assert weights["down"][1]["transposed"] == 1

    x = np.random.default_rng(9).standard_normal((6, 64)).astype(np.float32)
    onnx.save_tensor(numpy_helper.from_array(x, "x"), work / "x.pb")
    outputs = work / "outputs"
    proc = subprocess.run([args.cli, "run", str(out), "--input", f"x={work / 'x.pb'}", "--output-dir", str(outputs)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    got = numpy_helper.to_array(onnx.load_tensor(outputs / "output_0.pb"))
    h = np.maximum(x.astype(np.float64) @ weights["up"][0], 0.0)
    expected = h @ weights["down"][0] + bias
    assert np.allclose(got, expected, rtol=1e-4, atol=1e-4), float(np.abs(got - expected).max())
    return f"2 nodes decoded, pruning and outputs agree (max |diff| {float(np.abs(got - expected).max()):.2g})"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cli", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    try:
        print("ok  ", run(args))
        return 0
    except Exception:  # noqa: BLE001 - report any failure as a failed check
        traceback.print_exc()
        print("FAIL sparsify against docs/SPARSE_OPS.md")
        return 1


if __name__ == "__main__":
    sys.exit(main())
