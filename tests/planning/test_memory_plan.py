from pathlib import Path

import pytest

from specdraft.planning import PROFILES, inspect_checkpoint, kv_shape, plan_memory

GIB = 2**30


@pytest.fixture
def spark_pair(tmp_path):
    return (inspect_checkpoint("LilaRest/gemma-4-31B-it-NVFP4-turbo", hf_cache=tmp_path),
            inspect_checkpoint("mikeytag/gemma-4-E2B-it-NVFP4", hf_cache=tmp_path))


@pytest.mark.parametrize("repo_id, full, sliding", [
    ("google/gemma-4-E2B-it", 6144, 12288),
    ("google/gemma-4-E4B-it", 16384, 40960),
    ("google/gemma-4-26B-A4B-it", 20480, 204800),
    ("google/gemma-4-31B-it", 81920, 819200),
    ("google/gemma-4-31B-it-assistant", 0, 0),
])
def test_bf16_kv_bytes_per_token_match_the_shape_table(tmp_path, repo_id, full, sliding):
    """KV-shared layers and assistants hold nothing; figures from shared/models/README.md."""
    checkpoint = inspect_checkpoint(repo_id, hf_cache=tmp_path)
    shape = kv_shape(checkpoint, kv_dtype_bytes=2, hybrid_kv_cache_manager=True)
    assert (shape.per_token_bytes, shape.windowed_bytes) == (full, sliding)


def test_sliding_layers_hold_only_the_window_with_the_hybrid_manager(tmp_path):
    e2b = inspect_checkpoint("google/gemma-4-E2B-it", hf_cache=tmp_path)
    shape = kv_shape(e2b, kv_dtype_bytes=2, hybrid_kv_cache_manager=True)
    assert shape.bytes_at(131072) == 6144 * 131072 + 12288 * 512  # 774 MiB in the shape table
    assert round(shape.bytes_at(131072) / 2**20) == 774


def test_disabling_the_hybrid_manager_counts_sliding_layers_in_full(tmp_path):
    checkpoint = inspect_checkpoint("google/gemma-4-31B-it", hf_cache=tmp_path)
    shape = kv_shape(checkpoint, kv_dtype_bytes=2, hybrid_kv_cache_manager=False)
    assert (shape.per_token_bytes, shape.windowed_bytes) == (81920 + 819200, 0)


def test_fp8_kv_halves_the_kv_cache(spark_pair):
    target, draft = spark_pair
    bf16 = plan_memory(target, draft, PROFILES["h200"], max_model_len=65536, kv_cache_dtype="auto")
    fp8 = plan_memory(target, draft, PROFILES["h200"], max_model_len=65536, kv_cache_dtype="fp8")
    assert bf16.kv_bytes_needed == 2 * fp8.kv_bytes_needed


def test_spark_pair_fits_128k_on_dgx_spark(spark_pair):
    plan = plan_memory(*spark_pair, PROFILES["dgx-spark"], max_model_len=131072, gpu_memory_utilization=0.80)
    assert plan.fits and plan.advice == []
    assert plan.kv_bytes_needed == 131072 * (450560 + 9216)  # fp8, every non-shared layer of both models


def test_spark_pair_does_not_fit_128k_on_h100_and_says_what_would(spark_pair):
    plan = plan_memory(*spark_pair, PROFILES["h100"], max_model_len=131072)
    assert not plan.fits
    assert 65536 < plan.max_context_that_fits < 131072 and plan.max_context_that_fits % 1024 == 0
    assert plan.advice[0] == f"--max-model-len {plan.max_context_that_fits} fits at --gpu-memory-utilization 0.90"
    longest = plan_memory(*spark_pair, PROFILES["h100"], max_model_len=plan.max_context_that_fits)
    assert longest.fits
    assert not plan_memory(*spark_pair, PROFILES["h100"], max_model_len=plan.max_context_that_fits + 1024).fits


def test_bf16_kv_that_does_not_fit_suggests_fp8(spark_pair):
    plan = plan_memory(*spark_pair, PROFILES["h100"], max_model_len=131072, kv_cache_dtype="auto")
    assert any(a.startswith("--kv-cache-dtype fp8 halves the KV cache") for a in plan.advice)


def test_longer_utilization_is_suggested_when_it_would_fit(spark_pair):
    plan = plan_memory(*spark_pair, PROFILES["dgx-spark"], max_model_len=131072, gpu_memory_utilization=0.6)
    assert not plan.fits
    suggestion = next(a for a in plan.advice if a.startswith("--gpu-memory-utilization"))
    utilization = float(suggestion.split()[1])
    assert plan_memory(*spark_pair, PROFILES["dgx-spark"], max_model_len=131072,
                       gpu_memory_utilization=utilization).fits


def test_tensor_parallelism_splits_weights_and_kv_across_gpus(spark_pair):
    target, draft = spark_pair
    one = plan_memory(*spark_pair, PROFILES["h100"], max_model_len=131072)
    two = plan_memory(*spark_pair, PROFILES["h100"], max_model_len=131072, tensor_parallel_size=2,
                      draft_tensor_parallel_size=2)
    target_alone = [plan_memory(target, None, PROFILES["h100"], max_model_len=131072, tensor_parallel_size=tp)
                    for tp in (1, 2)]
    assert target_alone[1].kv_bytes_needed == target_alone[0].kv_bytes_needed // 2
    assert two.target_weight_bytes == one.target_weight_bytes // 2
    assert two.fits and not one.fits


def test_a_kv_head_is_replicated_not_split_past_the_tp_size(spark_pair, tmp_path):
    """E2B has one KV head: at TP 2 each rank keeps a copy (vLLM's QKVParallelLinear), so its KV is not halved;
    the 31B's 4 full-layer KV heads at TP 8 are one per rank, twice a naive eighth."""
    draft = spark_pair[1]
    shapes = [kv_shape(draft, kv_dtype_bytes=1, hybrid_kv_cache_manager=False, tensor_parallel_size=tp)
              for tp in (1, 2)]
    assert shapes[1] == shapes[0]
    target = inspect_checkpoint("google/gemma-4-31B-it", hf_cache=tmp_path)
    at_8 = kv_shape(target, kv_dtype_bytes=2, hybrid_kv_cache_manager=True, tensor_parallel_size=8)
    assert (at_8.per_token_bytes, at_8.windowed_bytes) == (81920 // 4, 819200 // 8)


def test_pipeline_stages_split_the_targets_weights_and_kv(spark_pair):
    target = spark_pair[0]
    one, two = (plan_memory(target, None, PROFILES["h100"], max_model_len=65536, pipeline_parallel_size=pp)
                for pp in (1, 2))
    assert (two.target_weight_bytes, two.kv_bytes_needed) == (one.target_weight_bytes // 2, one.kv_bytes_needed // 2)


def test_kv_bytes_per_token_match_what_vllm_allocated_on_an_h200(tmp_path):
    """vLLM 0.26 on an H200 (docs/gpu/raw/run1_h200, run k0): the 31B-shaped target, BF16 KV, hybrid
    manager disabled. Its KV budget divided by our bytes per token must give its token count."""
    import re
    import tarfile
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    with tarfile.open(repo / "docs" / "gpu" / "raw" / "run1_h200" / "logs.tar.xz") as archive:
        log = archive.extractfile("logs/k0.log").read().decode()
    available_gib = float(re.search(r"Available KV cache memory: ([0-9.]+) GiB", log).group(1))
    tokens = int(re.search(r"GPU KV cache size: ([0-9,]+) tokens", log).group(1).replace(",", ""))
    target = inspect_checkpoint(str(repo / "benchmarks" / "gpu" / "configs" / "target31b"))
    shape = kv_shape(target, kv_dtype_bytes=2, hybrid_kv_cache_manager=False)
    predicted = available_gib * GIB / shape.per_token_bytes
    assert abs(predicted - tokens) / tokens < 0.001


RAW = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu" / "raw"
SERVED = (RAW / "real-stack-h200-m3", RAW / "real-stack-h200-m4")
"""Launch's plans served on H200s (vLLM 0.26.0, real kernels): m3 keeps each server's plan and log extract in
``scenarios/``, m4 its plans and full engine logs in ``server-logs-full.tar.gz``."""
CONFIGS = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu" / "configs"


def _plan_and_log(run: Path, safe: str) -> tuple[dict, str]:
    import json
    import tarfile

    if (run / "scenarios").is_dir():
        return (json.loads((run / "scenarios" / f"{safe}.plan.json").read_text()),
                (run / "scenarios" / f"{safe}.backends.txt").read_text())
    with tarfile.open(run / "server-logs-full.tar.gz") as archive:
        return (json.loads(archive.extractfile(f"logs/{safe}.plan.json").read()),
                archive.extractfile(f"logs/{safe}.log").read().decode())


def _served_pairs() -> list[tuple[str, str, str, dict, float]]:
    """(run/scenario, target folder, draft folder, the plan's memory, GiB of KV the engine had) per server that got
    that far."""
    import json
    import re

    pairs = []
    for run in SERVED:
        for line in (run / "rows.jsonl").read_text().splitlines():
            row = json.loads(line)
            if row["alpha"] is None or row["extra"] or row.get("error", "").startswith("plan refused"):
                continue  # a baseline does not load the drafter; tp2 splits the weights; a refusal has no server
            plan, log = _plan_and_log(run, row["scenario"].replace(":", "_"))
            logged = re.search(r"Available KV cache memory: ([0-9.]+) GiB", log)
            if logged:
                pairs.append((f"{run.name}/{row['scenario']}", row["target"], row["draft"], plan["memory"],
                              float(logged.group(1))))
    return pairs


PAIRS = _served_pairs()


def test_both_served_runs_hold_the_31b_e2b_pair_as_planned_and_with_bf16_given():
    assert {scenario for scenario, *_ in PAIRS} >= {"real-stack-h200-m4/t31:e2b:plan:0.85:1",
                                                    "real-stack-h200-m4/t31:e2b:auto:0.85:1"}


@pytest.mark.parametrize("scenario, target, draft, memory, available_gib", PAIRS, ids=[p[0] for p in PAIRS])
def test_the_kv_budget_is_no_more_than_vllm_had_on_an_h200(scenario, target, draft, memory, available_gib):
    """The plan's KV budget for each pair served on an H200 is at most what the engine logged as available (0.5 GiB
    of slack for the estimate); beside the whole E2B draft the profile's reserve alone overshot by 2.1-2.5 GiB, which
    made the 31B + E2B server refuse the context the plan gave it (m3). With the reserve raised, the 31B + E2B plans
    of m4 (fp8 at 122880 tokens, bf16 at 61440) had 53.80 and 53.88 GiB where the plan counts 53.02 GiB."""
    plan = plan_memory(inspect_checkpoint(str(CONFIGS / target)), inspect_checkpoint(str(CONFIGS / draft)),
                       PROFILES["h200"], max_model_len=4096, kv_cache_dtype="auto",
                       hybrid_kv_cache_manager=memory["hybrid_kv_cache_manager"])
    assert plan.kv_budget_bytes / GIB <= available_gib + 0.5, scenario


@pytest.mark.parametrize("scenario, target, draft, memory, available_gib",
                         [p for p in PAIRS if "m4" in p[0]], ids=[p[0] for p in PAIRS if "m4" in p[0]])
def test_the_context_the_plan_gave_fit_in_what_vllm_had(scenario, target, draft, memory, available_gib):
    """The served plan's own figures (its KV dtype and context) against the engine's log: today's plan of the same
    pair gives the same budget, and the KV its context needs fits in what vLLM had."""
    plan = plan_memory(inspect_checkpoint(str(CONFIGS / target)), inspect_checkpoint(str(CONFIGS / draft)),
                       PROFILES["h200"], max_model_len=memory["max_model_len"],
                       kv_cache_dtype=memory["kv_cache_dtype"],
                       hybrid_kv_cache_manager=memory["hybrid_kv_cache_manager"])
    assert plan.kv_budget_bytes == memory["kv_budget_bytes"]
    assert plan.kv_bytes_needed == memory["kv_bytes_needed"] <= available_gib * GIB, scenario


def test_a_whole_draft_model_reserves_more_than_an_mtp_assistant():
    target = inspect_checkpoint(str(CONFIGS / "target31b"))
    with_draft = plan_memory(target, inspect_checkpoint(str(CONFIGS / "draftE2B")), PROFILES["h200"],
                             max_model_len=4096)
    with_assistant = plan_memory(target, inspect_checkpoint(str(CONFIGS / "assistant31b")), PROFILES["h200"],
                                 max_model_len=4096)
    assert with_draft.runtime_reserve_bytes - with_assistant.runtime_reserve_bytes == 3 * GIB
