"""What the ONNX Runtime oracle scripts share: running the inferopt CLI, and running named
checks, each of which passes (with a one-line summary), fails (reported with a short
traceback, then counted) or is skipped for missing data."""

import subprocess
import sys
import time
import traceback


class Skip(Exception):
    """A check that cannot run here (missing data), reported but not failed."""


def run_cli(cli, args, cwd=None):
    """Runs `inferopt ARGS...`; a non-zero exit raises with the command and its stderr."""
    proc = subprocess.run([str(cli), *map(str, args)], cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise AssertionError(
            f"inferopt {' '.join(map(str, args))} exited {proc.returncode}: {proc.stderr.strip()}")
    return proc


def run_checks(checks):
    """Runs the (name, check) pairs in order, one line each; returns the process exit code."""
    passed, failed, skipped = [], [], []
    for name, check in checks:
        start = time.monotonic()
        try:
            summary = check()
        except Skip as s:
            skipped.append(name)
            print(f"SKIP  {name}: {s}")
        except Exception as e:  # noqa: BLE001 - every failure is reported, then counted
            failed.append(name)
            print(f"FAIL  {name}: {type(e).__name__}: {e}")
            traceback.print_exc(limit=3, file=sys.stdout)
        else:
            passed.append(name)
            print(f"PASS  {name}: {summary} ({time.monotonic() - start:.1f} s)")
        sys.stdout.flush()
    print(f"\n{len(passed)} passed, {len(failed)} failed, {len(skipped)} skipped")
    if failed:
        print("failed: " + ", ".join(failed))
    return 1 if failed else 0
