#!/usr/bin/env python3
"""Writes src/ir/validate/generated_schemas.inc: every operator definition validation checks
nodes against, as calls to the builder in generated_schemas.cpp, grouped per operator so that
only the operators a model uses are ever built:

- ai.onnx, every version up to opset 24, from the `onnx` Python package (1.17 or newer). The
  linked library (libonnx 1.12) knows opset 17 and older, but building its registry costs
  every process that validates a model about 4 MiB of memory for some 600 definitions it
  mostly never reads;
- onnxruntime's own domains (com.microsoft, com.microsoft.nchwc), from the `onnxruntime`
  package: our fusions write their ops, and models exported for onnxruntime use them;
- the one op onnxruntime defines in the ai.onnx domain that its fusions (and ours) write:
  SimplifiedLayerNormalization (RMS norm below opset 23).

Validation then checks models against the schemas onnxruntime loads them with, not a
hand-written copy.

    python scripts/gen_schemas.py > src/ir/validate/generated_schemas.inc
"""

import re
import sys

import onnx
import onnx.defs
import onnxruntime
from onnxruntime.capi import onnxruntime_pybind11_state as ort_schemas

LAST = 24  # the newest opset inferopt reads
RUNTIME_DOMAINS = ("com.microsoft", "com.microsoft.nchwc")
RUNTIME_ONNX_DOMAIN_OPS = ("SimplifiedLayerNormalization",)

# ONNX's element type names, as our data_type enumerators spell them.
ELEMENT_NAMES = {
    "float": "float32", "double": "float64", "bool": "boolean", "uint8": "uint8", "int8": "int8",
    "uint16": "uint16", "int16": "int16", "int32": "int32", "int64": "int64", "string": "string",
    "float16": "float16", "uint32": "uint32", "uint64": "uint64", "complex64": "complex64",
    "complex128": "complex128", "bfloat16": "bfloat16", "float8e4m3fn": "float8e4m3fn",
    "float8e4m3fnuz": "float8e4m3fnuz", "float8e5m2": "float8e5m2", "float8e5m2fnuz": "float8e5m2fnuz",
    "uint4": "uint4", "int4": "int4",
}
# Types past int4 cannot occur: the loader refuses element types it does not represent.
UNREPRESENTED = {"float4e2m1", "float8e8m0", "uint2", "int2"}


def option_name(option):
    """Single, Optional or Variadic, as both packages' enums print them."""
    return str(option).rsplit(".", 1)[-1].lower()


class Formal:
    """A formal parameter as either package describes it."""

    def __init__(self, p):
        self.name = p.name
        self.type_str = getattr(p, "type_str", None) or p.typeStr
        self.option = option_name(p.option)
        self.homogeneous = getattr(p, "is_homogeneous", None)
        if self.homogeneous is None:
            self.homogeneous = p.isHomogeneous
        self.min_arity = getattr(p, "min_arity", 1)  # onnxruntime does not say; its variadics take 1


def split_types(type_strs):
    """The element types of the plain tensors among `type_strs`, and whether any is something
    else (a sequence, optional, map or sparse tensor)."""
    elements, non_tensors = [], False
    for t in sorted(type_strs):
        inner = re.fullmatch(r"tensor\((\w+)\)", t)
        if not inner:
            non_tensors = True
        elif inner.group(1) not in UNREPRESENTED:
            elements.append(ELEMENT_NAMES[inner.group(1)])
    return elements, non_tensors


def formal_call(kind, index, p, literal_types):
    f = Formal(p)
    type_str = f.type_str
    if "(" in type_str:  # a literal type: give it a variable so that one code path reads both
        literal_types[f"{kind}{index}"] = [type_str]
        type_str = f"{kind}{index}"
    return f'.{kind}({index}, "{f.name}", "{type_str}", {f.option}, {str(f.homogeneous).lower()}, {f.min_arity})'


def runtime_deprecation():
    """(domain, op, since) -> whether onnxruntime refuses that definition as deprecated.
    onnxruntime is the judge: it loads GroupNormalization-18, which onnx marks deprecated, and
    refuses Upsample-10 and Scatter-11."""
    return {(s.domain, s.name, s.since_version): s.deprecated for s in ort_schemas.get_all_operator_schema()}


RUNTIME_DEPRECATION = runtime_deprecation()


def deprecated(s):
    return RUNTIME_DEPRECATION.get((s.domain, s.name, s.since_version), getattr(s, "deprecated", False))


def schema_lines(s):
    literal_types = {}
    lines = [f'    d.add(b("{s.domain}", "{s.name}", {s.since_version})']
    lines += ["        " + formal_call("input", i, p, literal_types) for i, p in enumerate(s.inputs)]
    lines += ["        " + formal_call("output", i, p, literal_types) for i, p in enumerate(s.outputs)]
    for a in sorted(s.attributes.values(), key=lambda a: a.name):
        lines.append(f'        .attr("{a.name}", {int(a.type)}, {str(a.required).lower()})')
    constraints = [(c.type_param_str, c.allowed_type_strs) for c in s.type_constraints] + list(literal_types.items())
    for name, types in constraints:
        elements, non_tensors = split_types(types)
        element_list = ", ".join(f"data_type::{t}" for t in elements)
        lines.append(f'        .types("{name}", {{{element_list}}}, {str(non_tensors).lower()})')
    if deprecated(s):
        lines.append("        .deprecated()")
    lines[-1] += ");"
    return lines


def main():
    if tuple(int(x) for x in onnx.__version__.split(".")[:2]) < (1, 17):
        sys.exit(f"onnx {onnx.__version__} is too old: opset {LAST} needs onnx 1.17 or newer")
    onnx_schemas = [s for s in onnx.defs.get_all_schemas_with_history()
                    if s.domain == "" and s.since_version <= LAST]
    runtime_schemas = [s for s in ort_schemas.get_all_operator_schema()
                       if s.domain in RUNTIME_DOMAINS or (s.domain == "" and s.name in RUNTIME_ONNX_DOMAIN_OPS)]
    by_op = {}
    for s in sorted(onnx_schemas + runtime_schemas, key=lambda s: (s.domain, s.name, s.since_version)):
        by_op.setdefault((s.domain, s.name), []).append(s)
    print(f"// Generated by scripts/gen_schemas.py from onnx {onnx.__version__} and onnxruntime "
          f"{onnxruntime.__version__}: do not edit.")
    print(f"// {len(onnx_schemas)} ai.onnx definitions of opsets 1 to {LAST}; "
          f"{len(runtime_schemas)} of onnxruntime ({', '.join(RUNTIME_DOMAINS)}, and ai.onnx "
          f"{', '.join(RUNTIME_ONNX_DOMAIN_OPS)}); {len(by_op)} operators, sorted by domain and name.")
    for (domain, name), versions in by_op.items():
        print(f'{{"{domain}", "{name}", [](op_definitions& d) {{')
        for s in versions:
            print("\n".join(schema_lines(s)))
        print("}},")


if __name__ == "__main__":
    main()
