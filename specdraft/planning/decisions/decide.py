"""Every decision of the plan, each made once by its own module and gathered in ``Decisions`` before any flag is
written: parallel sizes, the speculative config (its method, then K with its schedule) or why there is none, the
hybrid KV manager, memory, KV dtype and attention backend, async scheduling, the MoE backend and the pairing's
traits. A pure function of ``LaunchFacts``.

A plan without speculation (``--method none``, or ``--method auto`` where no K pays) decides everything else as a
speculative plan would, with no drafter: the same memory, KV dtype, attention backend, parallel sizes and template.

Each decision keeps its reason; the flag rules (``flags.serve_flags``) turn them into serve flags.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from specdraft.families import rules_for
from specdraft.patching import CatalogEntry, Trait
from specdraft.planning.decisions.async_scheduling import AsyncSchedulingDecision, decide_async_scheduling
from specdraft.planning.facts.launch_facts import LaunchFacts
from specdraft.planning.decisions.hybrid_kv import HYBRID_FLAG, hybrid_kv_kept_on, hybrid_kv_reason
from specdraft.planning.decisions.k_costs import ModelledCosts, modelled_costs
from specdraft.planning.decisions.kv_cache import KVCacheChoice, decide_kv_cache
from specdraft.planning.decisions.k_schedule import (MAX_K, KScheduleDecision, data_parallel_size_of, decide_k_schedule,
                                            no_k_schedule)
from specdraft.planning.knowledge.methods import NO_SPECULATION
from specdraft.planning.decisions.memory import MemoryChoice, choose_memory
from specdraft.planning.decisions.model_runner import ModelRunnerChoice, model_runner
from specdraft.planning.facts.method_ranking import measured_size
from specdraft.planning.facts.moe_layout import is_moe_target
from specdraft.planning.decisions.moe_backend import MoeBackendChoice, choose_moe_backend
from specdraft.planning.decisions.pairing_traits import hotfixes_needed, pairing_traits
from specdraft.planning.decisions.parallelism import ParallelPlan, plan_parallelism, topology_for
from specdraft.planning.request import LaunchRequest
from specdraft.planning.decisions.k_choice import decide_k
from specdraft.planning.decisions.speculative_method import (SpeculativeChoice, choose_method, choose_speculative,
                                                   no_speculation_reason, resolve_method)
from specdraft.planning.facts.chat_template import TemplateChoice


class Decisions(BaseModel):
    model_config = ConfigDict(frozen=True)

    parallel: ParallelPlan
    speculative: SpeculativeChoice | None
    """The speculative config and why; None: the plan serves the target alone (``no_speculation`` says why)."""
    no_speculation: str | None = None
    """Why the plan serves the target alone; None when it speculates."""
    hybrid_kv_reason: str | None
    """Why ``--disable-hybrid-kv-cache-manager`` is needed; None keeps the hybrid manager on (on Model Runner V2 it
    always stays on: its drafter takes several KV cache groups)."""
    hybrid_kv_kept_on: str | None = None
    """Why the hybrid manager may stay on (None: it goes off, ``hybrid_kv_reason`` says why)."""
    memory: MemoryChoice
    kv_cache: KVCacheChoice
    """``--kv-cache-dtype`` and ``--attention-backend``: the one place both are decided."""
    template: TemplateChoice
    async_scheduling: AsyncSchedulingDecision
    k_schedule: KScheduleDecision
    moe_backend: MoeBackendChoice | None = None
    """``--moe-backend`` for an NVFP4 mixture-of-experts target, with its finding; None for any other target."""
    traits: frozenset[Trait]
    """The pairing's traits as the hotfixes declare them: which hotfixes the plan needs (``hotfixes``)."""

    @property
    def method(self) -> str:
        """The method the server runs: what vLLM resolves the config to, or ``none`` without speculation."""
        return self.speculative.resolved_method if self.speculative is not None else NO_SPECULATION

    @property
    def hotfixes(self) -> dict[str, CatalogEntry]:
        """The hotfixes the pairing needs, by id, in catalog order."""
        return hotfixes_needed(self.traits)


def choose_parallel(request: LaunchRequest, facts: LaunchFacts) -> ParallelPlan:
    """TP, PP, DP and the draft's TP on the request's GPUs and nodes."""
    topology = topology_for(request.profile, nodes=request.nodes, gpus_per_node=request.gpus_per_node)
    return plan_parallelism(topology, facts.target.config, facts.known_draft_config,
                            tensor_parallel_size=request.tensor_parallel_size,
                            pipeline_parallel_size=request.pipeline_parallel_size,
                            data_parallel_size=request.data_parallel_size,
                            draft_tensor_parallel_size=request.draft_tensor_parallel_size)


def _modelled_costs(request: LaunchRequest, facts: LaunchFacts, method: str,
                    parallel: ParallelPlan) -> ModelledCosts | str | None:
    """The shipped step costs per batch size for a launch of several sequences without a load test."""
    if facts.load_test is not None or request.max_num_seqs == 1:
        return None
    return modelled_costs(method, facts.target, profile=request.profile,
                          parallel=(parallel.tensor_parallel_size, parallel.pipeline_parallel_size),
                          thinking=request.enable_thinking,
                          positions=MAX_K)


def _model_runner(request: LaunchRequest, facts: LaunchFacts, method: str) -> ModelRunnerChoice:
    """The runner the planned server will start with: the plan always sets the family's parsers, so they count
    among its serve flags; the server inherits launch's environment; V2 needs Triton."""
    family = rules_for(facts.target.config)
    planned = ["--reasoning-parser"] if family.reasoning_parser else []
    return model_runner(facts.vllm.version, method=method, target_is_moe=is_moe_target(facts.target),
                        serve_args=[*planned, *request.extra_args], env=facts.environment,
                        has_triton=facts.vllm.has_triton)


def _speculate(facts: LaunchFacts, parallel: ParallelPlan) -> tuple[SpeculativeChoice, KScheduleDecision]:
    """The speculative config: its method, then its K (per batch size where a load test or the shipped costs
    decide one)."""
    request = facts.request
    method = choose_method(request, facts.draft, facts.ranking)
    resolved = resolve_method(method[0], facts.draft)

    def schedule(plan_k: int) -> KScheduleDecision:
        return decide_k_schedule(facts.load_test, max_num_seqs=request.max_num_seqs, version=facts.vllm.version,
                                 method=resolved, plan_k=plan_k, k_given=request.num_speculative_tokens is not None,
                                 data_parallel_size=max(parallel.data_parallel_size,
                                                        data_parallel_size_of(request.extra_args)),
                                 modelled=_modelled_costs(request, facts, resolved, parallel),
                                 runner=_model_runner(request, facts, resolved))

    k = decide_k(request, resolved, facts.draft, facts.ranking, target=facts.target,
                 schedule=schedule)
    return choose_speculative(request, facts.draft, parallel.draft_tensor_parallel_size, method, k), k.schedule


def _losing_choice(facts: LaunchFacts, speculative: SpeculativeChoice, k_schedule: KScheduleDecision) -> str | None:
    """Why ``--method auto`` drops the method it ranked fastest (None: it keeps it): at the batch sizes this server
    will run (a load test, or the shipped step costs per batch size), no K beats the target alone."""
    if not facts.request.ranks_methods or k_schedule.outcome != "loses":
        return None
    drafter = f" with {speculative.config.model}" if speculative.config.model else ""
    return (f"--method auto: {speculative.resolved_method}{drafter}, the ranking's fastest for one sequence, loses at "
            f"--max-num-seqs {facts.request.max_num_seqs}: {k_schedule.reason}")


def decide(facts: LaunchFacts) -> Decisions:
    """Every decision for ``facts``, a pure function of them (nothing is read here). Without
    speculation no drafter is loaded: ``facts.draft`` is then left out of every decision (``build_launch_plan``
    leaves it out of the checks)."""
    request, target, draft = facts.request, facts.target, facts.draft
    parallel = choose_parallel(request, facts)
    off = no_speculation_reason(request, facts.ranking)
    speculative, k_schedule = (None, no_k_schedule(off)) if off is not None else _speculate(facts, parallel)
    if speculative is not None and (off := _losing_choice(facts, speculative, k_schedule)) is not None:
        speculative, draft = None, None  # the k_schedule stays: its levels are the evidence
        parallel = choose_parallel(request, facts.model_copy(update={"draft": None}))
    method = speculative.resolved_method if speculative is not None else NO_SPECULATION
    runner = k_schedule.model_runner.runner if k_schedule.model_runner is not None else None
    hybrid = hybrid_kv_reason(target, draft, runner)

    def memory_at(kv_cache_dtype: str) -> MemoryChoice:
        return choose_memory(request, target, draft, hybrid_kv_cache_manager=hybrid is None, parallel=parallel,
                             kv_cache_dtype=kv_cache_dtype)

    kv_cache = decide_kv_cache(profile=request.profile, version=facts.vllm.version, method=method,
                               given_dtype=request.kv_cache_dtype, extra_args=request.extra_args,
                               multimodal_target=target.is_known and target.is_multimodal,
                               has_fa4=facts.vllm.has_fa4, memory_at=memory_at,
                               shape=measured_size(target)[1] if target.is_known else None)
    return Decisions(
        parallel=parallel, speculative=speculative, no_speculation=off, hybrid_kv_reason=hybrid,
        hybrid_kv_kept_on=None if hybrid else hybrid_kv_kept_on(target, draft),
        memory=memory_at(kv_cache.dtype), kv_cache=kv_cache,
        template=facts.template,
        async_scheduling=decide_async_scheduling(facts.vllm.version,
                                                 speculative.config.method if speculative else NO_SPECULATION,
                                                 choice=request.async_scheduling,
                                                 distribution=facts.vllm.distribution,
                                                 extra_args=request.extra_args),
        k_schedule=k_schedule,
        moe_backend=choose_moe_backend(target, facts.vllm.version, request.profile),
        traits=pairing_traits(hybrid_kv_cache_manager_off=hybrid is not None or HYBRID_FLAG in request.extra_args,
                              method=method, moe_per_expert_weights=facts.target_stores_experts_apart,
                              k_schedule_on_v2=k_schedule.schedule_on_v2),
    )
