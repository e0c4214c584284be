"""The ``/metrics`` page a vLLM release would serve, made from that release's own metric definitions (test tooling).

``metric_definitions(tree)`` reads ``vllm/v1/metrics/loggers.py`` and ``vllm/v1/spec_decode/metrics.py`` of a
release tree (``specdraft.testbed.release_tree``) with ``ast``: each metric watch reads, its Prometheus type and its
label names, as the release declares them. ``render_page(definitions, engines)`` registers exactly those metrics
with prometheus_client (what vLLM itself uses) and returns its text exposition, so a counter appears as vLLM's does
(``NAME_total`` and ``NAME_created``, ``# TYPE`` lines). Releases whose pages are the same share one file,
``tests/watch/data/vllm-FIRST..LAST.metrics.txt``: ``python -m tests.watch.release_metrics`` rewrites them and
``test_release_pages`` re-derives them from the sources.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

RELEASES = ("0.19.0", "0.19.1", "0.20.0", "0.20.1", "0.20.2", "0.21.0", "0.22.0", "0.22.1", "0.23.0", "0.24.0",
            "0.25.0", "0.25.1", "0.26.0", "0.27.0", "0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0",
            "0.33.0")
DATA = Path(__file__).parent / "data"
ENGINE_METRICS = ("vllm:num_requests_running", "vllm:generation_tokens")
SPEC_PREFIX = "vllm:spec_decode_"


@dataclass(frozen=True)
class MetricDefinition:
    name: str
    kind: str
    """``counter`` or ``gauge``."""
    labelnames: tuple[str, ...]


def _engine_labelnames(loggers: ast.Module) -> tuple[str, ...]:
    """The ``labelnames = [...]`` list PrometheusStatLogger gives every per-engine metric."""
    for node in ast.walk(loggers):
        if (isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["labelnames"]
                and isinstance(node.value, ast.List)):
            return tuple(ast.literal_eval(node.value))
    raise ValueError("no labelnames list in loggers.py")


def _kind(call: ast.Call) -> str:
    func = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
    return "counter" if "counter" in func.lower() else "gauge" if "gauge" in func.lower() else func


def metric_definitions(tree: Path) -> dict[str, MetricDefinition]:
    """The metrics watch reads, as the release at ``tree`` defines them."""
    loggers = ast.parse((tree / "vllm/v1/metrics/loggers.py").read_text())
    labelnames = _engine_labelnames(loggers)
    found: dict[str, MetricDefinition] = {}
    for node in ast.walk(loggers):
        if isinstance(node, ast.Call):
            name = next((k.value.value for k in node.keywords if k.arg == "name"
                         and isinstance(k.value, ast.Constant)), None)
            if name in ENGINE_METRICS:
                labels = next(k.value for k in node.keywords if k.arg == "labelnames")
                assert isinstance(labels, ast.Name) and labels.id == "labelnames", ast.dump(labels)
                found[name] = MetricDefinition(name, _kind(node), labelnames)
    source = (tree / "vllm/v1/spec_decode/metrics.py").read_text()
    spec = ast.parse(source)
    # SpecDecodingProm creates every counter with its class's ``_counter_cls`` and the logger's label names; the
    # per-position one adds ``position``.
    assert any(isinstance(n, ast.Assign) and getattr(n.targets[0], "attr", getattr(n.targets[0], "id", "")) ==
               "_counter_cls" and "Counter" in ast.unparse(n.value) for n in ast.walk(spec))
    assert 'labelnames + ["position"]' in source
    names = sorted({n.value for n in ast.walk(spec) if isinstance(n, ast.Constant) and isinstance(n.value, str)
                    and n.value.startswith(SPEC_PREFIX) and n.value.replace(":", "_").isidentifier()})
    for name in names:
        per_position = name.endswith("_per_pos")
        found[name] = MetricDefinition(name, "counter", labelnames + (("position",) if per_position else ()))
    return found


# Per engine (data-parallel rank): drafts, draft tokens, accepted, accepted per position, generated, running.
ENGINES = {"0": (100, 300, 210, (90, 70, 50), 340, 2), "1": (60, 180, 120, (50, 40, 30), 200, 1)}
MODEL = "google/gemma-4-31B-it"


def render_page(definitions: dict[str, MetricDefinition], engines=ENGINES, model: str = MODEL) -> str:
    """The Prometheus text of ``definitions`` with ``engines``' counts, as vLLM's prometheus_client writes it."""
    registry = CollectorRegistry()
    metrics = {d.name: (Counter if d.kind == "counter" else Gauge)(d.name, d.name, list(d.labelnames),
                                                                    registry=registry)
               for d in definitions.values()}
    for engine, (drafts, draft_tokens, accepted, per_position, generated, running) in engines.items():
        values = {"vllm:spec_decode_num_drafts": drafts, "vllm:spec_decode_num_draft_tokens": draft_tokens,
                  "vllm:spec_decode_num_accepted_tokens": accepted, "vllm:generation_tokens": generated}
        for name, metric in metrics.items():
            labels = {"model_name": model, "engine": engine}
            if name.endswith("_per_pos"):
                for position, count in enumerate(per_position):
                    metric.labels(**labels, position=str(position)).inc(count)
            elif name == "vllm:num_requests_running":
                metric.labels(**labels).set(running)
            else:
                metric.labels(**labels).inc(values[name])
    # _created holds the wall-clock time the counter was made: pinned so the page is the same every time.
    lines = [line if "_created{" not in line else line.rsplit(" ", 1)[0] + " 1.7e+09"
             for line in generate_latest(registry).decode().splitlines()]
    return "\n".join(lines) + "\n"


def pages(trees) -> dict[str, str]:
    """File name -> page, releases with the same page sharing one file (``trees``: version -> release tree)."""
    by_page: dict[str, list[str]] = {}
    for version in RELEASES:
        by_page.setdefault(render_page(metric_definitions(trees(version))), []).append(version)
    return {f"vllm-{versions[0]}..{versions[-1]}.metrics.txt": page for page, versions in by_page.items()}


if __name__ == "__main__":
    from tools.release_trees import release_tree

    for name, page in pages(release_tree).items():
        (DATA / name).write_text(page)
        print(DATA / name)
