#!/usr/bin/env python3
"""Speedup-vs-sparsity plot and table from sparse_bsr_bench's JSON output.

    sparse_bsr_bench --benchmark_out=bsr.json --benchmark_out_format=json
    python3 benchmarks/sparse/plot_speedup.py bsr.json -o docs/sparse_cpu_speedup.svg

Plots the speedup of BM_bsr_gemm over the strongest dense baseline (`speedup_vs_best_dense`;
`speedup_vs_dense` for runs that lack it) against sparsity: one panel per shape, one row of
panels per thread count (1 and 2), one line per block size, with the ideal 1 / (1 - sparsity)
and the 2.5x goal. Uses matplotlib when it is installed and writes the SVG by hand otherwise.
Prints Markdown tables to stdout: the goal cells (75%, 16x16 and 32x32) against each
baseline, then per thread count and baseline the ratios and the break-even sparsity per block
size.
"""

import argparse
import json
import sys
from collections import defaultdict

SHAPES = {0: "1024 x 1024 x 1024", 1: "BERT FFN up (128 x 768 -> 3072)", 2: "BERT FFN down (128 x 3072 -> 768)"}
COLORS = {4: "#1b9e77", 8: "#d95f02", 16: "#7570b3", 32: "#e7298a"}
GOAL = 2.5
BASELINES = [("speedup_vs_best_dense", "the faster Eigen dense"), ("speedup_vs_dense_avx512", "Eigen dense AVX-512"),
             ("speedup_vs_dense", "Eigen dense AVX2")]


def plotted_key(data):
    """The strongest-baseline ratio, or the AVX2 one for runs made before it existed."""
    runs = [r for sh in data.values() for b in sh.values() for r in b.values()]
    return "speedup_vs_best_dense" if all("speedup_vs_best_dense" in r for r in runs) else "speedup_vs_dense"


def parse_args_of(name):
    """'BM_bsr_gemm/shape:0/sparsity:75/block:16/threads:1/manual_time' -> dict."""
    out = {}
    for part in name.split("/")[1:]:
        if ":" in part:
            key, value = part.split(":", 1)
            out[key] = int(value)
    return out


def load(path, benchmark="BM_bsr_gemm", threads=1):
    """{shape: {block: {sparsity: run}}} for one benchmark and thread count."""
    with open(path) as f:
        doc = json.load(f)
    data = defaultdict(lambda: defaultdict(dict))
    for run in doc["benchmarks"]:
        if run.get("run_type", "iteration") != "iteration" or "error_occurred" in run:
            continue
        if run["name"].split("/")[0] != benchmark:
            continue
        a = parse_args_of(run["name"])
        if a.get("threads") != threads:
            continue
        data[a["shape"]][a["block"]][a["sparsity"]] = run
    return doc.get("context", {}), data


def break_even(points):
    """Sparsity (percent) where the speedup is 1, and how it was found.

    Between two measured points it interpolates linearly. Below the lowest measured sparsity
    it extrapolates from that point, assuming the candidate's time is proportional to the
    stored blocks: speedup(s) = e / (1 - s), so e = speedup * (1 - s) and 1 = e / (1 - s*).
    """
    xs = sorted(points)
    for lo, hi in zip(xs, xs[1:]):
        if points[lo] < 1.0 <= points[hi]:
            t = (1.0 - points[lo]) / (points[hi] - points[lo])
            return lo + t * (hi - lo), "interpolated"
    if points[xs[0]] >= 1.0:
        efficiency = points[xs[0]] * (1.0 - xs[0] / 100.0)
        return max(0.0, 100.0 * (1.0 - efficiency)), "extrapolated"
    return None, "above the highest measured sparsity"


def table(data, key="speedup_vs_dense", with_break_even=True):
    lines = []
    sparsities = sorted({s for shape in data.values() for block in shape.values() for s in block})
    header = "| shape | block | " + " | ".join(f"{s}%" for s in sparsities) + " |"
    lines.append(header + (" break-even |" if with_break_even else ""))
    lines.append("|" + "---|" * (2 + len(sparsities) + (1 if with_break_even else 0)))
    for shape_id in sorted(data):
        for block in sorted(data[shape_id]):
            runs = data[shape_id][block]
            cells = [f"{runs[s][key]:.2f}x" if s in runs and key in runs[s] else "-" for s in sparsities]
            row = f"| {SHAPES[shape_id]} | {block}x{block} | " + " | ".join(cells) + " |"
            if with_break_even:
                be, how = break_even({s: runs[s][key] for s in runs if key in runs[s]})
                row += f" ~{be:.0f}% ({how}) |" if be is not None else f" {how} |"
            lines.append(row)
    return "\n".join(lines)


def plot_matplotlib(by_threads, key, out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shapes = sorted({shape_id for data in by_threads.values() for shape_id in data})
    fig, axes = plt.subplots(len(by_threads), len(shapes), figsize=(5 * len(shapes), 4 * len(by_threads)),
                             sharey=True, squeeze=False)
    for row, threads in zip(axes, sorted(by_threads)):
        data = by_threads[threads]
        for ax, shape_id in zip(row, shapes):
            for block in sorted(data.get(shape_id, {})):
                runs = data[shape_id][block]
                xs = sorted(runs)
                ax.plot(xs, [runs[s][key] for s in xs], "o-", color=COLORS.get(block), label=f"{block}x{block}")
            ideal = [s / 2 for s in range(80, 181)]
            ax.plot(ideal, [1 / (1 - s / 100) for s in ideal], ":", color="gray", label="ideal 1/(1-s)")
            ax.axhline(GOAL, color="red", linestyle="--", linewidth=1, label="goal 2.5x")
            ax.axhline(1.0, color="black", linewidth=0.8)
            ax.set_title(f"{SHAPES[shape_id]}, {threads} thread{'s' if threads > 1 else ''}", fontsize=10)
            ax.set_xlabel("block sparsity (%)")
            ax.set_ylim(0, 11)
        row[0].set_ylabel(f"speedup vs {dict(BASELINES)[key]}")
    axes[0][-1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, format="svg")


def plot_svg(by_threads, key, out):
    """The same figure as plot_matplotlib, written as plain SVG."""
    panel_w, panel_h, left, top, bottom, gap = 330, 260, 60, 40, 50, 40
    x_min, x_max, y_max = 40.0, 95.0, 11.0
    shapes = sorted({shape_id for data in by_threads.values() for shape_id in data})
    width = left + len(shapes) * (panel_w + 20) + 130
    height = top + len(by_threads) * (panel_h + bottom + gap) - gap
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
    ]

    def sx(x0, s):
        return x0 + (s - x_min) / (x_max - x_min) * panel_w

    for row, threads in enumerate(sorted(by_threads)):
        data = by_threads[threads]
        y0 = top + row * (panel_h + bottom + gap)

        def sy(v):
            return y0 + panel_h - min(v, y_max) / y_max * panel_h

        for i, shape_id in enumerate(shapes):
            x0 = left + i * (panel_w + 20)
            title = f"{SHAPES[shape_id]}, {threads} thread{'s' if threads > 1 else ''}"
            parts.append(f'<rect x="{x0}" y="{y0}" width="{panel_w}" height="{panel_h}" fill="none" stroke="black"/>')
            parts.append(f'<text x="{x0 + panel_w / 2}" y="{y0 - 10}" text-anchor="middle">{title}</text>')
            for s in (50, 60, 70, 80, 90):
                parts.append(f'<text x="{sx(x0, s):.1f}" y="{y0 + panel_h + 15}" text-anchor="middle">{s}</text>')
                parts.append(f'<line x1="{sx(x0, s):.1f}" y1="{y0 + panel_h}" x2="{sx(x0, s):.1f}" '
                             f'y2="{y0 + panel_h + 4}" stroke="black"/>')
            parts.append(f'<text x="{x0 + panel_w / 2}" y="{y0 + panel_h + 32}" text-anchor="middle">'
                         'block sparsity (%)</text>')
            for v in range(0, 11, 2):
                parts.append(f'<line x1="{x0}" y1="{sy(v):.1f}" x2="{x0 + panel_w}" y2="{sy(v):.1f}" '
                             'stroke="#ddd"/>')
                if i == 0:
                    parts.append(f'<text x="{x0 - 6}" y="{sy(v) + 4:.1f}" text-anchor="end">{v}</text>')
            parts.append(f'<line x1="{x0}" y1="{sy(1):.1f}" x2="{x0 + panel_w}" y2="{sy(1):.1f}" stroke="black"/>')
            parts.append(f'<line x1="{x0}" y1="{sy(GOAL):.1f}" x2="{x0 + panel_w}" y2="{sy(GOAL):.1f}" '
                         'stroke="red" stroke-dasharray="6,4"/>')
            ideal = " ".join(f"{sx(x0, s / 2):.1f},{sy(1 / (1 - s / 200)):.1f}" for s in range(80, 191))
            parts.append(f'<polyline points="{ideal}" fill="none" stroke="gray" stroke-dasharray="2,3"/>')
            for block in sorted(data.get(shape_id, {})):
                runs = data[shape_id][block]
                pts = [(sx(x0, s), sy(runs[s][key])) for s in sorted(runs)]
                color = COLORS.get(block, "black")
                parts.append('<polyline points="' + " ".join(f"{x:.1f},{y:.1f}" for x, y in pts) +
                             f'" fill="none" stroke="{color}" stroke-width="2"/>')
                parts.extend(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{color}"/>' for x, y in pts)
        parts.append(f'<text transform="translate(16,{y0 + panel_h / 2}) rotate(-90)" text-anchor="middle">'
                     f'speedup vs {dict(BASELINES)[key]}</text>')
    lx = left + len(shapes) * (panel_w + 20)
    legend = [(f"{b}x{b}", COLORS[b], "") for b in sorted(COLORS)]
    legend += [("ideal 1/(1-s)", "gray", ' stroke-dasharray="2,3"'), ("goal 2.5x", "red", ' stroke-dasharray="6,4"')]
    for j, (label, color, dash) in enumerate(legend):
        y = top + 10 + 18 * j
        parts.append(f'<line x1="{lx}" y1="{y}" x2="{lx + 24}" y2="{y}" stroke="{color}" stroke-width="2"{dash}/>')
        parts.append(f'<text x="{lx + 30}" y="{y + 4}">{label}</text>')
    parts.append("</svg>")
    with open(out, "w") as f:
        f.write("\n".join(parts) + "\n")


def goal_table(by_threads):
    """The goal cells (75%, 16x16 and 32x32) against every baseline, per thread count."""
    keys = [(k, name) for k, name in BASELINES if any(
        k in r for data in by_threads.values() for sh in data.values() for b in sh.values() for r in b.values())]
    lines = ["| shape | block | threads | " + " | ".join(f"vs {name}" for _, name in keys) + " |",
             "|" + "---|" * (3 + len(keys))]
    for threads in sorted(by_threads):
        data = by_threads[threads]
        for shape_id in sorted(data):
            for block in (16, 32):
                run = data[shape_id].get(block, {}).get(75)
                if run is None:
                    continue
                cells = [f"{run[k]:.2f}x" if k in run else "-" for k, _ in keys]
                lines.append(f"| {SHAPES[shape_id]} | {block}x{block} | {threads} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("json", help="sparse_bsr_bench --benchmark_out file")
    parser.add_argument("-o", "--output", default="docs/sparse_cpu_speedup.svg")
    parser.add_argument("--svg-only", action="store_true", help="write the SVG by hand even if matplotlib is there")
    args = parser.parse_args()
    context, _ = load(args.json)
    by_threads = {t: d for t in (1, 2) if (d := load(args.json, threads=t)[1])}
    if 1 not in by_threads:
        sys.exit("no BM_bsr_gemm runs with threads:1 in " + args.json)
    key = plotted_key(by_threads[1])
    try:
        if args.svg_only:
            raise ImportError
        plot_matplotlib(by_threads, key, args.output)
        how = "matplotlib"
    except ImportError:
        plot_svg(by_threads, key, args.output)
        how = "hand-written SVG"
    print(f"<!-- {args.output} ({how}, {key}); run of {context.get('date', '?')} -->")
    print("Goal cells (75%):\n")
    print(goal_table(by_threads))
    for threads, data in sorted(by_threads.items()):
        for k, name in BASELINES:
            if any(k in r for sh in data.values() for b in sh.values() for r in b.values()):
                print(f"\n{k} ({name}), {threads} thread{'s' if threads > 1 else ''}:\n")
                print(table(data, k))
    _, xw = load(args.json, benchmark="BM_bsr_gemm_xw")
    if xw:
        for k, name in BASELINES:
            if any(k in r for sh in xw.values() for b in sh.values() for r in b.values()):
                print(f"\nY = X W (block-column index per call), 1 thread, {k} ({name}):\n")
                print(table(xw, k, with_break_even=False))


if __name__ == "__main__":
    main()
