"""The inferopt CLI's contract for bad input, checked on one run in a scratch folder.

A run happens in SCRATCH with the model in SCRATCH/in/ and outputs asked for in SCRATCH/out/,
the CLI's working directory being SCRATCH, under an address-space limit and a timeout. Its
outcome is one of:

  accepted             exit 0 (or compare's exit 1, "over tolerance"); a model it wrote loads
                       and runs in onnxruntime
  refused              exit 2 and stderr is exactly one line starting "inferopt: error:"
  ort_run_failed_data  accepted, and onnxruntime loads the written model but running it on
                       random inputs fails (often the data: an index out of range); counted,
                       not a break
  ort_skipped          accepted, the written model uses a domain onnxruntime has no kernels
                       for (inferopt.BlockSparseMatMul); not a break

or a break, the first that applies in BREAKS' order (every one that applies is kept in
`flags`).
"""

import hashlib
import os
import resource
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

IN_MODEL = "in/model.onnx"
OUT_MODEL = "out/model.onnx"
ERROR_PREFIX = "inferopt: error:"
TAIL_CHARS = 2000

# name -> (arguments, whether it writes OUT_MODEL). Fewest iterations and one thread where
# a subcommand runs the model: the campaign shares its machine.
SUBCOMMANDS = {
    "inspect": (["inspect", IN_MODEL], False),
    "inspect_json": (["inspect", "--json", IN_MODEL], False),
    "optimize_O1": (["optimize", IN_MODEL, "-o", OUT_MODEL, "-O1"], True),
    "optimize_O2": (["optimize", IN_MODEL, "-o", OUT_MODEL, "-O2"], True),
    "optimize_O3": (["optimize", IN_MODEL, "-o", OUT_MODEL, "-O3"], True),
    "optimize_verify": (["optimize", IN_MODEL, "-o", OUT_MODEL, "-O2", "--verify", "--threads", "1"], True),
    "fp16": (["fp16", IN_MODEL, "-o", OUT_MODEL], True),
    "quantize": (["quantize", IN_MODEL, "-o", OUT_MODEL, "--calib-random", "2", "--threads", "1"], True),
    "run": (["run", IN_MODEL, "--threads", "1"], False),
    "bench": (["bench", IN_MODEL, "--warmup", "0", "--iters", "1", "--threads", "1"], False),
    "compare": (["compare", IN_MODEL, IN_MODEL, "--threads", "1"], False),
    "plan": (["plan", IN_MODEL], False),
    "plan_json": (["plan", "--json", IN_MODEL], False),
    # The seeds' weights are small: without a low --min-size nothing would be rewritten.
    "sparsify": (["sparsify", IN_MODEL, "-o", OUT_MODEL, "--block", "4x4", "--sparsity", "0.5", "--min-size", "64"], True),
    "prune": (["prune", IN_MODEL, "-o", OUT_MODEL, "--ratio", "0.5"], True),
    "convert_13": (["convert", IN_MODEL, "-o", OUT_MODEL, "--opset", "13"], True),
    "convert_18": (["convert", IN_MODEL, "-o", OUT_MODEL, "--opset", "18"], True),
}

NOT_BREAKS = ("accepted", "refused", "ort_run_failed_data", "ort_skipped")
BREAKS = ("crash", "hang", "exit_3", "exit_other", "bad_error_text", "input_modified", "wrote_outside",
          "partial_output", "stray_output", "missing_output", "ort_refused")
OUTCOMES = NOT_BREAKS + BREAKS
# stray_output: out/ holds files besides the model (and its external data) after a success.
# missing_output: exit 0 from a subcommand that writes a model, but no model.
ALLOWED_OUTPUTS = {"model.onnx", "model.onnx.data"}


@dataclass
class RunResult:
    outcome: str
    flags: list                        # every break that applies, in BREAKS' order
    rc: int | None                     # None after a timeout
    stderr_tail: str
    stdout_tail: str
    ort: dict | None = None            # the probe of the written model
    input_ort: dict | None = None      # the probe of the input, when asked for
    notes: list = field(default_factory=list)
    seconds: float = 0.0               # the CLI's wall time

    @property
    def is_break(self):
        return self.outcome in BREAKS


def snapshot(folder):
    """{relative path: sha256} of every file under folder."""
    found = {}
    for root, _, files in os.walk(folder):
        for name in files:
            path = Path(root) / name
            rel = path.relative_to(folder).as_posix()
            try:
                found[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
            except OSError:
                found[rel] = "unreadable"
    return found


def prepare_scratch(scratch, files):
    """An empty scratch folder with `files` ({name: bytes}) in in/ and an empty out/."""
    shutil.rmtree(scratch, ignore_errors=True)
    (scratch / "in").mkdir(parents=True)
    (scratch / "out").mkdir()
    for name, data in files.items():
        (scratch / "in" / name).write_bytes(data)


def limits(memory_mb):
    """preexec_fn: the address-space cap, and no core files."""
    cap = memory_mb << 20

    def apply():
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    return apply


def run_cli(binary, args, scratch, timeout, memory_mb):
    """(rc or None on timeout, stdout, stderr); the whole process group dies on timeout."""
    proc = subprocess.Popen([str(binary), *args], cwd=scratch, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, preexec_fn=limits(memory_mb), start_new_session=True,
                            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "OMP_NUM_THREADS": "1"})
    try:
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, out, err
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return None, out, err


def succeeded(subcommand, rc):
    return rc == 0 or (rc == 1 and subcommand == "compare")


def exit_flags(subcommand, rc, stderr):
    """The break the exit status and stderr show, or None for accepted/refused."""
    if rc is None:
        return "hang"
    if rc < 0:
        return "crash"
    if succeeded(subcommand, rc):
        return None
    if rc == 3:
        return "exit_3"
    if rc != 2:
        return "exit_other"
    lines = stderr.splitlines()
    if len(lines) != 1 or not lines[0].startswith(ERROR_PREFIX):
        return "bad_error_text"
    return None


def file_flags(subcommand, rc, before, after):
    """Breaks in what the run left: input changed, files outside out/, leftovers in out/."""
    flags = []
    ok = succeeded(subcommand, rc)
    if any(after.get(p) != h for p, h in before.items()):
        flags.append("input_modified")
    outside = [p for p in after if p not in before and not p.startswith("out/")]
    if outside:
        flags.append("wrote_outside")
    outputs = [p[len("out/"):] for p in after if p.startswith("out/")]
    if outputs and not ok:
        flags.append("partial_output")
    elif ok and any(p not in ALLOWED_OUTPUTS for p in outputs):
        flags.append("stray_output")
    writes_model = SUBCOMMANDS[subcommand][1]
    if rc == 0 and writes_model and "model.onnx" not in outputs:
        flags.append("missing_output")
    return flags


def tail(text):
    text = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    return text[-TAIL_CHARS:]


def check_run(binary, scratch, files, subcommand, timeout, memory_mb, probe=None, probe_input=False):
    """Runs `subcommand` on files["model.onnx"] (side files next to it) in `scratch` and
    classifies it. With `probe` (an OrtProbe), a model the run wrote is checked in
    onnxruntime; `probe_input` also probes the input of an accepted run."""
    scratch = Path(scratch)
    prepare_scratch(scratch, files)
    before = snapshot(scratch)
    args = SUBCOMMANDS[subcommand][0]
    start = time.monotonic()
    rc, out, err = run_cli(binary, args, scratch, timeout, memory_mb)
    seconds = round(time.monotonic() - start, 3)
    stderr = tail(err)
    flags = [f for f in [exit_flags(subcommand, rc, err.decode("utf-8", "replace"))] if f]
    flags += file_flags(subcommand, rc, before, snapshot(scratch))
    flags = [b for b in BREAKS if b in flags]
    result = RunResult("accepted" if succeeded(subcommand, rc) else "refused", flags, rc, stderr, tail(out),
                       seconds=seconds)
    if result.outcome == "accepted" and not flags and probe is not None:
        judge_written_model(result, scratch, probe, probe_input)
    if result.flags:
        result.outcome = result.flags[0]
    if rc is not None and rc < 0:
        result.notes.append(f"signal {signal.Signals(-rc).name}" if -rc in signal.valid_signals() else f"signal {-rc}")
    return result


def judge_written_model(result, scratch, probe, probe_input):
    """Adds onnxruntime's verdict on the written model (and on the input, when asked)."""
    written = scratch / OUT_MODEL
    if written.exists():
        result.ort = scratch_relative(probe.check(written), scratch)
        if result.ort["load"] == "skipped":
            result.outcome = "ort_skipped"
        elif result.ort["load"] != "ok":
            result.flags.append("ort_refused")
        elif result.ort["run"] != "ok" and result.ort["run"] != "skipped":
            result.outcome = "ort_run_failed_data"
    if probe_input or result.outcome == "ort_run_failed_data" or "ort_refused" in result.flags:
        result.input_ort = scratch_relative(probe.check(scratch / IN_MODEL), scratch)


def scratch_relative(verdict, scratch):
    """onnxruntime names the file in its errors: relative to the scratch folder, reports of
    two campaigns with the same seed compare equal."""
    verdict["error"] = verdict["error"].replace(f"{scratch}/", "")
    return verdict
