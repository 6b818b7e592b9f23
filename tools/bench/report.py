"""``docs/benchmarks.md``: one section per scale, between markers, rewritten by a run at that
scale; the other scale's section and the text around them stay as they are. Each run's
figures are also kept as JSON beside the document (``benchmarks-<scale>.json``)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

FLOOR_WORDS = {
    "replay": "its SQL replayed",
    "ranking": "the candidates SELECT alone",
    "trivial": "the trivial endpoint",
    "inserts": "memory + source + history INSERTs",
}
NONE = "—"


def start_marker(scale: int) -> str:
    return f"<!-- bench scale={scale} -->"


def end_marker(scale: int) -> str:
    return f"<!-- /bench scale={scale} -->"


def json_path(output: Path, scale: int) -> Path:
    return output.with_name(f"{output.stem}-{scale}.json")


def write(output: Path, results: dict[str, Any]) -> None:
    scale = int(results["scale"])
    json_path(output, scale).write_text(json.dumps(results, indent=2) + "\n")
    section = f"{start_marker(scale)}\n{render(results)}\n{end_marker(scale)}"
    text = output.read_text() if output.exists() else "# Benchmarks\n"
    pattern = re.compile(
        re.escape(start_marker(scale)) + r".*?" + re.escape(end_marker(scale)), re.S
    )
    if pattern.search(text):
        text = pattern.sub(lambda _: section, text)
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    output.write_text(text)


def _ms(value: float | None) -> str:
    if value is None:
        return NONE
    return (
        f"{value:.2f} ms" if value < 10 else f"{value:.1f} ms" if value < 100 else f"{value:.0f} ms"
    )


def _ratio(value: float | None) -> str:
    return NONE if value is None else f"{value:.1f}×"


def _number(value: float | None, unit: str = "") -> str:
    return NONE if value is None else f"{value:,.0f}{unit}"


def _floors(path: dict[str, Any]) -> str:
    cells = [
        f"{FLOOR_WORDS.get(floor['name'], floor['name'])}: {_ms(floor['p50_ms'])} "
        f"({_ratio(floor['ratio'])})"
        for floor in path["floors"]
    ]
    return "; ".join(cells) or NONE


def _layers(path: dict[str, Any]) -> str:
    """Where an in-process request's time goes (``tools.bench.layers``): a regression's layer."""
    shares = path.get("shares") or {}
    if not shares:
        return NONE
    split = " / ".join(f"{shares[layer]:.0f} %" for layer in ("sql", "python", "rendering"))
    return f"{_ms(path.get('in_process_ms'))}: {split}"


def render(results: dict[str, Any]) -> str:
    scale = int(results["scale"])
    machine = results["machine"]
    dataset = results["dataset"]
    options = results["options"]
    sweep = results["sweep"]
    lines = [
        f"## {scale:,} memories",
        "",
        f"Run on {results['date']} ({results['seconds']:.0f} s): {machine['cpu']}, "
        f"{machine['cores']} cores, {machine['memory']}, PostgreSQL {machine['postgresql']}, "
        f"Python {machine['python']}, {machine['os']}; load average "
        f"{machine.get('load average', NONE)} (other work on the machine). gunicorn with "
        f"{options['workers']} sync workers; {options['rounds']} rounds of {options['batch']} "
        "requests a path, each "
        f"followed by its floors; requests per second from a burst of {options['burst']} with "
        f"{options['concurrency']} in flight. Commands: `make bench-data SCALE={scale}`, then "
        "`make bench`.",
        "",
        "Dataset: "
        + ", ".join(f"{dataset[name]:,} {name}" for name in _counted(dataset))
        + f"; built in {dataset['build_seconds']:.0f} s.",
        "",
        "| path | p50 | p99 | requests/s | queries | KiB | floor in the same run, p50 (ratio) "
        "| in-process: SQL / Python / rendering |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for path in results["paths"]:
        lines.append(
            f"| {path['name']} | {_ms(path['p50_ms'])} | {_ms(path['p99_ms'])} | "
            f"{_number(path['rps'])} | {_number(path['queries'])} | "
            f"{NONE if path['kib'] is None else path['kib']} | {_floors(path)} | "
            f"{_layers(path)} |"
        )
    share = NONE if sweep["share"] is None else f"{sweep['share'] * 100:.0f} % of the floor"
    lines.append(
        f"| expiry sweep, in-process (rolled back) | {_number(sweep['rows_per_s'], ' rows/s')} "
        f"| {NONE} | {NONE} | {_number(sweep['queries_per_batch'])} per 500 rows | {NONE} | "
        f"one UPDATE + one history INSERT … SELECT: "
        f"{_number(sweep['floor_rows_per_s'], ' rows/s')} ({share}) | {NONE} |"
    )
    lines += [
        "",
        f"- Peak memory (RSS) of a web worker: {_number(results['web_worker_peak_mib'], ' MiB')}.",
        f"- The sweep task in a Celery worker, on a copy of the database: "
        f"{sweep['worker_rows']:,} rows in {_seconds(sweep['worker_seconds'])} "
        f"({_number(sweep['worker_rows_per_s'], ' rows/s')}, committed and sealed), peak "
        f"memory (RSS) {_number(sweep['worker_peak_mib'], ' MiB')}.",
    ]
    lines += _retrieval(results.get("retrieval") or {})
    failures = [
        f"{path['name']}: {failure}" for path in results["paths"] for failure in path["failures"]
    ] + [f"sweep: {failure}" for failure in sweep["failures"]]
    if failures:
        lines += ["", "Failures in this run:", ""] + [f"- {failure}" for failure in failures]
    return "\n".join(lines)


# The dataset's counts in reading order (its description is kept as jsonb, which sorts keys).
COUNTED = (
    "memories",
    "subjects",
    "memory history",
    "sources",
    "recalls",
    "recall items",
    "conflicts",
    "runs",
    "due for expiry",
)


def _counted(dataset: dict[str, Any]) -> list[str]:
    rest = sorted(set(dataset) - {*COUNTED, "built_at", "build_seconds"})
    return [name for name in COUNTED if name in dataset] + rest


def _seconds(value: float | None) -> str:
    return NONE if value is None else f"{value:.1f} s"


def _retrieval(found: dict[str, Any]) -> list[str]:
    if not found.get("model"):
        return ["- Retrieval: embeddings off, recall ranked by words."]
    return [
        f"- Retrieval with {found['model']}, in-process: recall's ranking "
        f"{_ms(found['hybrid_ms'])} with meaning beside {_ms(found['words_ms'])} by words alone "
        f"({_ratio(found['ratio'])}); the goal's embedding alone {_ms(found['goal_embed_ms'])}; "
        f"one new memory's embedding (in the worker, after the write commits) "
        f"{_ms(found['memory_embed_ms'])}; backfill "
        f"{_number(found['backfill_per_s'], ' memories/s')} ({found['embedded']:,} embedded); "
        f"a process with the model loaded {_number(found['model_rss_mib'], ' MiB')} "
        f"(without it {_number(found['bare_rss_mib'], ' MiB')}).",
    ]
