"""The KV cache dtype and the attention backend: the shipped per-release table against the real release sources,
the backends it predicts per release, GPU and method, and the plans that follow (bf16 by default, fp8 where the
context does not fit, the MTP + fp8 crash on SM90 fixed and named)."""

import ast
import json
from importlib import resources

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from specdraft.planning.decisions.kv_cache import (
    FA4_CAPABILITY_MAJORS, TRITON, measured_fp8_faster, predict_backends, reported_failure)
from specdraft.planning.facts.vllm_install import FA4_MARKER
from specdraft.planning.knowledge.release_tables import (
    AttentionBackendTable, GpuEvidence, KVDtypeMeasurement, attention_backend_table)
from tests.planning.conftest import RELEASES, assert_every_release_read_once

TABLE = json.loads(resources.files("specdraft.planning").joinpath("data", "attention_backend.json").read_text())
SM90, SM121 = (9, 0), (12, 1)
TARGET, ASSISTANT = "google/gemma-4-31B-it", "google/gemma-4-31B-it-assistant"


def _rule(version: str) -> dict:
    return next(rule for rule in TABLE["rules"] if Version(version) in SpecifierSet(rule["versions"]))


def _node(path, *names: str) -> ast.AST | None:
    """The class or function ``names`` (nested) of the file at ``path``; None where the file or a name is missing."""
    if not path.is_file():
        return None
    node: ast.AST = ast.parse(path.read_text())
    for name in names:
        node = next((child for child in node.body if isinstance(child, (ast.ClassDef, ast.FunctionDef))
                     and child.name == name), None)
        if node is None:
            return None
    return node


def _source(path, *names: str) -> str:
    node = _node(path, *names)
    return ast.unparse(node) if node is not None else ""


def _priorities(cuda: str) -> dict[str, list[str]]:
    """``_get_backend_priorities``'s orders outside MLA, the three backends Gemma 4 can get kept; and the backend
    listed first for a multimodal layer on SM90, if any."""
    function = next(n for n in ast.walk(ast.parse(cuda)) if isinstance(n, ast.FunctionDef)
                    and n.name == "_get_backend_priorities")
    mla = next(n for n in function.body if isinstance(n, ast.If) and ast.unparse(n.test) == "use_mla")
    branch = mla.orelse[0]
    orders, first = {}, None
    for key, body in (("sm100", branch.body), ("other", branch.orelse)):
        returned = next(s for s in body if isinstance(s, ast.Return)).value
        names = []
        for element in returned.elts:
            if isinstance(element, ast.Starred):
                if key == "other" and "major == 9 and use_mm_prefix" in ast.unparse(element):
                    first = element.value.body.elts[0].attr
                continue
            names.append(element.attr)
        orders[key] = [name for name in names if name in ("FLASH_ATTN", "FLASHINFER", TRITON)]
    return {"priorities": orders, "mm_prefix_first_sm90": first}


def test_table_covers_every_release_from_0_19_to_0_33_once():
    assert_every_release_read_once(TABLE["rules"])


@pytest.mark.parametrize("version", RELEASES)
def test_each_release_chooses_gemma4s_backend_as_the_table_says(release, version):
    tree, rule = release(version), _rule(version)
    vllm = tree / "vllm"
    gemma4 = _source(vllm / "model_executor" / "models" / "config.py", "Gemma4Config", "verify_and_update_config")
    forces_triton = "attention_config.backend = AttentionBackendEnum.TRITON_ATTN" in gemma4
    assert forces_triton  # every release forces Triton where FA4 is not taken
    uses_fa4 = "is_fa_version_supported(4)" in gemma4 and "flash_attn_version = 4" in gemma4
    per_layer = "use_per_layer_fa" in gemma4 and "is_device_capability_family(90)" in gemma4 \
        and "cache_dtype.startswith('fp8')" in gemma4
    assert rule["gemma4"] == ("fa4-per-layer-fp8-sm90" if per_layer else "fa4" if uses_fa4 else "triton")

    create = _source(vllm / "v1" / "spec_decode" / "gemma4.py", "Gemma4Proposer", "_create_draft_vllm_config")
    carries = "target_backend = self.vllm_config.attention_config.backend" in create \
        and "if target_backend is not None" in create
    assert rule["mtp_drafter"] == ("target-backend-when-set" if carries else None)
    speculative = _source(vllm / "config" / "speculative.py", "SpeculativeConfig")
    assert rule["draft_attention_backend"] == ("attention_backend: AttentionBackendEnum | None = None" in speculative)
    # where the field exists, every other drafter takes its backend from it alone, not from --attention-backend
    base = _source(vllm / "v1" / "spec_decode" / "llm_base_proposer.py", "SpecDecodeBaseProposer",
                   "_create_draft_vllm_config")
    assert rule["draft_attention_backend"] == ("backend=spec_cfg.attention_backend" in base)


@pytest.mark.parametrize("version", RELEASES)
def test_each_release_takes_an_fp8_kv_cache_where_the_table_says(release, version):
    tree, rule = release(version), _rule(version)
    backends = tree / "vllm" / "v1" / "attention" / "backends"
    fa_utils = (backends / "fa_utils.py").read_text()
    flash = (backends / "flash_attn.py").read_text()
    helper = _source(backends / "fa_utils.py", "flash_attn_supports_kv_cache_dtype") \
        or _source(backends / "fa_utils.py", "flash_attn_supports_fp8") \
        or _source(backends / "flash_attn.py", "FlashAttentionBackend", "supports_kv_cache_dtype")
    places = set()
    if "== 3 and current_platform.is_device_capability_family(90)" in helper or "fa_version == 3 or" in helper:
        places.add("fa3-sm90")
    if "head_size in (None, 512)" in helper:
        places.add("fa4-hd512-sm90")
    if "fa_version == 4 and current_platform.is_device_capability_family(100)" in helper:
        places.add("fa4-sm100")
    assert sorted(places) == sorted(rule["flash_attn_fp8_kv"]), helper
    assert ("SM90 FP8 KV with mm_prefix requires Triton" in flash) == rule["mm_prefix_fp8_sm90_needs_triton"]
    assert "flash_attn_supports_kv_cache_dtype" in fa_utils or "flash_attn_supports_fp8" in fa_utils \
        or "get_flash_attn_version() == 3" in flash
    # TRITON_ATTN (the fix) takes fp8 in every release; FlashInfer never takes a multimodal (mm_prefix) layer
    triton = _node(backends / "triton_attn.py", "TritonAttentionBackend")
    kv_dtypes = next(ast.literal_eval(s.value) for s in triton.body if isinstance(s, ast.AnnAssign)
                     and getattr(s.target, "id", "") == "supported_kv_cache_dtypes")
    assert {"auto", "bfloat16", "fp8"} <= set(kv_dtypes)
    assert "def supports_mm_prefix" not in (backends / "flashinfer.py").read_text()


@pytest.mark.parametrize("version", RELEASES)
def test_each_release_selects_in_the_order_the_table_says(release, version):
    tree, rule = release(version), _rule(version)
    read = _priorities((tree / "vllm" / "platforms" / "cuda.py").read_text())
    assert read == {"priorities": rule["priorities"], "mm_prefix_first_sm90": rule["mm_prefix_first_sm90"]}


@pytest.mark.parametrize("version", RELEASES)
def test_every_release_ships_fa4_and_defines_the_fix(release, version):
    """FA4 is available where its cute interface is there (on 9.x-11.x, so never on the DGX Spark), every wheel
    ships it and asks for FlashInfer and cutlass-dsl, and --attention-backend exists in every release."""
    tree = release(version)
    interface = (tree / "vllm" / "vllm_flash_attn" / "flash_attn_interface.py").read_text()
    assert 'os.path.dirname(__file__), "cute", "interface.py"' in interface
    assert (tree / "vllm" / FA4_MARKER).is_file()
    supported = _source(tree / "vllm" / "vllm_flash_attn" / "flash_attn_interface.py", "_is_fa4_supported")
    families = sorted(int(n) // 10 for n in __import__("re").findall(r"is_device_capability_family\((\d+)\)", supported))
    assert tuple(families) == FA4_CAPABILITY_MAJORS
    metadata = next(tree.glob("vllm-*.dist-info/METADATA")).read_text()
    assert "Requires-Dist: flashinfer-python" in metadata and "Requires-Dist: nvidia-cutlass-dsl" in metadata
    assert '"--attention-backend"' in (tree / "vllm" / "engine" / "arg_utils.py").read_text()


# --- the backends the table predicts, per release, GPU and method ---


def _predict(version, capability=SM90, dtype="fp8", *, fa4=True, multimodal=True, method="mtp", backend=None):
    return predict_backends(attention_backend_table().rule_for(version), capability, kv_cache_dtype=dtype,
                            has_fa4=fa4, multimodal_target=multimodal, method=method, backend=backend)


@pytest.mark.parametrize("version, dtype, target, drafter", [
    ("0.23.0", "fp8", TRITON, TRITON),           # Gemma4Config forces Triton; the assistant inherits it
    ("0.26.0", "auto", "FLASH_ATTN", "FLASH_ATTN"),  # FA4 for every layer
    ("0.26.0", "fp8", TRITON, "FLASHINFER"),     # FA4 takes no fp8 on SM90: the text-only assistant gets FlashInfer
    ("0.29.0", "fp8", TRITON, "FLASHINFER"),
    ("0.30.0", "auto", "TRITON_FLASH_ATTN", "FLASH_ATTN"),
    ("0.31.0", "fp8", TRITON, "FLASH_ATTN"),     # per-layer FA3/FA4 takes fp8 on SM90
])
def test_the_backends_predicted_on_sm90(version, dtype, target, drafter):
    backends = _predict(version, dtype=dtype)
    assert (backends.target, backends.drafter) == (target, drafter)


def test_the_mtp_assistant_on_flashinfer_with_fp8_on_sm90_is_the_reported_crash():
    failures = attention_backend_table().reported_failures
    crash = reported_failure(_predict("0.26.0"), SM90, "fp8", failures)
    assert crash is not None and crash.issues == [48848, 48495]
    assert reported_failure(_predict("0.26.0", dtype="auto"), SM90, "auto", failures) is None
    assert reported_failure(_predict("0.31.0"), SM90, "fp8", failures) is None
    fixed = _predict("0.26.0", backend=TRITON)
    assert (fixed.target, fixed.drafter) == (TRITON, TRITON)
    assert reported_failure(fixed, SM90, "fp8", failures) is None


def test_without_fa4_and_on_the_dgx_spark_gemma4_serves_on_triton():
    assert (_predict("0.26.0", fa4=False).target, _predict("0.26.0", fa4=False).drafter) == (TRITON, TRITON)
    spark = _predict("0.26.0", SM121)
    assert (spark.target, spark.drafter) == (TRITON, TRITON) and "12.x" in spark.basis
    assert _predict("0.26.0", method="eagle3").drafter is None  # speculator heads are not modelled


@pytest.mark.parametrize("version, dtype, multimodal, drafter", [
    ("0.26.0", "fp8", False, "FLASHINFER"),  # what the H200 showed: the draft picks its own backend
    ("0.26.0", "fp8", True, "FLASHINFER"),   # a multimodal target goes to Triton; the draft still picks FlashInfer
    ("0.26.0", "auto", False, "FLASH_ATTN"),
    ("0.20.2", "fp8", True, TRITON),         # before the field, Gemma4Config's Triton reaches the draft too
])
def test_a_gemma4_draft_models_backend_is_predicted_on_sm90(version, dtype, multimodal, drafter):
    assert _predict(version, dtype=dtype, multimodal=multimodal, method="draft_model").drafter == drafter


def test_the_draft_model_on_flashinfer_with_fp8_on_sm90_is_a_failure_the_h200_showed():
    table = attention_backend_table()
    crash = reported_failure(_predict("0.26.0", multimodal=True, method="draft_model"), SM90, "fp8",
                             table.reported_failures)
    assert crash is not None and crash.backend == "FLASHINFER"
    observed = next(row for row in table.gpu_evidence if row.method == "draft_model" and row.kv_cache_dtype == "fp8")
    assert (observed.attention_backend, observed.drafter_attention_backend) == (TRITON, None)
    assert (observed.target, observed.drafter, observed.started) == (TRITON, "FLASHINFER", False)


def test_fp8_is_chosen_for_speed_only_where_a_measurement_says_so():
    shipped = attention_backend_table().kv_dtype_measurements
    assert measured_fp8_faster(shipped, "h200", "mtp") is None and measured_fp8_faster(shipped, "h100", "mtp") is None
    faster = KVDtypeMeasurement(gpu="H200", vllm="0.40.0", attention="FLASH_ATTN", source="test", applies_to=["h200"],
                                rows=[{"plan": "31B + MTP", "method": "mtp", "speedup": {"fp8": 2.9, "auto": 2.7}}])
    assert "2.90x vs 2.70x" in measured_fp8_faster([faster], "h200", "mtp")
    assert measured_fp8_faster([faster], "h100", "mtp") is None


# --- the plans ---


def _plan(release, version="0.26.0", extra=(), **fields):
    from specdraft.planning import LaunchRequest, build_launch_plan

    request = LaunchRequest(target=fields.pop("target", TARGET), draft=fields.pop("draft", ASSISTANT),
                            vllm_root=release(version), extra_args=list(extra), **fields)
    return build_launch_plan(request)


def _finding(plan):
    return next(f for f in plan.findings if f.check == "attention-backend")


@pytest.mark.parametrize("fields", [
    {"profile": "h200"},
    {"profile": "h100", "gpus_per_node": 2},
    {"profile": "h100", "target": "google/gemma-4-26B-A4B-it", "draft": "google/gemma-4-26B-A4B-it-assistant"},
])
def test_bf16_is_the_default_where_the_context_fits(release, empty_hub, fields):
    plan = _plan(release, **fields)
    flag = plan.serve.flag("--kv-cache-dtype")
    assert flag.value == "auto" and "bf16 KV measured faster than fp8 on 2 x H200" in flag.reason
    assert "2.72x vs 2.26x" in flag.reason
    assert plan.serve.flag("--attention-backend") is None
    assert _finding(plan).level == "ok" and "MTP assistant FLASH_ATTN" in _finding(plan).message


def test_fp8_where_the_context_does_not_fit_at_bf16_with_the_crash_fixed_and_named(release, empty_hub):
    plan = _plan(release, profile="h100")  # the 31B on one H100: 128K tokens fit only at fp8
    dtype, backend = plan.serve.flag("--kv-cache-dtype"), plan.serve.flag("--attention-backend")
    assert dtype.value == "fp8" and "131072-token context does not fit h100 at bf16" in dtype.reason
    assert "keeps bf16" in dtype.reason
    assert backend.value == TRITON and "#48848" in backend.reason
    finding = _finding(plan)
    assert finding.level == "warning" and "vLLM #48848, vLLM #48495" in finding.message
    assert "FLASHINFER for the MTP assistant" in finding.message and "--max-model-len that keeps it" in finding.hint
    assert plan.argv[plan.argv.index("--attention-backend") + 1] == TRITON


def test_the_31b_e2b_plans_fp8_reason_quotes_that_pair_served_both_ways(release, empty_hub):
    """The 31B + E2B plan on an H200 takes fp8 for its context; the bf16 it gives up is this pair's own served
    figure (1.38x with bf16 against 1.11x as planned), not the MTP pairs' that other plans quote."""
    plan = _plan(release, profile="h200", draft=E2B)
    flag = plan.serve.flag("--kv-cache-dtype")
    assert flag.value == "fp8" and "131072-token context does not fit h200 at bf16" in flag.reason
    assert "31B + E2B draft, K = 3 1.38x vs 1.11x" in flag.reason and "MTP assistant" not in flag.reason
    beside_26b = _plan(release, profile="h200", target="google/gemma-4-26B-A4B-it", draft=E2B)
    assert "E2B" not in beside_26b.serve.flag("--kv-cache-dtype").reason  # another pair: the general measurement


def test_a_users_fp8_is_kept_and_gets_the_crash_finding_and_the_fix(release, empty_hub):
    plan = _plan(release, profile="h200", kv_cache_dtype="fp8")
    assert plan.serve.flag("--kv-cache-dtype").value == "fp8" and plan.serve.flag("--kv-cache-dtype").reason == "given"
    assert plan.serve.flag("--attention-backend").value == TRITON
    assert "your --kv-cache-dtype fp8" in _finding(plan).message and "--kv-cache-dtype auto" in _finding(plan).hint


def test_a_users_backend_that_still_reaches_flashinfer_is_an_error(release, empty_hub):
    plan = _plan(release, profile="h200", kv_cache_dtype="fp8", extra=["--attention-backend", "FLASHINFER"])
    assert plan.serve.flag("--attention-backend") is None
    finding = _finding(plan)
    assert finding.level == "error" and "--attention-backend FLASHINFER" in finding.message
    ok = _plan(release, profile="h200", kv_cache_dtype="fp8", extra=["--attention-backend=TRITON_ATTN"])
    assert _finding(ok).level == "ok"


def test_a_release_that_keeps_the_assistant_off_flashinfer_needs_no_fix(release, empty_hub):
    plan = _plan(release, "0.31.0", profile="h200", kv_cache_dtype="fp8")
    assert plan.serve.flag("--attention-backend") is None and _finding(plan).level == "ok"


def test_the_dgx_spark_keeps_its_reported_fp8_on_triton_labelled_as_such(release, empty_hub):
    plan = _plan(release, profile="dgx-spark")
    flag = plan.serve.flag("--kv-cache-dtype")
    assert flag.value == "fp8" and "from public reports (not measured by specdraft)" in flag.reason
    assert plan.serve.flag("--attention-backend") is None
    assert "TRITON_ATTN, MTP assistant TRITON_ATTN" in _finding(plan).message
    assert "not run by specdraft on a DGX Spark" in _finding(plan).message


def test_gpu_evidence_replaces_the_prediction(release, empty_hub, monkeypatch):
    """A row of ``gpu_evidence`` (what a real install's engine log showed) decides over the source reading."""
    import specdraft.planning.decisions.kv_cache as kv_cache

    table = attention_backend_table()
    observed = GpuEvidence(profile="h200", vllm="0.31.0", method="mtp", kv_cache_dtype="fp8", target=TRITON,
                           drafter="FLASHINFER", started=False, source="engine log")
    with_evidence = AttentionBackendTable.model_validate(
        {**table.model_dump(), "gpu_evidence": [observed.model_dump()]})
    monkeypatch.setattr(kv_cache, "attention_backend_table", lambda: with_evidence)
    plan = _plan(release, "0.31.0", profile="h200", kv_cache_dtype="fp8")
    assert plan.serve.flag("--attention-backend").value == TRITON
    assert "observed on h200 with vLLM 0.31.0" in plan.serve.flag("--attention-backend").reason


E2B = "google/gemma-4-E2B-it"


def _speculative(plan) -> dict:
    return json.loads(plan.serve.flag("--speculative-config").value)


def test_a_draft_models_fp8_plan_names_triton_for_the_draft_too(release, empty_hub):
    """--attention-backend alone reached the 31B but not its E2B draft on the H200 (the draft then refused to start
    on FlashInfer); the plan names the backend in --speculative-config as well."""
    plan = _plan(release, profile="h200", draft=E2B, kv_cache_dtype="fp8")
    assert plan.serve.flag("--attention-backend").value == TRITON
    assert _speculative(plan)["attention_backend"] == TRITON
    assert "also in --speculative-config" in plan.serve.flag("--attention-backend").reason
    finding = _finding(plan)
    assert finding.level == "warning" and "FLASHINFER for the draft model" in finding.message, finding.message
    assert plan.to_json_dict()["kv_cache"]["drafter_attention_backend"] == TRITON


def test_a_users_backend_reaches_the_draft_model_through_the_speculative_config(release, empty_hub):
    plan = _plan(release, profile="h200", draft=E2B, kv_cache_dtype="fp8", extra=["--attention-backend", TRITON])
    assert _speculative(plan)["attention_backend"] == TRITON and _finding(plan).level == "ok"
    assert "target TRITON_ATTN, draft model TRITON_ATTN" in _finding(plan).message


@pytest.mark.parametrize("fields", [
    {"draft": E2B, "kv_cache_dtype": "auto"},         # bf16: vLLM's own picks serve
    {"kv_cache_dtype": "fp8"},                        # the MTP assistant takes the target's backend itself
    {"draft": E2B, "kv_cache_dtype": "fp8", "version": "0.20.2"},  # no attention_backend field before 0.21.0
])
def test_the_speculative_config_names_no_backend_where_the_drafter_needs_none(release, empty_hub, fields):
    plan = _plan(release, fields.pop("version", "0.26.0"), profile="h200", **fields)
    assert "attention_backend" not in _speculative(plan)


def test_the_json_plan_carries_the_backends_it_expects(release, empty_hub):
    """What the GPU's engine log can be compared with: the backends per model and how they are known."""
    kv_cache = _plan(release, profile="h200", kv_cache_dtype="fp8").to_json_dict()["kv_cache"]
    assert kv_cache["dtype"] == "fp8" and kv_cache["attention_backend"] == TRITON
    assert kv_cache["backends"]["drafter"] == TRITON and kv_cache["failure"]["issues"] == [48848, 48495]
    json.dumps(kv_cache)


def test_the_draft_models_fp8_plan_rests_on_its_served_start_on_an_h200(release, empty_hub):
    """Both models on TRITON_ATTN (the target through --attention-backend, the E2B draft through
    --speculative-config) started and served on 2 x H200; the earlier row, the draft left on FlashInfer, stays as the
    failure that made the plan name the backend twice."""
    rows = [row for row in attention_backend_table().gpu_evidence
            if (row.profile, row.vllm, row.method, row.kv_cache_dtype) == ("h200", "0.26.0", "draft_model", "fp8")]
    assert [(row.drafter_attention_backend, row.drafter, row.started) for row in rows] == [
        (None, "FLASHINFER", False), (TRITON, TRITON, True)]
    plan = _plan(release, profile="h200", draft=E2B, kv_cache_dtype="fp8")
    backends = plan.to_json_dict()["kv_cache"]["backends"]
    assert backends["started"] is True and "real-stack-h200-m4" in backends["basis"], backends
