"""How a pair is spread over GPUs and nodes: tensor, pipeline and data parallel sizes, the draft's TP,
and how many KV heads each rank keeps, with vLLM's own rules (read from vLLM 0.19.0-0.33.0's source):

- ``--tensor-parallel-size`` must divide the attention heads (``ModelConfig.verify_with_parallel_config``:
  "Total number of attention heads must be divisible by tensor parallel size"), and the KV heads must
  divide by TP or TP by them (``QKVParallelLinear``: below TP ranks a KV head is *replicated*, not split,
  so every rank keeps ``max(1, kv_heads // tp)`` heads).
- the draft's TP is the target's unless asked otherwise (``SpeculativeConfig._verify_and_get_draft_tp``);
  which other sizes vLLM accepts per method is ``check_draft_tensor_parallel``'s (``checks.pair``).
- one engine spans ``tp x pp`` GPUs; ``--data-parallel-size`` copies of it fill the rest (an unset TP is
  derived from the GPUs each copy gets).

Pure: config.json dicts and sizes in, a ``ParallelPlan`` with findings out.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict

from specdraft.findings import Finding
from specdraft.planning.knowledge.gpu_memory import kv_heads_per_rank

class Topology(BaseModel):
    """The machines a plan spreads over: ``nodes`` hosts of ``gpus_per_node`` GPUs of one profile."""

    model_config = ConfigDict(frozen=True)

    name: str
    profile: str
    """The GPU profile (``dgx-spark``, ``h100``, ``h200``): what one GPU holds."""
    nodes: int = 1
    gpus_per_node: int = 1
    interconnect: str = ""

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node


TOPOLOGIES: dict[str, Topology] = {t.name: t for t in (
    *(Topology(name=f"{gpu}-x{n}", profile=gpu, gpus_per_node=n, interconnect="NVLink within the host")
      for gpu in ("h100", "h200") for n in (2, 4, 8)),
    Topology(name="dgx-spark-x2", profile="dgx-spark", nodes=2, gpus_per_node=1,
             interconnect="the ConnectX-7 cable between the two Sparks (NCCL over RoCE)"),
)}
"""Multi-GPU hosts and the two-Spark pair; ``topology_for`` builds any other shape."""


def topology_for(profile: str, *, nodes: int = 1, gpus_per_node: int = 1) -> Topology:
    """A named topology when one matches, else an ad-hoc one of that shape."""
    for topology in TOPOLOGIES.values():
        if (topology.profile, topology.nodes, topology.gpus_per_node) == (profile, nodes, gpus_per_node):
            return topology
    name = profile if nodes * gpus_per_node == 1 else f"{nodes} x {gpus_per_node} x {profile}"
    return Topology(name=name, profile=profile, nodes=nodes, gpus_per_node=gpus_per_node)


class ParallelPlan(BaseModel):
    """The sizes vLLM is given, and what each GPU then holds of each model."""

    model_config = ConfigDict(frozen=True)

    topology: Topology
    tensor_parallel_size: int
    pipeline_parallel_size: int
    data_parallel_size: int
    draft_tensor_parallel_size: int
    target_kv_heads_per_rank: dict[str, int]
    """Per attention kind (``sliding``, ``full``): KV heads each target rank keeps."""
    draft_kv_heads_per_rank: dict[str, int]

    @property
    def engine_gpus(self) -> int:
        """GPUs one engine spans (vLLM's world size)."""
        return self.tensor_parallel_size * self.pipeline_parallel_size

    def serve_flags(self) -> list[tuple[str, str]]:
        """The parallel-size flags ``vllm serve`` needs beyond its defaults of 1."""
        sizes = (("--tensor-parallel-size", self.tensor_parallel_size),
                 ("--pipeline-parallel-size", self.pipeline_parallel_size),
                 ("--data-parallel-size", self.data_parallel_size))
        return [(flag, str(size)) for flag, size in sizes if size > 1]


def _text(config: Mapping | None) -> Mapping:
    config = config or {}
    return config.get("text_config") or config


def kv_head_counts(config: Mapping | None) -> dict[str, int]:
    """KV heads per attention kind; Gemma 4's full layers may have their own count."""
    text = _text(config)
    counts = {}
    if text.get("num_key_value_heads"):
        counts["sliding"] = int(text["num_key_value_heads"])
    full = text.get("num_global_key_value_heads") or text.get("num_key_value_heads")
    if full:
        counts["full"] = int(full)
    return counts


def check_kv_head_split(role: str, config: Mapping | None, tensor_parallel_size: int) -> Finding | None:
    """None when every KV-head count and the TP size divide one another (vLLM asserts it while loading)."""
    bad = {kind: heads for kind, heads in kv_head_counts(config).items()
           if heads % tensor_parallel_size and tensor_parallel_size % heads}
    if not bad:
        return None
    counts = ", ".join(f"{heads} {kind} KV heads" for kind, heads in bad.items())
    heads = kv_head_counts(config).values()
    fitting = [size for size in (1, 2, 4, 8, 16) if all(h % size == 0 or size % h == 0 for h in heads)]
    return Finding(level="error", check="kv-head-split",
                   message=f"the {role}'s {counts} and tensor-parallel size {tensor_parallel_size} do not divide "
                           "one another (vLLM's QKVParallelLinear splits or replicates KV heads evenly)",
                   hint=f"use a tensor-parallel size among {', '.join(map(str, fitting))}")


def _default_tensor_parallel(gpus: int, target: Mapping | None) -> int:
    """The largest TP dividing ``gpus`` that the target's heads allow: spread the target over every GPU."""
    heads = int(_text(target).get("num_attention_heads") or 1)
    kv = kv_head_counts(target)
    sizes = [size for size in range(gpus, 0, -1)
             if gpus % size == 0 and heads % size == 0
             and all(h % size == 0 or size % h == 0 for h in kv.values())]
    return sizes[0] if sizes else 1


def _size_findings(topology: Topology, tp: int, pp: int, dp: int) -> list[Finding]:
    used = tp * pp * dp
    if used > topology.gpus and tp <= topology.gpus:  # TP alone past the GPUs is the tensor-parallel verdict's
        return [Finding(level="error", check="parallel-sizes",
                        message=f"TP {tp} x PP {pp} x DP {dp} = {used} GPUs; {topology.name} has {topology.gpus}",
                        hint="lower --data-parallel-size or --tensor-parallel-size")]
    findings = []
    if topology.nodes > 1 and dp > 1:
        findings.append(Finding(level="error", check="parallel-sizes",
                                message=f"data parallel {dp} across {topology.nodes} nodes: specdraft plans one "
                                        "engine spread over the nodes (TP x PP), not copies of it",
                                hint="drop --data-parallel-size, or launch each node on its own with --nodes 1"))
    if used < topology.gpus:
        findings.append(Finding(level="warning", check="parallel-sizes",
                                message=f"TP {tp} x PP {pp} x DP {dp} uses {used} of {topology.name}'s "
                                        f"{topology.gpus} GPUs",
                                hint=f"pass --data-parallel-size {topology.gpus // (tp * pp)} to use them all"))
    if topology.nodes > 1 and (tp * pp) % topology.gpus_per_node and dp == 1:
        findings.append(Finding(level="error", check="parallel-sizes",
                                message=f"one engine of {tp * pp} GPUs does not fill whole nodes of "
                                        f"{topology.gpus_per_node}: vLLM's multi-node launch gives every node "
                                        "the same number of ranks",
                                hint=f"use TP x PP = {topology.gpus}"))
    if pp > 1:
        findings.append(Finding(level="warning", check="parallel-sizes",
                                message=f"pipeline parallel {pp} with a speculative draft: vLLM 0.19-0.33 does not "
                                        "refuse it, but specdraft has not served a draft with PP > 1",
                                hint="prefer TP across the GPUs; keep PP for targets whose heads do not split"))
    return findings


def plan_parallelism(topology: Topology, target: Mapping | None, draft: Mapping | None, *,
                     tensor_parallel_size: int | None = None, pipeline_parallel_size: int = 1,
                     data_parallel_size: int = 1, draft_tensor_parallel_size: int | None = None) -> ParallelPlan:
    """Sizes for ``target`` (and ``draft``) on ``topology``; unset TP spreads each engine over the GPUs its pipeline
    stage gets once the data-parallel copies have their share (``check_parallel`` judges the result)."""
    per_stage = topology.gpus // (pipeline_parallel_size * data_parallel_size)
    tp = tensor_parallel_size or _default_tensor_parallel(max(per_stage, 1), target)
    draft_tp = draft_tensor_parallel_size or tp
    return ParallelPlan(
        topology=topology, tensor_parallel_size=tp, pipeline_parallel_size=pipeline_parallel_size,
        data_parallel_size=data_parallel_size, draft_tensor_parallel_size=draft_tp,
        target_kv_heads_per_rank={k: kv_heads_per_rank(h, tp) for k, h in kv_head_counts(target).items()},
        draft_kv_heads_per_rank={k: kv_heads_per_rank(h, draft_tp) for k, h in kv_head_counts(draft).items()},
    )


def check_parallel(plan: ParallelPlan, target: Mapping | None, draft: Mapping | None) -> list[Finding]:
    """The sizes against the topology, and each model's KV heads against its TP (attention heads and the
    draft's TP against the method are checked beside the pair)."""
    findings = _size_findings(plan.topology, plan.tensor_parallel_size, plan.pipeline_parallel_size,
                              plan.data_parallel_size)
    for role, config, size in (("target", target, plan.tensor_parallel_size),
                               ("draft", draft, plan.draft_tensor_parallel_size)):
        split = check_kv_head_split(role, config, size) if config else None
        if split is not None:
            findings.append(split)
    return findings
