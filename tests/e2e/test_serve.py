"""`serve_tiny_pair`, through the README's example: a real `vllm serve` of the tiny pair, speculating."""

from __future__ import annotations

import re
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

README = Path(__file__).resolve().parents[2] / "README.md"


def _readme_example() -> str:
    section = README.read_text().split("## Proving the hotfixes (end-to-end)", 1)[1].split("\n## ", 1)[0]
    (example,) = re.findall(r"```python\n(.*?)```", section, re.S)
    return example


def test_readme_example_serves_the_pair_speculating_and_stops_it(tmp_path):
    namespace: dict = {}
    exec(_readme_example().replace("/tmp/my-vllm", str(tmp_path / "my-vllm")), namespace)
    reply, metrics, served = namespace["reply"], namespace["metrics"], namespace["served"]
    drafted = sum(float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines()
                  if line.startswith("vllm:spec_decode_num_draft_tokens_total{"))
    print(f"\ncompletion {reply.choices[0].text!r}; usage {reply.usage}; draft tokens {drafted}")
    assert reply.usage.completion_tokens == 16
    assert drafted > 0
    assert "--speculative-config" in served.log.read_text().splitlines()[0]
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(served.base_url.removesuffix("/v1") + "/health", timeout=5)
    assert namespace["copy"].parent.parent == tmp_path / "my-vllm"
