#!/usr/bin/env python3
"""Writes cmake/text_order.txt: the functions of the `inferopt` program that loading, checking
and running models executes, for the linker to place next to each other.

Why: Linux maps a program's code in 64 KiB windows around each page it touches
(fault-around). Loading and running a model executes about 1 MB of the program's 8 MB of
code, spread over most of its windows, so most of the program stays resident. Linked in
this order (lld's --symbol-ordering-file; see CMakeLists.txt), those functions fill a
few windows.

How: runs `inferopt bench` under valgrind's callgrind on each model and lists the mangled
names of the program's functions that executed, the ones more models executed first. Names
the program no longer has are ignored by the linker, so a stale file costs memory, not
correctness; rerun this after large changes to the executor or the loader.

    python scripts/gen_text_order.py --cli build/bin/inferopt [--shared ../shared] > cmake/text_order.txt
"""

import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

# A linker symbol: callgrind also reports addresses and pseudo-functions.
SYMBOL = re.compile(r"[A-Za-z_.$][\w.$@]*")

CORPUS = ["resnet_ts", "convnext_ts", "mobilenet_v3_ts", "efficientnet_ts", "regnet_ts", "bert_ts", "minilm_ts",
          "vit_ts", "resnet_dynamo", "bert_dynamo"]


def executed_functions(callgrind_file, program):
    """Mangled names of the functions of `program` with recorded cost in a callgrind output."""
    # Names are compressed: an id's name comes with its first use, which may be a call
    # (cob=, cfn=) rather than a cost block (ob=, fn=).
    names = {"ob": {}, "fn": {}}
    current = {"ob": None, "fn": None}
    found = set()
    pattern = re.compile(r"^(c?)(ob|fn)=\((\d+)\)(?: (.*))?$")
    with open(callgrind_file, encoding="utf-8", errors="replace") as lines:
        for line in lines:
            m = pattern.match(line)
            if m:
                called, kind, key, name = m.groups()
                if name is not None:
                    names[kind][key] = name
                if not called:
                    current[kind] = names[kind].get(key)
                continue
            if line[:1].isdigit() or line[:1] in "+-*":  # a cost line of the current function
                if current["fn"] and current["ob"] and os.path.realpath(current["ob"]) == program:
                    found.add(current["fn"])
    return {f for f in found if SYMBOL.fullmatch(f)}  # not "0x..." or "(below main)"


def profile(cli, model, workdir):
    out = Path(workdir) / (Path(model).stem + ".callgrind")
    subprocess.run(["valgrind", "--tool=callgrind", "--demangle=no", f"--callgrind-out-file={out}", cli, "bench",
                    str(model), "--threads", "1", "--iters", "1", "--warmup", "1"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return executed_functions(out, os.path.realpath(cli))


def models(args, workdir):
    corpus = Path(args.corpus)
    chosen = [corpus / f"{name}.onnx" for name in CORPUS if (corpus / f"{name}.onnx").exists()]
    light = Path(args.shared) / "models" / "onnx-light" / "light_resnet50.onnx"
    if light.exists():  # ResNet-50 at its real size: the weights folded into initializers
        folded = Path(workdir) / "resnet50.onnx"
        subprocess.run([args.cli, "optimize", str(light), "-o", str(folded), "-O1"], check=True,
                       stdout=subprocess.DEVNULL)
        chosen.append(folded)
    return chosen + [Path(m) for m in args.model]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cli", required=True)
    parser.add_argument("--corpus", default="tests/models/corpus")
    parser.add_argument("--shared", default="../shared")
    parser.add_argument("--model", action="append", default=[], help="another model to profile")
    args = parser.parse_args()
    counts = collections.Counter()
    with tempfile.TemporaryDirectory() as workdir:
        for model in models(args, workdir):
            print(f"profiling {model.name}", file=sys.stderr)
            counts.update(profile(args.cli, model, workdir))
    print(f"{len(counts)} functions", file=sys.stderr)
    for name, _ in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        print(name)


if __name__ == "__main__":
    main()
