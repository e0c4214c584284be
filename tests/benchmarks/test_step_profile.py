"""benchmarks/gpu/step_profile.py: a GPU kernel is charged to the phase whose CUDA call launched it."""

import gzip
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks" / "gpu"))
from step_profile import summarize  # noqa: E402


def _scope(name, ts, dur):
    return {"ph": "X", "cat": "user_annotation", "name": f"gpu_model_runner: {name}", "ts": ts, "dur": dur}


def _launch(name, ts, corr, dur=5):
    return {"ph": "X", "cat": "cuda_runtime", "name": name, "ts": ts, "dur": dur, "args": {"correlation": corr}}


def _kernel(ts, dur, corr):
    return {"ph": "X", "cat": "kernel", "name": "k", "ts": ts, "dur": dur, "args": {"correlation": corr}}


def test_steps_run_forward_to_forward_and_gpu_time_goes_to_the_launching_phase(tmp_path):
    events, corr = [], 0
    for step in range(4):  # 10 ms steps: forward launches a 6 ms graph, draft launches two 1 ms kernels late
        t = step * 10_000
        events += [_scope("forward", t, 500), _scope("draft", t + 600, 8_000)]
        corr += 1
        events += [_launch("cudaGraphLaunch", t + 100, corr), _kernel(t + 200, 6_000, corr)]
        for j in range(2):
            corr += 1
            events += [_launch("cuLaunchKernelEx", t + 4_000 + j * 4_000, corr), _kernel(t + 7_000 + j * 1_500, 1_000, corr)]
    events.append(_scope("forward", 40_000, 500))
    path = tmp_path / "t.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump({"traceEvents": events}, f)
    s = summarize(str(path))
    m = s["median_per_step"]
    assert s["n_steps"] == 3  # the first interval is the prefill and is left out
    assert m["wall_ms"] == 10.0 and m["gpu_ms.forward"] == 6.0 and m["gpu_ms.draft"] == 2.0
    assert m["gpu_idle_ms"] == 2.0 and m["cpu_ms.draft"] == 8.0
    assert m["graph_launches.forward"] == 1 and m["kernel_launches.draft"] == 2


def test_a_trace_without_vllm_phase_ranges_says_what_to_set(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": [_kernel(0, 10, 1)]}))
    assert "VLLM_CUSTOM_SCOPES_FOR_PROFILING=1" in summarize(str(path))["error"]
