"""`serve_tiny_pair`: a real `vllm serve` of the tiny pair, speculating, stopped cleanly."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest

from specdraft.testbed import serve_tiny_pair

pytestmark = pytest.mark.e2e


def _metric(base_url: str, name: str) -> float:
    text = urllib.request.urlopen(f"{base_url.removesuffix('/v1')}/metrics", timeout=10).read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name + "{"))


def test_served_pair_speculates_answers_and_stops_with_its_process_group(tiny_pair):
    import openai

    with serve_tiny_pair(pair=tiny_pair, progress=print) as served:
        client = openai.OpenAI(base_url=served.base_url, api_key="unused")
        completion = client.completions.create(model=served.model, prompt="Hello world", max_tokens=16, temperature=0)
        drafted = _metric(served.base_url, "vllm:spec_decode_num_draft_tokens_total")
        print(f"\ncompletion {completion.choices[0].text!r}; usage {completion.usage}; draft tokens {drafted}")
        assert completion.usage.completion_tokens == 16
        assert drafted > 0
        health = f"{served.base_url.removesuffix('/v1')}/health"
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(health, timeout=5)
    assert "--speculative-config" in served.log.read_text().splitlines()[0]
