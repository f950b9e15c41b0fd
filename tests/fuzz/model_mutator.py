#!/usr/bin/env python3
"""A structure-aware, seeded mutator of ONNX models, for fuzzing the inferopt CLI.

A mutant starts from a valid seed model and gets 1..N mutations. Most mutations edit the
ModelProto (attributes, node wiring, op types, tensor dims/types/data, opsets, external data,
graph order, oversized or nested constructs); deep_nested_if writes nesting deeper than
python protobuf can hold straight in the wire format; the byte_* ones edit the serialized
bytes, last. Everything is drawn from one random.Random, so a (seed model, seed, count)
triple always gives the same mutant. Each mutation records its kind (a short name, see
MUTATIONS, WIRE_MUTATIONS and BYTE_MUTATIONS) and a detail string saying what it changed.

`tiny_seed_models()` builds five small valid opset-17 models (Conv+Relu+MaxPool,
MatMul+Add+Softmax, Concat/Reshape/Transpose, a Gemm MLP, nested If) to mutate alongside
real exports.

  model_mutator.py write-seeds DIR [--check]          the tiny seeds as DIR/NAME.onnx
  model_mutator.py mutate SEED.onnx --out DIR [--seed S] [--count N] [--mutations 2]
"""

import argparse
import copy
import json
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import google.protobuf.message
import onnx
from onnx import AttributeProto, TensorProto, helper, numpy_helper

HUGE_INTS = (2**31, 2**62, 2**63 - 1, -(2**31), -(2**62))
OPSET_VERSIONS = (1, 6, 13, 17, 20, 24, 99)
IR_VERSIONS = (0, 1, 3, 4, 6, 7, 8, 9, 10, 11, 12, 99, -1, 2**40)
EXTREME_DIMS = (0, -1, -5, 2**33, 2**62)
# Valid TensorProto element types plus out-of-range ones.
DATA_TYPES = tuple(range(0, 24)) + (99, -1)
# (domain, op_type) a node may be turned into: common ops, ops with subgraphs or odd
# outputs, the custom ops inferopt itself emits and understands, and an op nobody has.
OP_TYPES = tuple(("", op) for op in (
    "Relu", "Add", "Mul", "Sub", "Div", "Conv", "ConvTranspose", "MatMul", "Gemm", "Reshape",
    "Transpose", "Concat", "Split", "Slice", "Gather", "Squeeze", "Unsqueeze", "Flatten",
    "Softmax", "MaxPool", "AveragePool", "GlobalAveragePool", "BatchNormalization",
    "LayerNormalization", "Identity", "Cast", "Sigmoid", "Resize", "ReduceMean", "Pad", "Where",
    "Expand", "Shape", "ConstantOfShape", "Constant", "Einsum", "TopK", "NonZero", "LSTM",
    "If", "Loop", "Scan", "QuantizeLinear", "DequantizeLinear", "NoSuchOp")) + (
    ("com.microsoft", "FusedConv"), ("com.microsoft", "FusedGemm"),
    ("inferopt", "BlockSparseMatMul"), ("bogus.domain", "Relu"))
EXTERNAL_LOCATIONS = (
    "weights.bin", "../weights.bin", "../../weights.bin", "/etc/hostname", "/dev/zero",
    "/dev/urandom", "", ".", "in", "sub/../weights.bin", "missing.bin", "w" * 300,
    "weights.bin\x00.txt", "./weights.bin", "out/weights.bin")
EXTERNAL_OFFSETS = (None, "0", "16", "-1", str(2**62), "18446744073709551616", "12abc", "",
                    " 8", "0x10", "+4")
# Our validation allows 16 nested subgraphs; python protobuf cannot hold much over 24, so
# deeper nesting is written straight in the wire format (deep_nested_if).
NESTED_IF_DEPTHS = (1, 2, 8, 16, 17, 24)
DEEP_IF_DEPTHS = (40, 400, 5000)
CONCAT_FLOOD_COPIES = (1000, 4096, 20000)
HUGE_SHAPES = ((2**31,), (2**20, 2**20), (2**62,), (1, 2**40), (-1,), (0, 5), (2**16,) * 4)


@dataclass
class Mutant:
    data: bytes                                     # the serialized (maybe broken) model
    mutations: list = field(default_factory=list)   # [(kind, detail)] in the order applied
    side_files: dict = field(default_factory=dict)  # {name next to the model: bytes}

    @property
    def kinds(self):
        return [kind for kind, _ in self.mutations]


class Context:
    """What mutations share: the random source, fresh names, value types of the seed, files."""

    def __init__(self, rng, types):
        self.rng = rng
        self.types = types
        self.side_files = {}
        self._counter = 0

    def fresh(self, prefix):
        self._counter += 1
        return f"{prefix}_mut{self._counter}"


# ---- walking a model ---------------------------------------------------------------------------

def all_graphs(graph):
    """The graph and every subgraph in its nodes' attributes, outermost first."""
    graphs = [graph]
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == AttributeProto.GRAPH:
                graphs += all_graphs(attr.g)
            elif attr.type == AttributeProto.GRAPHS:
                for g in attr.graphs:
                    graphs += all_graphs(g)
    return graphs


def all_nodes(model, where=lambda node: True):
    """(graph, index) of every node in every graph that `where` accepts."""
    return [(g, i) for g in all_graphs(model.graph) for i, n in enumerate(g.node) if where(n)]


def value_infos(model):
    """Every ValueInfoProto: graph inputs, outputs and value_info of every graph."""
    return [v for g in all_graphs(model.graph) for v in list(g.input) + list(g.output) + list(g.value_info)]


def initializers(model):
    return [t for g in all_graphs(model.graph) for t in g.initializer]


def value_types(model):
    """{value name: TypeProto} from ONNX shape inference on the seed ({} when it fails)."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # noqa: BLE001 - types only help build nicer mutants
        inferred = model
    return {v.name: v.type for v in value_infos(inferred) if v.type.HasField("tensor_type")}


def pick(rng, items):
    return rng.choice(items) if items else None


def random_node(model, rng, where=lambda node: True):
    """A node (of any graph) that `where` accepts, or None; edits to it edit the model."""
    found = pick(rng, all_nodes(model, where))
    return found[0].node[found[1]] if found else None


def ensure_raw_data(tensor):
    """Moves typed data (float_data, ...) into raw_data so byte-level edits apply; False for
    strings or tensors that numpy_helper cannot read."""
    if tensor.HasField("raw_data") or tensor.data_type == TensorProto.STRING:
        return tensor.HasField("raw_data")
    try:
        raw = numpy_helper.to_array(tensor).tobytes()
    except Exception:  # noqa: BLE001
        return False
    for name in ("float_data", "int32_data", "int64_data", "double_data", "uint64_data"):
        tensor.ClearField(name)
    tensor.raw_data = raw
    return True


# ---- attributes -----------------------------------------------------------------------------------

NUMERIC_ATTRS = (AttributeProto.INT, AttributeProto.INTS, AttributeProto.FLOAT, AttributeProto.FLOATS)


def odd_int(rng):
    return rng.choice((0, -1, rng.randint(-4, 9)) + HUGE_INTS)


def odd_float(rng):
    return rng.choice((0.0, -1.0, 1e30, float("nan"), float("inf"), -float("inf"), round(rng.uniform(-2, 2), 3)))


def odd_list(rng, values, make_value):
    """A changed copy of an ints/floats list: one element, all elements, or the length."""
    values = list(values)
    how = rng.choice(("one", "all", "drop", "append", "empty"))
    if how == "one" and values:
        values[rng.randrange(len(values))] = make_value(rng)
    elif how == "all":
        values = [make_value(rng)] * max(len(values), 1)
    elif how == "drop" and values:
        values.pop()
    elif how == "append":
        values.append(make_value(rng))
    else:
        values = []
    return values


def attr_value(model, ctx):
    found = [(g.node[i], a) for g, i in all_nodes(model) for a in g.node[i].attribute if a.type in NUMERIC_ATTRS]
    if not found:
        return None
    node, attr = ctx.rng.choice(found)
    if attr.type == AttributeProto.INT:
        attr.i = odd_int(ctx.rng)
        value = attr.i
    elif attr.type == AttributeProto.FLOAT:
        attr.f = odd_float(ctx.rng)
        value = attr.f
    elif attr.type == AttributeProto.INTS:
        value = odd_list(ctx.rng, attr.ints, odd_int)
        attr.ClearField("ints")
        attr.ints.extend(value)
    else:
        value = odd_list(ctx.rng, attr.floats, odd_float)
        attr.ClearField("floats")
        attr.floats.extend(value)
    return f"{node.op_type}.{attr.name}={value}"


def attr_delete(model, ctx):
    node = random_node(model, ctx.rng, lambda n: len(n.attribute) > 0)
    if node is None:
        return None
    k = ctx.rng.randrange(len(node.attribute))
    name = node.attribute[k].name
    del node.attribute[k]
    return f"{node.op_type}.{name}"


def attr_unknown(model, ctx):
    """An attribute the op does not define, or a second copy of one it has."""
    node = random_node(model, ctx.rng)
    if node is None:
        return None
    if node.attribute and ctx.rng.random() < 0.25:
        node.attribute.append(copy.deepcopy(node.attribute[ctx.rng.randrange(len(node.attribute))]))
        return f"{node.op_type}.{node.attribute[-1].name} twice"
    taken = {a.name for a in node.attribute}
    name = ctx.rng.choice([n for n in ("mutant_attr", "axis", "perm", "kernel_shape", "to", "group") if n not in taken])
    value = ctx.rng.choice((7, 0.5, b"text", [1, 2, 3], numpy_helper.from_array(np.zeros(2, np.float32))))
    node.attribute.append(helper.make_attribute(name, value))
    return f"{node.op_type}.{name}"


# ---- node wiring ---------------------------------------------------------------------------------

def input_duplicate(model, ctx):
    node = random_node(model, ctx.rng, lambda n: len(n.input) > 0)
    if node is None:
        return None
    name = node.input[ctx.rng.randrange(len(node.input))]
    node.input.insert(ctx.rng.randint(0, len(node.input)), name)
    return f"{node.op_type} +{name!r} ({len(node.input)} inputs)"


def input_remove(model, ctx):
    """Drops an input, or leaves it blank ('' means an omitted optional input)."""
    node = random_node(model, ctx.rng, lambda n: len(n.input) > 0)
    if node is None:
        return None
    k = ctx.rng.randrange(len(node.input))
    name = node.input[k]
    if ctx.rng.random() < 0.3:
        node.input[k] = ""
        return f"{node.op_type} input {k} ({name!r}) blank"
    del node.input[k]
    return f"{node.op_type} input {k} ({name!r}) removed"


def output_extra(model, ctx):
    """A fresh output name, or one that something else already defines."""
    graph, i = pick(ctx.rng, all_nodes(model)) or (None, None)
    if graph is None:
        return None
    node = graph.node[i]
    defined = [o for n in graph.node for o in n.output if o] + [v.name for v in graph.input]
    name = ctx.rng.choice(defined) if defined and ctx.rng.random() < 0.3 else ctx.fresh("extra_out")
    node.output.append(name)
    return f"{node.op_type} +output {name!r}"


def op_type_change(model, ctx):
    node = random_node(model, ctx.rng)
    if node is None:
        return None
    old = node.op_type
    domain, op_type = ctx.rng.choice([d_op for d_op in OP_TYPES if d_op != (node.domain, node.op_type)])
    node.op_type, node.domain = op_type, domain
    if domain and domain not in {o.domain for o in model.opset_import}:
        model.opset_import.append(helper.make_opsetid(domain, 1))
    return f"{old} -> {domain + '.' if domain else ''}{op_type}"


def rename_value(model, ctx):
    """Renames one end of a reference (a node input or output, a graph input or output, an
    initializer) so that the other end no longer finds it."""
    rng = ctx.rng
    graph = model.graph
    ends = []
    ends += [("node input", n.input, k) for n in graph.node for k in range(len(n.input)) if n.input[k]]
    ends += [("node output", n.output, k) for n in graph.node for k in range(len(n.output)) if n.output[k]]
    ends += [("graph input", v, None) for v in graph.input]
    ends += [("graph output", v, None) for v in graph.output]
    ends += [("initializer", t, None) for t in graph.initializer]
    what, holder, k = rng.choice(ends)
    new = ctx.fresh("renamed")
    if k is None:
        old, holder.name = holder.name, new
    else:
        old, holder[k] = holder[k], new
    return f"{what} {old!r} -> {new!r}"


def swap_nodes(model, ctx):
    graphs = [g for g in all_graphs(model.graph) if len(g.node) >= 2]
    if not graphs:
        return None
    graph = ctx.rng.choice(graphs)
    i, j = sorted(ctx.rng.sample(range(len(graph.node)), 2))
    first = copy.deepcopy(graph.node[i])
    graph.node[i].CopyFrom(graph.node[j])
    graph.node[j].CopyFrom(first)
    return f"nodes {i} ({first.op_type}) <-> {j} ({graph.node[i].op_type})"


def self_cycle(model, ctx):
    """A node reads its own output, or (when it has a direct consumer) its consumer's output."""
    graph, i = pick(ctx.rng, all_nodes(model, lambda n: len(n.input) > 0 and len(n.output) > 0)) or (None, None)
    if graph is None:
        return None
    node = graph.node[i]
    consumers = [n for n in graph.node if n.output and set(n.input) & set(node.output) and n is not node]
    source = ctx.rng.choice(consumers) if consumers and ctx.rng.random() < 0.5 else node
    k = ctx.rng.randrange(len(node.input))
    node.input[k] = source.output[0]
    return f"{node.op_type} input {k} <- {source.op_type} output {source.output[0]!r}"


def duplicate_node(model, ctx):
    graph, i = pick(ctx.rng, all_nodes(model)) or (None, None)
    if graph is None:
        return None
    graph.node.insert(i + 1, copy.deepcopy(graph.node[i]))
    return f"{graph.node[i].op_type} {graph.node[i].name!r}"


# ---- tensors and types ---------------------------------------------------------------------------

def tensor_dims(tensor, rng):
    """Changes an initializer's dims, its data left as it was (so sizes may disagree)."""
    dims = list(tensor.dims)
    how = rng.choice(("one", "append", "drop", "reverse"))
    if how == "one" and dims:
        dims[rng.randrange(len(dims))] = rng.randint(1, 8)
    elif how == "drop" and dims:
        dims.pop()
    elif how == "reverse":
        dims.reverse()
    else:
        dims.append(1)
    tensor.ClearField("dims")
    tensor.dims.extend(dims)
    return dims


def init_dims(model, ctx):
    tensor = pick(ctx.rng, initializers(model))
    if tensor is None:
        return None
    return f"{tensor.name!r} dims {list(tensor.dims)} -> {tensor_dims(tensor, ctx.rng)}"


def init_dtype(model, ctx):
    """Another data_type; half the time the data goes too (a tensor with dims and no data)."""
    tensor = pick(ctx.rng, initializers(model))
    if tensor is None:
        return None
    old = tensor.data_type
    tensor.data_type = ctx.rng.choice([t for t in DATA_TYPES if t != old])
    dropped = ctx.rng.random() < 0.5
    if dropped:
        for name in ("raw_data", "float_data", "int32_data", "int64_data", "double_data", "uint64_data", "string_data"):
            tensor.ClearField(name)
    return f"{tensor.name!r} data_type {old} -> {tensor.data_type}{' without data' if dropped else ''}"


def tensor_value_infos(model):
    return [v for v in value_infos(model) if v.type.HasField("tensor_type")]


def io_dims(model, ctx):
    info = pick(ctx.rng, [v for v in tensor_value_infos(model) if v.type.tensor_type.HasField("shape")])
    if info is None:
        return None
    shape = info.type.tensor_type.shape
    how = ctx.rng.choice(("value", "param", "clear", "append", "drop"))
    if how == "value" and shape.dim:
        shape.dim[ctx.rng.randrange(len(shape.dim))].dim_value = ctx.rng.randint(1, 9)
    elif how == "param" and shape.dim:
        shape.dim[ctx.rng.randrange(len(shape.dim))].dim_param = "mutant_dim"
    elif how == "drop" and shape.dim:
        del shape.dim[len(shape.dim) - 1]
    elif how == "clear":
        info.type.tensor_type.ClearField("shape")
    else:
        shape.dim.add().dim_value = 1
    return f"{info.name!r} shape {how}"


def io_dtype(model, ctx):
    info = pick(ctx.rng, tensor_value_infos(model))
    if info is None:
        return None
    old = info.type.tensor_type.elem_type
    info.type.tensor_type.elem_type = ctx.rng.choice([t for t in DATA_TYPES if t != old])
    return f"{info.name!r} elem_type {old} -> {info.type.tensor_type.elem_type}"


def dims_extreme(model, ctx):
    """A dim of 0, negative or far beyond memory, on an initializer or a declared shape."""
    value = ctx.rng.choice(EXTREME_DIMS)
    tensors = [t for t in initializers(model) if t.dims]
    shaped = [v for v in tensor_value_infos(model) if v.type.tensor_type.shape.dim]
    if tensors and (not shaped or ctx.rng.random() < 0.5):
        tensor = ctx.rng.choice(tensors)
        tensor.dims[ctx.rng.randrange(len(tensor.dims))] = value
        return f"initializer {tensor.name!r} dims {list(tensor.dims)}"
    if not shaped:
        return None
    info = ctx.rng.choice(shaped)
    dims = info.type.tensor_type.shape.dim
    dims[ctx.rng.randrange(len(dims))].dim_value = value
    return f"{info.name!r} dim = {value}"


def raw_data_truncate(model, ctx):
    tensor = pick(ctx.rng, [t for t in initializers(model) if ensure_raw_data(t) and t.raw_data])
    if tensor is None:
        return None
    size = len(tensor.raw_data)
    keep = ctx.rng.choice((0, size // 2, size - 1, ctx.rng.randrange(size)))
    tensor.raw_data = tensor.raw_data[:keep]
    return f"{tensor.name!r} raw_data {size} -> {keep} bytes"


def raw_data_extend(model, ctx):
    tensor = pick(ctx.rng, [t for t in initializers(model) if ensure_raw_data(t)])
    if tensor is None:
        return None
    extra = ctx.rng.choice((1, ctx.rng.randint(2, 64), max(len(tensor.raw_data), 1)))
    tensor.raw_data = tensor.raw_data + ctx.rng.randbytes(extra)
    return f"{tensor.name!r} raw_data +{extra} bytes"


def input_nontensor(model, ctx):
    """A graph input becomes a sequence, map, optional or sparse tensor of its tensor type."""
    inits = {t.name for t in model.graph.initializer}
    info = pick(ctx.rng, [v for v in model.graph.input if v.name not in inits and v.type.HasField("tensor_type")])
    if info is None:
        return None
    tensor = copy.deepcopy(info.type)
    kind = ctx.rng.choice(("sequence", "map", "optional", "sparse"))
    if kind == "sequence":
        new = helper.make_sequence_type_proto(tensor)
    elif kind == "map":
        new = helper.make_map_type_proto(TensorProto.INT64, tensor)
    elif kind == "optional":
        new = helper.make_optional_type_proto(tensor)
    else:
        t = tensor.tensor_type
        new = helper.make_sparse_tensor_type_proto(t.elem_type, [d.dim_value or d.dim_param for d in t.shape.dim])
    info.type.CopyFrom(new)
    return f"{info.name!r} -> {kind}"


# ---- versions ------------------------------------------------------------------------------------

def opset_version(model, ctx):
    """The default domain's opset to an odd version; sometimes no import, or two."""
    rng = ctx.rng
    entries = [o for o in model.opset_import if o.domain in ("", "ai.onnx")]
    how = rng.choice(("set",) * 6 + ("remove", "twice"))
    if how == "remove" and entries:
        kept = [copy.deepcopy(o) for o in model.opset_import if o.domain not in ("", "ai.onnx")]
        model.ClearField("opset_import")
        model.opset_import.extend(kept)
        return "default opset import removed"
    version = rng.choice(OPSET_VERSIONS)
    if how == "twice" or not entries:
        model.opset_import.append(helper.make_opsetid("", version))
        return f"+default opset {version}"
    entries[0].version = version
    return f"default opset {version}"


def ir_version(model, ctx):
    old = model.ir_version
    model.ir_version = ctx.rng.choice([v for v in IR_VERSIONS if v != old])
    return f"ir_version {old} -> {model.ir_version}"


def external_data(model, ctx):
    """An initializer's data moves to a side file, with odd location/offset/length strings."""
    rng = ctx.rng
    tensor = pick(rng, [t for t in initializers(model) if ensure_raw_data(t)])
    if tensor is None:
        return None
    data = tensor.raw_data
    tensor.ClearField("raw_data")
    tensor.data_location = TensorProto.EXTERNAL
    location = rng.choice(EXTERNAL_LOCATIONS)
    offset = rng.choice(EXTERNAL_OFFSETS)
    length = rng.choice((None, str(len(data)), str(len(data) - 1), str(len(data) + 1), "0", "-1", "99999999999999", "abc"))
    entries = [("location", location)] + ([("offset", offset)] if offset is not None else []) \
        + ([("length", length)] if length is not None else [])
    if rng.random() < 0.2:
        entries.append(rng.choice((("checksum", "0"), ("location", "other.bin"), ("basepath", ".."))))
    for key, value in entries:
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value
    pad = int(offset) if offset in ("0", "16") else 0
    ctx.side_files["weights.bin"] = bytes(pad) + data  # what a valid location/offset would read
    return f"{tensor.name!r} -> {entries}"


# ---- oversized and nested constructs ---------------------------------------------------------------

def replace_node(graph, i, new_nodes):
    """Puts `new_nodes` where node i was (its other outputs are left undefined)."""
    del graph.node[i]
    for k, node in enumerate(new_nodes):
        graph.node.insert(i + k, node)


def replaceable_node(model, ctx):
    return pick(ctx.rng, all_nodes(model, lambda n: any(n.input) and len(n.output) > 0)) or (None, None)


def concat_flood(model, ctx):
    graph, i = replaceable_node(model, ctx)
    if graph is None:
        return None
    node = graph.node[i]
    source = next(x for x in node.input if x)
    copies, axis = ctx.rng.choice(CONCAT_FLOOD_COPIES), ctx.rng.choice((0, 1, -1))
    replace_node(graph, i, [helper.make_node("Concat", [source] * copies, [node.output[0]], axis=axis)])
    return f"{node.op_type} -> Concat of {copies} x {source!r}, axis {axis}"


def constant_of_shape_huge(model, ctx):
    graph, i = replaceable_node(model, ctx)
    if graph is None:
        return None
    node = graph.node[i]
    shape = ctx.rng.choice(HUGE_SHAPES)
    shape_name = ctx.fresh("huge_shape")
    model.graph.initializer.append(numpy_helper.from_array(np.array(shape, np.int64), shape_name))
    value = numpy_helper.from_array(np.zeros(1, np.float32), "value")
    replace_node(graph, i, [helper.make_node("ConstantOfShape", [shape_name], [node.output[0]], value=value)])
    return f"{node.op_type} -> ConstantOfShape {list(shape)}"


def branch_body(node, ctx, suffix):
    """A subgraph that computes `node` on outer-scope values, outputs renamed apart."""
    inner = copy.deepcopy(node)
    inner.name = ctx.fresh(f"{node.op_type}_{suffix}")
    outputs = []
    for k, name in enumerate(node.output):
        inner.output[k] = ctx.fresh(f"{name}_{suffix}")
        info = helper.make_value_info(inner.output[k], ctx.types.get(name, onnx.TypeProto()))
        outputs.append(info)
    return helper.make_graph([inner], ctx.fresh("body"), [], outputs)


def nested_if(model, ctx):
    """A node becomes `depth` nested Ifs on a constant condition, the node itself innermost
    and in every else branch."""
    graph, i = replaceable_node(model, ctx)
    if graph is None:
        return None
    node = graph.node[i]
    depth = ctx.rng.choice(NESTED_IF_DEPTHS)
    cond = ctx.fresh("if_cond")
    model.graph.initializer.append(numpy_helper.from_array(np.array(ctx.rng.random() < 0.5), cond))
    body = branch_body(node, ctx, "inner")
    for level in range(depth - 1):
        names = [ctx.fresh(f"{o}_if{level}") for o in node.output]
        level_if = helper.make_node("If", [cond], names, then_branch=body, else_branch=branch_body(node, ctx, "else"))
        outputs = [helper.make_value_info(n, ctx.types.get(o, onnx.TypeProto())) for n, o in zip(names, node.output)]
        body = helper.make_graph([level_if], ctx.fresh("level"), [], outputs)
    top = helper.make_node("If", [cond], list(node.output), then_branch=body, else_branch=branch_body(node, ctx, "else"))
    replace_node(graph, i, [top])
    return f"{node.op_type} inside {depth} nested If"


# ---- wire-format mutations (they serialize the model; byte mutations come after) ---------------

def varint(n):
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


GRAPH_NODE, MODEL_GRAPH, NODE_ATTRIBUTE, ATTRIBUTE_G = 1, 7, 5, 6  # field numbers in onnx.proto


def field_header(number, size):
    return varint(number << 3 | 2) + varint(size)


def wire_field(number, payload):
    """One length-delimited protobuf field; repeated fields keep their wire order, and a
    message may list its fields in any order, so messages can be spliced together."""
    return field_header(number, len(payload)) + payload


def deep_if_bytes(node, depth, cond, ctx):
    """NodeProto bytes of `depth` If nodes nested in each other's then_branch, `node` innermost
    and in every else branch. Each level's bytes end with the level inside it, so the levels
    are written as prefixes around the innermost body and joined once (linear in depth)."""
    inner = branch_body(node, ctx, "inner").SerializeToString()
    prefixes, size = [], len(inner)  # size: bytes of the message the next level wraps
    then_attr = AttributeProto(name="then_branch", type=AttributeProto.GRAPH).SerializeToString()
    for level in range(depth):
        top = level == depth - 1
        names = list(node.output) if top else [ctx.fresh(f"{o}_deep{level}") for o in node.output]
        shallow = helper.make_node("If", [cond], names, else_branch=branch_body(node, ctx, "else")).SerializeToString()
        g_header = field_header(ATTRIBUTE_G, size)
        node_prefix = shallow + field_header(NODE_ATTRIBUTE, len(then_attr) + len(g_header) + size) + then_attr + g_header
        prefixes.append(node_prefix)
        size += len(node_prefix)
        if top:
            return b"".join(reversed(prefixes)) + inner
        outputs = [helper.make_value_info(n, ctx.types.get(o, onnx.TypeProto())) for n, o in zip(names, node.output)]
        graph_prefix = helper.make_graph([], ctx.fresh("deep"), [], outputs).SerializeToString() + field_header(GRAPH_NODE, size)
        prefixes.append(graph_prefix)
        size += len(graph_prefix)
    raise AssertionError("depth must be positive")


def serialize_with_node(model, index, node_bytes):
    """The model's bytes with main-graph node `index` replaced by `node_bytes`."""
    nodes = [n.SerializeToString() for n in model.graph.node]
    nodes[index] = node_bytes
    graph_shell, model_shell = onnx.GraphProto(), onnx.ModelProto()
    graph_shell.CopyFrom(model.graph)
    graph_shell.ClearField("node")
    model_shell.CopyFrom(model)
    model_shell.ClearField("graph")
    graph_bytes = b"".join(wire_field(GRAPH_NODE, n) for n in nodes) + graph_shell.SerializeToString()
    return model_shell.SerializeToString() + wire_field(MODEL_GRAPH, graph_bytes)


def deep_nested_if(model, ctx):
    """Like nested_if, but deeper than protobuf's default recursion limit: (bytes, detail)."""
    candidates = [i for i, n in enumerate(model.graph.node) if any(n.input) and n.output]
    if not candidates:
        return None
    i = ctx.rng.choice(candidates)
    node, depth = model.graph.node[i], ctx.rng.choice(DEEP_IF_DEPTHS)
    cond = ctx.fresh("if_cond")
    model.graph.initializer.append(numpy_helper.from_array(np.array(ctx.rng.random() < 0.5), cond))
    return serialize_with_node(model, i, deep_if_bytes(node, depth, cond, ctx)), f"{node.op_type} inside {depth} nested If"


WIRE_MUTATIONS = {"deep_nested_if": deep_nested_if}


MUTATIONS = {
    "attr_value": attr_value,
    "attr_delete": attr_delete,
    "attr_unknown": attr_unknown,
    "input_duplicate": input_duplicate,
    "input_remove": input_remove,
    "output_extra": output_extra,
    "op_type_change": op_type_change,
    "init_dims": init_dims,
    "init_dtype": init_dtype,
    "io_dims": io_dims,
    "io_dtype": io_dtype,
    "dims_extreme": dims_extreme,
    "raw_data_truncate": raw_data_truncate,
    "raw_data_extend": raw_data_extend,
    "input_nontensor": input_nontensor,
    "rename_value": rename_value,
    "swap_nodes": swap_nodes,
    "self_cycle": self_cycle,
    "duplicate_node": duplicate_node,
    "opset_version": opset_version,
    "ir_version": ir_version,
    "external_data": external_data,
    "concat_flood": concat_flood,
    "constant_of_shape_huge": constant_of_shape_huge,
    "nested_if": nested_if,
}


# ---- byte-level mutations (after serialization) -----------------------------------------------------

def byte_flip(data, rng):
    data = bytearray(data)
    flips = rng.randint(1, 8)
    for _ in range(flips):
        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    return bytes(data), f"{flips} bits"


def byte_insert(data, rng):
    at, extra = rng.randrange(len(data) + 1), rng.randbytes(rng.randint(1, 64))
    return data[:at] + extra + data[at:], f"{len(extra)} bytes at {at}"


def byte_delete(data, rng):
    at = rng.randrange(len(data))
    size = rng.randint(1, 64)
    return data[:at] + data[at + size:], f"{size} bytes at {at}"


def byte_truncate(data, rng):
    keep = rng.randrange(len(data))
    return data[:keep], f"{len(data)} -> {keep} bytes"


BYTE_MUTATIONS = {
    "byte_flip": byte_flip,
    "byte_insert": byte_insert,
    "byte_delete": byte_delete,
    "byte_truncate": byte_truncate,
}

ALL_KINDS = tuple(MUTATIONS) + tuple(WIRE_MUTATIONS) + tuple(BYTE_MUTATIONS)


# ---- building mutants --------------------------------------------------------------------------------

def pick_kinds(rng, count, kinds=ALL_KINDS):
    return [rng.choice(kinds) for _ in range(count)]


def mutate(seed_bytes, rng, count, kinds=ALL_KINDS, types=None):
    """A mutant of the serialized seed with `count` mutations drawn from `kinds`: proto
    mutations first, then at most one wire mutation (which serializes the model), then byte
    mutations. A proto or wire mutation that finds nothing to change is redrawn, up to 10
    times. `types` caches value_types of the seed."""
    model = onnx.ModelProto()
    model.ParseFromString(seed_bytes)
    ctx = Context(rng, value_types(model) if types is None else types)
    applied, wire_kinds, byte_kinds = [], [], []
    for kind in pick_kinds(rng, count, kinds):
        for _ in range(10):
            if kind in BYTE_MUTATIONS:
                byte_kinds.append(kind)
                break
            if kind in WIRE_MUTATIONS and not wire_kinds:
                wire_kinds.append(kind)
                break
            try:
                detail = MUTATIONS[kind](model, ctx) if kind in MUTATIONS else None
            except google.protobuf.message.DecodeError:
                detail = None  # nested past what the python protobuf can hold: try another kind
            if detail is not None:
                applied.append((kind, detail))
                break
            kind = rng.choice(kinds)
    data = None
    for kind in wire_kinds:
        spliced = WIRE_MUTATIONS[kind](model, ctx)
        if spliced is not None:
            data, detail = spliced
            applied.append((kind, detail))
    if data is None:
        data = model.SerializeToString()
    for kind in byte_kinds:
        if data:
            data, detail = BYTE_MUTATIONS[kind](data, rng)
            applied.append((kind, detail))
    return Mutant(data, applied, ctx.side_files)


# ---- tiny valid seed models ----------------------------------------------------------------------------

def weights(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32) * 0.5


def tensor_info(name, shape, elem_type=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem_type, shape)


def finish(graph):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="inferopt-fuzz")
    model.ir_version = 8
    return model


def conv_relu_pool_model(rng):
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
         helper.make_node("Relu", ["c"], ["r"]),
         helper.make_node("MaxPool", ["r"], ["y"], kernel_shape=[2, 2], strides=[2, 2])],
        "conv_relu_pool", [tensor_info("x", [1, 3, 16, 16])], [tensor_info("y", [1, 8, 8, 8])],
        [numpy_helper.from_array(weights(rng, 8, 3, 3, 3), "w"), numpy_helper.from_array(weights(rng, 8), "b")])
    return finish(graph)


def matmul_add_softmax_model(rng):
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["m"]),
         helper.make_node("Add", ["m", "b"], ["a"]),
         helper.make_node("Softmax", ["a"], ["y"], axis=-1)],
        "matmul_add_softmax", [tensor_info("x", ["batch", 16])], [tensor_info("y", ["batch", 10])],
        [numpy_helper.from_array(weights(rng, 16, 10), "w"), numpy_helper.from_array(weights(rng, 10), "b")])
    return finish(graph)


def concat_reshape_transpose_model(rng):
    graph = helper.make_graph(
        [helper.make_node("Concat", ["x", "z"], ["c"], axis=1),
         helper.make_node("Reshape", ["c", "shape"], ["r"]),
         helper.make_node("Transpose", ["r"], ["y"], perm=[0, 2, 1, 3])],
        "concat_reshape_transpose", [tensor_info("x", [1, 4, 6]), tensor_info("z", [1, 4, 6])],
        [tensor_info("y", [1, 4, 2, 6])],
        [numpy_helper.from_array(np.array([1, 2, 4, 6], np.int64), "shape")])
    return finish(graph)


def gemm_mlp_model(rng):
    graph = helper.make_graph(
        [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], transB=1),
         helper.make_node("Relu", ["h"], ["r"]),
         helper.make_node("Gemm", ["r", "w2", "b2"], ["g"]),
         helper.make_node("Sigmoid", ["g"], ["y"])],
        "gemm_mlp", [tensor_info("x", [4, 32])], [tensor_info("y", [4, 10])],
        [numpy_helper.from_array(weights(rng, 64, 32), "w1"), numpy_helper.from_array(weights(rng, 64), "b1"),
         numpy_helper.from_array(weights(rng, 64, 10), "w2"), numpy_helper.from_array(weights(rng, 10), "b2")])
    return finish(graph)


def if_subgraphs_model(rng):
    """y = x * 2 + 1 when sum(x) > 0, else (x - 1, or -x - 1 inside a nested If)."""
    inner_then = helper.make_graph([helper.make_node("Sub", ["x", "one"], ["e1"])], "inner_then", [],
                                   [tensor_info("e1", [1, 8])])
    inner_else = helper.make_graph([helper.make_node("Neg", ["x"], ["n"]), helper.make_node("Sub", ["n", "one"], ["e2"])],
                                   "inner_else", [], [tensor_info("e2", [1, 8])])
    then_branch = helper.make_graph(
        [helper.make_node("Mul", ["x", "two"], ["t1"]), helper.make_node("Add", ["t1", "one"], ["t2"])],
        "then", [], [tensor_info("t2", [1, 8])])
    else_branch = helper.make_graph(
        [helper.make_node("If", ["flag"], ["e3"], then_branch=inner_then, else_branch=inner_else)],
        "else", [], [tensor_info("e3", [1, 8])])
    graph = helper.make_graph(
        [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
         helper.make_node("Greater", ["s", "zero"], ["cond"]),
         helper.make_node("If", ["cond"], ["y"], then_branch=then_branch, else_branch=else_branch)],
        "if_subgraphs", [tensor_info("x", [1, 8])], [tensor_info("y", [1, 8])],
        [numpy_helper.from_array(np.array(2.0, np.float32), "two"), numpy_helper.from_array(np.array(1.0, np.float32), "one"),
         numpy_helper.from_array(np.array(0.0, np.float32), "zero"), numpy_helper.from_array(np.array(True), "flag")])
    return finish(graph)


def tiny_seed_models():
    """{name: ModelProto}: five small valid opset-17 models, seeded weights."""
    rng = np.random.default_rng(0)
    builders = (conv_relu_pool_model, matmul_add_softmax_model, concat_reshape_transpose_model,
                gemm_mlp_model, if_subgraphs_model)
    return {b.__name__.removesuffix("_model"): b(rng) for b in builders}


def check_seed_model(model):
    """onnx.checker (full) and one onnxruntime run on random inputs; raises when either fails."""
    import onnxruntime as ort

    onnx.checker.check_model(model, full_check=True)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feed = {i.name: rng.standard_normal([d if isinstance(d, int) else 1 for d in i.shape]).astype(np.float32)
            for i in sess.get_inputs()}
    sess.run(None, feed)


def write_tiny_seeds(folder, check=False):
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, model in tiny_seed_models().items():
        if check:
            check_seed_model(model)
        path = folder / f"{name}.onnx"
        path.write_bytes(model.SerializeToString())
        paths.append(path)
    return paths


def write_mutant(mutant, folder, name="model.onnx"):
    """The mutant as folder/name, with its side files next to it."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(mutant.data)
    for side, data in mutant.side_files.items():
        (folder / side).write_bytes(data)
    return folder / name


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    seeds = sub.add_parser("write-seeds", help="write the tiny seed models")
    seeds.add_argument("folder", type=Path)
    seeds.add_argument("--check", action="store_true", help="check each with onnx.checker and onnxruntime")
    mut = sub.add_parser("mutate", help="write mutants of one model, each in its own folder")
    mut.add_argument("model", type=Path)
    mut.add_argument("--out", type=Path, required=True)
    mut.add_argument("--seed", type=int, default=0)
    mut.add_argument("--count", type=int, default=10, help="mutants")
    mut.add_argument("--mutations", type=int, default=2, help="mutations per mutant")
    args = parser.parse_args()

    if args.command == "write-seeds":
        for path in write_tiny_seeds(args.folder, args.check):
            print(path)
        return 0
    seed_bytes = args.model.read_bytes()
    types = value_types(onnx.load_from_string(seed_bytes))
    for k in range(args.count):
        mutant = mutate(seed_bytes, random.Random(args.seed * 1_000_003 + k), args.mutations, types=types)
        folder = args.out / f"mutant_{k:04d}"
        write_mutant(mutant, folder)
        (folder / "mutations.json").write_text(json.dumps(mutant.mutations, indent=1))
        print(folder, mutant.kinds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
