"""``--expected-context``: what launch's plans served at 1K, 16K and 64K tokens of context
(specdraft/families/data/gemma4.contexts.json) decides the context finding and scales ``--method auto``'s ranking."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from specdraft.checkpoints import inspect_checkpoint
from specdraft.families._contexts import FamilyContexts
from specdraft.families.gemma4 import GEMMA4
from specdraft.planning import LaunchRequest, build_launch_plan
from specdraft.planning.checks.context import check_expected_context
from specdraft.planning.facts.method_ranking import rank_methods

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "benchmarks/gpu/configs"
TARGET_31B = "google/gemma-4-31B-it"


@pytest.fixture(scope="module")
def target():
    return inspect_checkpoint(TARGET_31B)


def _finding(target, method, expected, max_model_len=131072, profile="h200"):
    return check_expected_context(target, method, expected, max_model_len, profile)


def test_the_e2b_draft_is_told_it_loses_to_the_target_alone_at_16k(target):
    finding = _finding(target, "draft_model", 16384)
    assert finding.level == "warning"
    assert ("draft_model served 0.76x of the target alone (1.60x at 1K, 0.76x at 16K, 0.39x at 64K; served with the "
            "E2B draft)") in finding.message
    assert "dflash served 4.47x there" in finding.message
    assert "--method auto --expected-context 16384" in finding.hint


def test_dspark_keeps_its_speedup_at_16k_and_loses_it_at_64k(target):
    assert _finding(target, "dspark", 16384).level == "ok"
    finding = _finding(target, "dspark", 65536)
    assert finding.level == "warning" and "dspark served 1.13x" in finding.message
    assert "dflash served 5.27x there" in finding.message


def test_a_method_that_holds_its_speedup_is_ok_and_a_short_context_says_nothing_new(target):
    assert _finding(target, "mtp", 65536).message.endswith(
        "mtp served 4.71x (4.37x at 1K, 4.12x at 16K, 4.71x at 64K; served with the 31B's MTP assistant)")
    # at 1K the E2B draft trails DFlash, but that is no context question: no warning
    assert _finding(target, "draft_model", 1024).level == "ok"


def test_between_and_past_the_measured_lengths(target):
    between = _finding(target, "dspark", 32768)  # half way in log2 between 16K (3.61x) and 64K (1.13x)
    assert "dspark served 2.37x" in between.message and between.level == "warning"
    past = _finding(target, "mtp", 200000, max_model_len=262144)
    assert "past the longest length served: its figure" in past.message and "4.71x" in past.message
    assert "measured on H200, not h100" in _finding(target, "mtp", 65536, profile="h100").message


def test_without_the_flag_only_a_method_measured_to_lose_is_pointed_out(target):
    finding = _finding(target, "draft_model", None)
    assert finding.level == "info" and "slower than the target alone from 16K tokens" in finding.message
    assert finding.hint == "if requests carry long prompts or histories, pass --expected-context TOKENS"
    assert _finding(target, "mtp", None) is None and _finding(target, "none", None) is None


def test_a_method_never_served_at_long_contexts_says_the_plan_does_not_account_for_it(target):
    finding = _finding(target, "eagle3", 65536)
    assert finding.level == "info" and "does not account for 65536 tokens" in finding.message


def test_an_expected_context_past_the_planned_max_model_len_is_an_error(target):
    finding = _finding(target, "mtp", 200000, max_model_len=122880)
    assert finding.level == "error" and "200000 tokens of expected context do not fit" in finding.message
    assert _finding(target, "none", 200000, max_model_len=122880).level == "error"


def test_the_request_refuses_a_context_past_its_own_max_model_len_and_a_non_positive_one():
    with pytest.raises(ValidationError, match="65536 tokens do not fit --max-model-len 32768"):
        LaunchRequest(target=TARGET_31B, expected_context=65536, max_model_len=32768)
    with pytest.raises(ValidationError):
        LaunchRequest(target=TARGET_31B, expected_context=0)


def test_the_cli_refuses_bad_values_in_one_line_without_a_traceback():
    for value in ("0", "lots", "-5"):
        done = subprocess.run([sys.executable, "-m", "specdraft", "launch", "--target", TARGET_31B, "--dry-run",
                               "--expected-context", value], capture_output=True, text=True, cwd=REPO)
        assert done.returncode != 0 and "Traceback" not in done.stderr and "expected" in done.stderr.lower()


def test_the_plan_carries_the_finding():
    plan = build_launch_plan(LaunchRequest(target=TARGET_31B, draft="google/gemma-4-E2B-it", method="draft_model",
                                           profile="h200", expected_context=65536))
    finding = next(f for f in plan.findings if f.check == "expected-context")
    assert finding.level == "warning" and "0.39x" in finding.message


def test_auto_ranks_by_what_each_method_served_at_the_context(target):
    dspark = inspect_checkpoint(str(CONFIGS / "dspark_31b"))
    published = [inspect_checkpoint("google/gemma-4-31B-it-assistant"), inspect_checkpoint(str(CONFIGS / "eagle3_31b"))]
    short = rank_methods(target, [dspark], version="0.26.0", profile="h200", published=published)
    long = rank_methods(target, [dspark], version="0.26.0", profile="h200", published=published, context=65536)
    assert short.chosen.method == "dspark" and short.chosen.context_basis is None
    row = next(r for r in long.ranked if r.method == "dspark")
    assert row.k == 0 and "x 0.26, the share of its short-context speedup" in row.context_basis
    assert long.chosen.method != "dspark"
    downloads = {r.method: r for r in long.to_download}
    assert downloads["mtp"].predicted_speedup > short.to_download[0].predicted_speedup > row.predicted_speedup
    assert "not served at long contexts" in downloads["eagle3"].context_basis


def test_the_table_refuses_a_row_without_one_figure_per_length():
    data = json.loads(GEMMA4.contexts_file.read_text())
    data["sizes"]["31b"]["methods"][0]["decode_tok_s"] = [1.0, 2.0]
    with pytest.raises(ValidationError, match="has 2 figures for 3 lengths"):
        FamilyContexts.model_validate(data)


def test_on_a_dgx_spark_the_h200_rows_point_but_do_not_warn(target):
    finding = _finding(target, "draft_model", 16384, profile="dgx-spark")
    assert finding.level == "info" and "measured on H200, not dgx-spark" in finding.message


def test_a_longer_expected_context_than_the_validated_one_sets_max_model_len_where_it_fits():
    plan = build_launch_plan(LaunchRequest(target=TARGET_31B, draft="google/gemma-4-31B-it-assistant", profile="h200",
                                           expected_context=200000))
    assert plan.serve.flag("--max-model-len").value == "200000"
    assert "the expected context (--expected-context)" in plan.serve.flag("--max-model-len").reason
    past_the_model = build_launch_plan(LaunchRequest(target=TARGET_31B, draft="google/gemma-4-31B-it-assistant",
                                                     profile="h200", expected_context=300000))
    finding = next(f for f in past_the_model.findings if f.check == "expected-context")
    assert finding.level == "error" and "do not fit the planned --max-model-len 262144" in finding.message


def test_beside_the_12b_the_e2b_draft_loses_at_64k_and_the_hint_names_its_assistant():
    twelve = inspect_checkpoint("google/gemma-4-12B-it")
    finding = _finding(twelve, "draft_model", 65536)
    assert finding.level == "warning" and "draft_model served 0.83x" in finding.message
    assert finding.hint.endswith("--draft google/gemma-4-12B-it-assistant")
    assert _finding(twelve, "draft_model", 16384).level == "ok"


def test_the_hint_names_the_published_speculator_of_the_fastest_method(target):
    assert _finding(target, "dspark", 65536).hint.endswith("--draft RedHatAI/gemma-4-31B-it-speculator.dflash")
