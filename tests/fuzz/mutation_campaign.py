#!/usr/bin/env python3
"""A mutation campaign against the inferopt CLI's contract for bad input.

Each run takes a seed model (the --seeds files, plus the tiny seeds of model_mutator unless
--no-tiny-seeds), gives it 1-3 mutations (model_mutator.py), runs one subcommand on it (they
take turns, so each gets the same share; see cli_contract.SUBCOMMANDS) in a fresh scratch
folder under an address-space cap and a timeout, and classifies the run (cli_contract.py):
accepted, refused, or a break (crash, hang, exit_3, exit_other, bad_error_text,
input_modified, wrote_outside, partial_output, stray_output, missing_output, ort_refused).
Models the CLI writes are loaded and run in onnxruntime in a child process.

The runs are fixed by --seed alone (seed model, mutations, subcommand), whatever --jobs.

  mutation_campaign.py --binary build/bin/inferopt --seeds tests/models/corpus/resnet_ts.onnx \\
      --runs 600 --seed 1 --jobs 1 --timeout 20 --memory-mb 4096 --report campaign.json \\
      [--keep-breaks findings/] [--work scratch/]

The report holds totals by outcome, by subcommand x outcome and by mutation kind x outcome,
and every break (seed, mutations, subcommand, arguments, stderr tail, kept repro folder).
With --keep-breaks, each break's folder holds in/ (the mutant and its side files), out/
(whatever the run left there, e.g. the model onnxruntime refused) and break.json; the break
reproduces with `cd FOLDER && inferopt ARGS...`. The exit code is 0 unless --fail-on-break
is given and something broke.
"""

import argparse
import collections
import concurrent.futures
import hashlib
import json
import random
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import onnx

import cli_contract
import model_mutator
from ort_probe import OrtProbe

MAX_MUTATIONS = 3
ORT_MEMORY_FACTOR = 2  # onnxruntime reserves more address space than our CLI for the same model


@dataclass
class RunSpec:
    index: int
    seed_name: str
    subcommand: str
    mutation_seed: int
    mutation_count: int


def plan_runs(seed_names, runs, seed):
    """The campaign's runs: subcommands in turn, seed model and mutations drawn per run."""
    subcommands = list(cli_contract.SUBCOMMANDS)
    specs = []
    for i in range(runs):
        rng = random.Random(seed * 1_000_003 + i)
        specs.append(RunSpec(i, rng.choice(seed_names), subcommands[i % len(subcommands)],
                             rng.randrange(2**63), rng.randint(1, MAX_MUTATIONS)))
    return specs


def load_seeds(paths, tiny, work):
    """{name: bytes} of the seed models: .onnx files and folders of them, then the tiny seeds."""
    seeds = {}
    for path in map(Path, paths):
        files = sorted(path.glob("*.onnx")) if path.is_dir() else [path]
        for f in files:
            seeds[f.stem] = f.read_bytes()
    if tiny:
        for f in model_mutator.write_tiny_seeds(work / "tiny_seeds"):
            seeds[f"tiny_{f.stem}"] = f.read_bytes()
    return seeds


# ---- one run, in a pool worker ----------------------------------------------------------------------

WORKER = {}  # per process: options, seeds, their value types, the onnxruntime probe


def init_worker(options, seeds):
    WORKER.update(options=options, seeds=seeds, types={}, probe=OrtProbe(options["memory_mb"] * ORT_MEMORY_FACTOR))


def seed_types(name):
    """value_types of a seed, computed once per worker."""
    if name not in WORKER["types"]:
        WORKER["types"][name] = model_mutator.value_types(onnx.load_from_string(WORKER["seeds"][name]))
    return WORKER["types"][name]


def execute(spec):
    """Builds the run's mutant, runs it and returns (spec, mutations, result as a dict, kept)."""
    options = WORKER["options"]
    mutant = model_mutator.mutate(WORKER["seeds"][spec.seed_name], random.Random(spec.mutation_seed),
                                  spec.mutation_count, types=seed_types(spec.seed_name))
    scratch = Path(options["work"]) / f"run-{spec.index:05d}"
    files = {"model.onnx": mutant.data, **mutant.side_files}
    result = cli_contract.check_run(options["binary"], scratch, files, spec.subcommand, options["timeout"],
                                    options["memory_mb"], probe=WORKER["probe"])
    kept = keep_break(scratch, spec, mutant, result, options["keep_breaks"]) if result.is_break else None
    shutil.rmtree(scratch, ignore_errors=True)
    return spec, mutant.mutations, asdict(result), kept


def keep_break(scratch, spec, mutant, result, keep_dir):
    """Copies the break's scratch folder (in/, out/) to keep_dir with a break.json."""
    if not keep_dir:
        return None
    folder = Path(keep_dir) / f"{spec.index:05d}-{result.outcome}-{spec.subcommand}"
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(scratch, folder, dirs_exist_ok=True)
    (folder / "break.json").write_text(json.dumps({
        "outcome": result.outcome, "flags": result.flags, "seed": spec.seed_name, "subcommand": spec.subcommand,
        "args": cli_contract.SUBCOMMANDS[spec.subcommand][0], "rc": result.rc, "mutations": mutant.mutations,
        "stderr_tail": result.stderr_tail, "ort": result.ort, "input_ort": result.input_ort,
    }, indent=1))
    return str(folder / cli_contract.IN_MODEL)


# ---- the report ---------------------------------------------------------------------------------------

def nested_counts(pairs):
    table = collections.defaultdict(collections.Counter)
    for row, outcome in pairs:
        table[row][outcome] += 1
    return {row: dict(sorted(counts.items())) for row, counts in sorted(table.items())}


def slowest_runs(results, count=10):
    """The runs the CLI spent longest on (timing varies between campaigns; nothing else does)."""
    ranked = sorted(results, key=lambda item: -item[2]["seconds"])[:count]
    return [{"run": spec.index, "subcommand": spec.subcommand, "seconds": r["seconds"], "outcome": r["outcome"],
             "mutations": [k for k, _ in mutations]} for spec, mutations, r, _ in ranked]


def file_sha256(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def build_report(args, results):
    outcomes = [r["outcome"] for _, _, r, _ in results]
    by_kind = [(kind, r["outcome"]) for _, mutations, r, _ in results for kind in {k for k, _ in mutations}]
    breaks = [{
        "run": spec.index, "seed": spec.seed_name, "subcommand": spec.subcommand,
        "args": cli_contract.SUBCOMMANDS[spec.subcommand][0], "mutations": mutations, "outcome": r["outcome"],
        "flags": r["flags"], "rc": r["rc"], "notes": r["notes"], "stderr_tail": r["stderr_tail"],
        "ort": r["ort"], "input_ort": r["input_ort"], "kept": kept,
    } for spec, mutations, r, kept in results if r["outcome"] in cli_contract.BREAKS]
    data_failures = [{
        "run": spec.index, "seed": spec.seed_name, "subcommand": spec.subcommand, "mutations": mutations,
        "ort_error": r["ort"]["error"], "input_ort": r["input_ort"],
    } for spec, mutations, r, _ in results if r["outcome"] == "ort_run_failed_data"]
    return {
        "config": {"binary": str(args.binary), "binary_sha256": file_sha256(args.binary), "seeds": sorted(args.seed_names), "runs": args.runs, "seed": args.seed,
                   "timeout_s": args.timeout, "memory_mb": args.memory_mb},
        "totals": dict(sorted(collections.Counter(outcomes).items())),
        "breaks_total": len(breaks),
        "by_subcommand": nested_counts((spec.subcommand, r["outcome"]) for spec, _, r, _ in results),
        "by_mutation": nested_counts(by_kind),
        "by_seed": nested_counts((spec.seed_name, r["outcome"]) for spec, _, r, _ in results),
        "breaks": breaks,
        "ort_run_failed_data": data_failures,
        "slowest_runs": slowest_runs(results),
    }


def print_table(title, table, columns):
    width = max([len(title)] + [len(r) for r in table]) + 1
    print(title.ljust(width) + " ".join(c[:14].rjust(14) for c in columns))
    for row, counts in table.items():
        print(row.ljust(width) + " ".join(str(counts.get(c, "")).rjust(14) for c in columns))


def print_summary(report, elapsed):
    totals = report["totals"]
    columns = [o for o in cli_contract.OUTCOMES if o in totals]
    print("outcome totals:")
    for outcome in columns:
        marker = "  BREAK" if outcome in cli_contract.BREAKS else ""
        print(f"  {outcome:<22}{totals[outcome]:>6}{marker}")
    print()
    print_table("subcommand", report["by_subcommand"], columns)
    print()
    print_table("mutation", report["by_mutation"], columns)
    print(f"\n{sum(totals.values())} runs in {elapsed:.0f} s, {report['breaks_total']} breaks")
    for b in report["breaks"]:
        kinds = ",".join(k for k, _ in b["mutations"])
        why = b["ort"]["error"] if b["outcome"] == "ort_refused" else b["stderr_tail"]
        last = (why.strip().splitlines() or [""])[-1][-160:]
        print(f"  run {b['run']} {b['outcome']} {b['subcommand']} [{kinds}] {b['seed']}: {last}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--binary", required=True, type=Path, help="the inferopt CLI")
    parser.add_argument("--seeds", nargs="+", default=[], help="seed .onnx files or folders of them")
    parser.add_argument("--no-tiny-seeds", action="store_true", help="leave out model_mutator's tiny seeds")
    parser.add_argument("--runs", type=int, default=600)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=20, help="seconds per CLI run")
    parser.add_argument("--memory-mb", type=int, default=4096, help="RLIMIT_AS of the CLI")
    parser.add_argument("--report", required=True, type=Path, help="JSON report to write")
    parser.add_argument("--keep-breaks", type=Path, help="copy each break's mutant and outputs here")
    parser.add_argument("--work", type=Path, help="scratch root (default: a temporary folder, removed after)")
    parser.add_argument("--fail-on-break", action="store_true", help="exit 1 when any run breaks the contract")
    args = parser.parse_args()

    work = (args.work or Path(tempfile.mkdtemp(prefix="inferopt-campaign-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    seeds = load_seeds(args.seeds, not args.no_tiny_seeds, work)
    if not seeds:
        parser.error("no seed models")
    args.seed_names = list(seeds)
    if args.keep_breaks:
        args.keep_breaks.mkdir(parents=True, exist_ok=True)
    options = {"binary": str(args.binary.resolve()), "work": str(work), "timeout": args.timeout,
               "memory_mb": args.memory_mb, "keep_breaks": str(args.keep_breaks.resolve()) if args.keep_breaks else None}
    specs = plan_runs(sorted(seeds), args.runs, args.seed)

    start, results = time.monotonic(), []
    with concurrent.futures.ProcessPoolExecutor(max_workers=max(args.jobs, 1), initializer=init_worker,
                                                initargs=(options, seeds)) as pool:
        for result in pool.map(execute, specs, chunksize=1):
            results.append(result)
            if len(results) % 50 == 0:
                elapsed = time.monotonic() - start
                print(f"... {len(results)}/{len(specs)} runs, {elapsed:.0f} s", file=sys.stderr, flush=True)
    report = build_report(args, results)
    args.report.parent.mkdir(parents=True, exist_ok=True)
    args.report.write_text(json.dumps(report, indent=1))
    print_summary(report, time.monotonic() - start)
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if args.fail_on_break and report["breaks_total"] else 0


if __name__ == "__main__":
    sys.exit(main())
