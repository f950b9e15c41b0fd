#!/usr/bin/env python3
"""What `inferopt optimize -O2` accepts, against what onnxruntime makes of the result.

MUTANTS mutants (fixed seed, 1-2 mutations each, tests/fuzz/model_mutator.py) of the tiny seed
models and a few small corpus files go through `inferopt optimize -O2` under the CLI's
contract for bad input (tests/fuzz/cli_contract.py): exit 0 with a model written, or exit 2
with one `inferopt: error:` line, nothing left behind, the input untouched. Every model we
write must load in onnxruntime (running it on random inputs may fail on the data; that is
counted, not failed).

Also counted, not failed: mutants we accept whose input onnxruntime refuses (we are more
lenient than onnxruntime there, or onnxruntime is stricter than the spec).

Fails when any contract break happens or onnxruntime refuses any model we wrote.

  acceptance_differential_test.py --cli build/bin/inferopt --corpus tests/models/corpus \\
      --work build/acceptance_differential_work [--mutants 150] [--seed 20240601]
"""

import argparse
import random
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fuzz"))

import onnx  # noqa: E402

import cli_contract  # noqa: E402
import model_mutator  # noqa: E402
from ort_probe import OrtProbe  # noqa: E402

MUTANTS = 150
SEED = 20240601
CORPUS_SEEDS = ("regnet_ts", "densenet_ts", "shufflenet_v2_ts")  # the smallest files (< 100 KB)
SUBCOMMAND = "optimize_O2"
TIMEOUT_S = 20
MEMORY_MB = 4096


def seed_models(corpus, work):
    """[(name, bytes, value types)]: the tiny seeds, then the corpus files that exist."""
    paths = model_mutator.write_tiny_seeds(work / "seeds")
    paths += [corpus / f"{name}.onnx" for name in CORPUS_SEEDS if (corpus / f"{name}.onnx").exists()]
    seeds = []
    for path in paths:
        data = path.read_bytes()
        seeds.append((path.stem, data, model_mutator.value_types(onnx.load_from_string(data))))
    return seeds


def mutants(seeds, count, seed):
    """(index, seed name, Mutant) for `count` mutants, seed models in turn."""
    for k in range(count):
        name, data, types = seeds[k % len(seeds)]
        rng = random.Random(seed * 1_000_003 + k)
        yield k, name, model_mutator.mutate(data, rng, rng.randint(1, 2), types=types)


def describe(k, name, mutant, result):
    kinds = "; ".join(f"{kind}: {detail}" for kind, detail in mutant.mutations)
    stderr = " ".join(result.stderr_tail.split())[-300:]
    ort = f" ort: {result.ort['error']}" if result.ort and result.ort.get("error") else ""
    return f"mutant {k} of {name} [{kinds}] -> {result.outcome} (rc {result.rc}) {stderr}{ort}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cli", required=True, type=Path, help="the inferopt binary")
    parser.add_argument("--corpus", required=True, type=Path, help="tests/models/corpus")
    parser.add_argument("--work", required=True, type=Path, help="scratch folder (emptied first)")
    parser.add_argument("--mutants", type=int, default=MUTANTS)
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args()
    work = args.work.resolve()
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)

    start = time.monotonic()
    counts = {"mutants": 0, "accepted": 0, "refused": 0, "ort_refused_ours": 0, "contract_breaks": 0,
              "ort_run_failed_data": 0, "accepted_input_ort_refuses": 0}
    failures, lenient = [], []
    with OrtProbe(memory_mb=2 * MEMORY_MB) as probe:
        for k, name, mutant in mutants(seed_models(args.corpus.resolve(), work), args.mutants, args.seed):
            result = cli_contract.check_run(args.cli.resolve(), work / "run", {"model.onnx": mutant.data, **mutant.side_files},
                                            SUBCOMMAND, TIMEOUT_S, MEMORY_MB, probe=probe, probe_input=True)
            counts["mutants"] += 1
            accepted = result.outcome in ("accepted", "ort_run_failed_data", "ort_skipped", "ort_refused")
            counts["accepted"] += accepted
            counts["refused"] += result.outcome == "refused"
            counts["ort_run_failed_data"] += result.outcome == "ort_run_failed_data"
            if result.outcome == "ort_refused":
                counts["ort_refused_ours"] += 1
                failures.append(describe(k, name, mutant, result))
            elif result.is_break:
                counts["contract_breaks"] += 1
                failures.append(describe(k, name, mutant, result))
            if accepted and result.input_ort and result.input_ort["load"] not in ("ok", "skipped"):
                counts["accepted_input_ort_refuses"] += 1
                lenient.append(f"mutant {k} of {name} [{', '.join(mutant.kinds)}]: {result.input_ort['error'][:200]}")
    shutil.rmtree(work / "run", ignore_errors=True)

    for key, value in counts.items():
        print(f"{key:<28}{value:>6}")
    if lenient:
        print("\naccepted, though onnxruntime refuses the input (not a failure):")
        print("\n".join(f"  {line}" for line in lenient))
    if failures:
        print("\nfailures:")
        print("\n".join(f"  {line}" for line in failures))
    print(f"\n{counts['mutants']} mutants in {time.monotonic() - start:.0f} s: "
          f"{'FAIL' if failures else 'PASS'} ({len(failures)} failures)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
