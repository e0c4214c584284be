"""From a launch request to a complete plan: facts, then decisions, then flags, then checks.

``build_launch_plan`` runs the steps in order: ``gather_facts`` (``facts.launch_facts``: the only step that
reads files), ``decide`` (``decisions.decide``), the flag rules (``flags.serve_flags``), and the checks
(``checks.pair`` for the pair, ``checks.command`` for the command). It never imports vllm, torch or
transformers and never touches the network.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from specdraft.findings import Finding, worst_level
from specdraft.planning.decisions.async_scheduling import AsyncSchedulingDecision
from specdraft.checkpoints import Checkpoint
from specdraft.planning.checks.pair import PairFacts, check_pair
from specdraft.planning.decisions.hybrid_kv import HYBRID_FLAG
from specdraft.planning.decisions.decide import Decisions, decide
from specdraft.planning.facts.launch_facts import LaunchFacts, gather_facts, with_hotfix_reports
from specdraft.planning.decisions.k_schedule import KScheduleDecision
from specdraft.planning.decisions.kv_cache import KVCacheChoice
from specdraft.planning.flags.serve_flags import LANGUAGE_MODEL_ONLY, serve_flags
from specdraft.planning.knowledge.gpu_memory import PROFILES, MemoryPlan
from specdraft.planning.facts.method_ranking import MethodRanking
from specdraft.planning.plan.node_commands import CHAT_TEMPLATE_FLAG, NodeCommand, ShippedTemplate, node_commands
from specdraft.planning.decisions.parallelism import ParallelPlan
from specdraft.planning.request import LaunchRequest
from specdraft.planning.checks.command import allow_leaky_template, plan_findings, shape_serve_flags
from specdraft.planning.knowledge.serve_command import ServePlan
from specdraft.planning.knowledge.speculative_config import SpeculativeConfig
from specdraft.planning.facts.chat_template import TemplateChoice
from specdraft.planning.checks.method import method_verdicts
from specdraft.planning.checks.release import plan_verdicts
from specdraft.planning.facts.vllm_install import VllmFacts


class LaunchPlan(BaseModel):
    """The complete, checked plan: what ``--dry-run --json`` prints and what launch executes."""

    model_config = ConfigDict(frozen=True)

    request: LaunchRequest
    """What was asked for."""
    serve: ServePlan
    """The ``vllm serve`` command, every flag with its reason."""
    speculative: SpeculativeConfig | None
    """The object passed as ``--speculative-config``; None: the plan serves the target alone."""
    no_speculation: str | None = None
    """Why the plan serves the target alone (``--method none``, or ``--method auto`` where no K pays); None when
    it speculates."""
    findings: list[Finding]
    """Every check's verdict, in report order; an ``error`` blocks the launch."""
    memory: MemoryPlan | None
    """Weights and KV cache against the profile's GPU."""
    target: Checkpoint
    """The target checkpoint's facts."""
    draft: Checkpoint | None
    """The draft checkpoint's facts (None: the method uses none)."""
    method_ranking: MethodRanking | None = None
    """``--method auto``'s ranking, fastest first, and what it turned away."""
    vllm: VllmFacts
    """The serving vLLM: python, version, distribution, package root, hotfix reports."""
    template: TemplateChoice
    """The chat template passed: path, its variant, the variant the target needs."""
    async_scheduling: AsyncSchedulingDecision
    """Whether the plan passes ``--async-scheduling`` (or ``--no-async-scheduling``), and why."""
    k_schedule: KScheduleDecision
    """K per batch size: the schedule or the one K, and why."""
    parallel: ParallelPlan
    """TP, PP, DP and the draft's TP on the request's GPUs and nodes."""
    kv_cache: KVCacheChoice | None = None
    """The KV dtype and the attention backends the server will run on (predicted or observed), and why."""
    nodes: list[NodeCommand]
    """One command per node, each starting with that node's hotfix step (one entry on a single host)."""
    container_nodes: list[NodeCommand]
    """The same inside a ``vllm/vllm-openai`` container: the container's own vLLM patched, then verified."""

    @property
    def argv(self) -> list[str]:
        return self.serve.argv()

    @property
    def has_errors(self) -> bool:
        return worst_level(self.findings) == "error"

    def to_json_dict(self) -> dict:
        """The object ``launch --dry-run --json`` prints."""
        return {
            "argv": self.argv,
            "command": self.serve.shell_command(),
            "speculative_config": self.speculative.as_dict() if self.speculative is not None else None,
            "no_speculation": self.no_speculation,
            "flags": [flag.model_dump() for flag in self.serve.flags],
            "findings": [finding.model_dump() for finding in self.findings],
            "memory": self.memory.model_dump() if self.memory else None,
            "target": self.target.summary(),
            "draft": self.draft.summary() if self.draft else None,
            "method_ranking": self.method_ranking.model_dump() if self.method_ranking else None,
            "vllm": self.vllm.summary(),
            "template": self.template.summary(),
            "async_scheduling": self.async_scheduling.model_dump(),
            "k_schedule": self.k_schedule.model_dump(mode="json"),
            "parallel": self.parallel.model_dump(),
            "kv_cache": self.kv_cache.model_dump() if self.kv_cache else None,
            "nodes": [{**node.model_dump(), "script": node.script} for node in self.nodes],
            "ok": not self.has_errors,
        }


def _pair_facts(facts: LaunchFacts, decided: Decisions, serve: ServePlan) -> PairFacts:
    """What the pair checks judge: the facts with the values the command passes."""
    quantization = serve.flag("--quantization")
    template = decided.template
    return PairFacts(
        target=facts.target, draft=facts.draft,
        speculative=decided.speculative.config if decided.speculative is not None else None, method=decided.method,
        tensor_parallel_size=decided.parallel.tensor_parallel_size, max_model_len=decided.memory.max_model_len,
        target_quantization=quantization.value if quantization else None,
        hybrid_kv_reason=decided.hybrid_kv_reason, hybrid_kv_kept_on=decided.hybrid_kv_kept_on,
        hybrid_kv_cache_manager_disabled=serve.flag(HYBRID_FLAG) is not None or HYBRID_FLAG in facts.request.extra_args,
        hotfix_mode=facts.request.hotfixes,
        vllm=facts.vllm, template_path=template.path, template_variant=template.variant,
        template_findings=template.findings, template_note=template.note,
        checkpoint_template=template.checkpoint_template,
        language_model_only=serve.flag(LANGUAGE_MODEL_ONLY) is not None
        or LANGUAGE_MODEL_ONLY in facts.request.extra_args,
        compute_capability=PROFILES[facts.request.profile].compute_capability, profile=facts.request.profile,
        traits=decided.traits, expected_context=facts.request.expected_context,
    )


def _node_commands(facts: LaunchFacts, decided: Decisions, serve: ServePlan,
                   in_container: bool = False) -> list[NodeCommand]:
    """Each node checks (or applies) the hotfixes this pairing needs on its own vLLM, then starts; in a
    container specdraft runs as ``python3 -m specdraft`` and always patches the image's fresh vLLM."""
    request = facts.request
    needed = decided.hotfixes
    mode = ("apply" if in_container else request.hotfixes) if needed else "skip"
    flag = serve.flag(CHAT_TEMPLATE_FLAG)
    template = (ShippedTemplate(planned_path=flag.value, text=decided.template.source)
                if flag is not None and flag.value and decided.template.source is not None else None)
    return node_commands(serve.argv(), decided.parallel, hosts=request.host_names, backend=request.multi_node,
                         master_addr=request.master_addr, master_port=request.master_port, hotfixes=mode,
                         only=list(needed), template=template,
                         specdraft=("python3", "-m", "specdraft") if in_container else ("specdraft",),
                         python=None if in_container else request.python)


def build_launch_plan(request: LaunchRequest) -> LaunchPlan:
    """Inspect, decide, check; never raises for an incompatible pair (that is what findings are for)."""
    facts = gather_facts(request)
    decided = decide(facts)
    if decided.speculative is None:  # no drafter is loaded, so none is checked or reported
        facts = facts.model_copy(update={"draft": None})
    flags, flag_findings = shape_serve_flags(serve_flags(facts, decided), facts, decided)
    serve = ServePlan(model=request.target, flags=flags, extra_args=request.extra_args)
    facts = with_hotfix_reports(facts, needed=bool(decided.hotfixes))
    pair = _pair_facts(facts, decided, serve)
    findings = allow_leaky_template(check_pair(pair) + flag_findings + plan_verdicts(facts, decided)
                                    + method_verdicts(facts, decided), facts, decided)
    return LaunchPlan(
        request=request, serve=serve,
        speculative=decided.speculative.config if decided.speculative is not None else None,
        no_speculation=decided.no_speculation,
        findings=findings + plan_findings(facts, decided), memory=decided.memory.plan,
        target=facts.target, draft=facts.draft, method_ranking=facts.ranking, vllm=facts.vllm,
        template=decided.template, async_scheduling=decided.async_scheduling, k_schedule=decided.k_schedule,
        parallel=decided.parallel, kv_cache=decided.kv_cache,
        nodes=_node_commands(facts, decided, serve),
        container_nodes=_node_commands(facts, decided, serve, in_container=True),
    )
