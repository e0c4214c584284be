"""What specdraft needs to know about a model family, as one contract every family module fills in.

A family answers, from a checkpoint's ``config.json`` alone (never its weights): whether the config
belongs to it, which kind of checkpoint it is, which chat-template variant and which vLLM parsers
serve it, the KV cache each decoder layer owns, how many parameters a decoded token reads, which
modules a quantized draft must keep unquantized, whether it routes tokens to experts, the target width an
MTP assistant was built for, and which measured size (step costs, default K: ``costs``) it has. Token and
template facts are class attributes; the rest are methods of the config. Nothing outside a family module
reads a family's own config keys or names its sizes: it asks the family. Every method accepts a full config.json (multimodal configs carry the
language model under ``text_config``) or a bare text config.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Literal, Mapping

from specdraft.families._contexts import FamilyContexts, read_family_contexts
from specdraft.families._costs import FamilyCosts, read_family_costs

FieldKind = Literal["layers", "flag", "width"]
"""What a config field holds: a number of layers (0 and up), true or false, a width (1 and up)."""

SHIPPED_TEMPLATES = Path(__file__).resolve().parent.parent / "templates" / "chat_templates"
"""Where the templates specdraft ships live (a link to the top-level ``chat_templates/``; a wheel copies them)."""


@dataclass(frozen=True)
class LayerKV:
    """The KV cache one decoder layer owns."""

    kind: Literal["full", "sliding"]
    kv_heads: int
    head_dim: int
    shared: bool
    """True when the layer reads another layer's cache and owns none."""


@dataclass(frozen=True)
class ParameterCount:
    """The parameters of a language-model stack, split by how a decoded token reads them."""

    total: int
    """Every language-model parameter (what transformers instantiates for the text stack)."""
    lookup_only: int
    """Tables a token reads one row of (an untied input embedding, per-layer embedding tables)."""
    unpicked: int
    """Expert parameters the router leaves idle for one token."""
    embedding: int
    """The token embedding read whole every token (tied: it is also the LM head)."""

    @property
    def active(self) -> int:
        """Parameters read per decoded token."""
        return self.total - self.lookup_only - self.unpicked


def text_config(config: Mapping) -> Mapping:
    """The language model's config: ``text_config`` of a multimodal config.json, else the config itself."""
    return config.get("text_config") or config


class ModelFamily(ABC):
    """One model family's facts. A family module defines a subclass and one instance of it."""

    name: str
    """Lower-case id, also the vLLM parser name where the family has one (``gemma4``)."""
    display_name: str
    model_types: frozenset[str]
    """``model_type`` values of its configs (top level or ``text_config``)."""
    special_tokens: Mapping[str, int]
    """Special tokens and their ids in the family's tokenizer."""
    pairing_tokens: tuple[str, ...]
    """Special tokens whose ids a draft and its target must agree on."""
    tool_call_parser: str | None
    reasoning_parser: str | None
    template_files: Mapping[str, str]
    """Chat-template variant -> the file specdraft ships for it (in ``template_dir``)."""
    template_dir: Path = SHIPPED_TEMPLATES
    """Where ``template_files`` are."""
    has_template_rules: bool = False
    """True when ``specdraft.templates``' leak rules know the family's chat format (else a plan passes its
    template unchecked, and says so)."""
    costs_file: Path | None = None
    """The family's speed tables (``specdraft/families/_costs.py``): step costs per size, default K."""
    contexts_file: Path | None = None
    """The family's served speed by context length (``specdraft/families/_contexts.py``)."""
    stack_fields: Mapping[str, FieldKind] = {}
    """The family's own keys of a language-model stack and what each holds; ``specdraft.model_config`` checks
    them in every config it reads."""
    top_fields: Mapping[str, FieldKind] = {}
    """The same for keys read from the top level of config.json only."""
    base_repos: Mapping[str, str]
    """Size as spelled in repo ids (lower case) -> the base checkpoint of that size."""
    first_vllm: str
    """The first vLLM release with the family's model."""
    text_only_architecture: str
    """The architecture of a language-model-only checkpoint (towers dropped)."""

    @cached_property
    def costs(self) -> FamilyCosts | None:
        """The tables of ``costs_file``, None for a family without measurements."""
        return read_family_costs(self.costs_file) if self.costs_file is not None else None

    @cached_property
    def contexts(self) -> FamilyContexts | None:
        """The rows of ``contexts_file``, None for a family without them."""
        return read_family_contexts(self.contexts_file) if self.contexts_file is not None else None

    def template_path(self, variant: str) -> Path:
        """The file of the template specdraft ships for ``variant``."""
        return self.template_dir / self.template_files[variant]

    def is_member(self, config: Mapping) -> bool:
        """True when ``config`` (a config.json or a text config) is one of this family's."""
        types = {config.get("model_type"), text_config(config).get("model_type")}
        return bool(types & self.model_types)

    @abstractmethod
    def kind(self, config: Mapping) -> str:
        """Which kind of checkpoint of the family ``config`` is (for Gemma 4: e-series, large, moe, assistant)."""

    @abstractmethod
    def template_variant(self, config: Mapping) -> str:
        """The key of ``template_files`` whose template serves this checkpoint."""

    @abstractmethod
    def is_assistant(self, config: Mapping) -> bool:
        """True for a drafter that runs on the target's hidden states and KV cache (vLLM ``method: mtp``)."""

    @abstractmethod
    def kv_layers(self, config: Mapping) -> list[LayerKV]:
        """Per decoder layer: its attention kind, KV heads, head size and whether it shares another's cache."""

    @abstractmethod
    def count_parameters(self, config: Mapping) -> ParameterCount:
        """The language model's parameters from its shapes (raises ``KeyError`` when a shape is missing)."""

    @abstractmethod
    def embedding_params(self, config: Mapping) -> int:
        """Parameters in embedding tables, which quantized checkpoints keep in BF16 (0 for unknown shapes)."""

    @abstractmethod
    def quantization_exclusions(self, config: Mapping) -> tuple[str, ...]:
        """ModelOpt quantizer-name wildcards a quantized draft of this checkpoint must leave unquantized."""

    def has_layer_formula(self, config: Mapping) -> bool:
        """True when ``count_parameters`` knows the layers of ``config`` (a family may know only some stacks)."""
        return self.is_member(config)

    def required_shape_keys(self, config: Mapping) -> tuple[str, ...]:
        """Keys of the language model's config that ``config`` must carry as whole numbers: what its KV layers
        and parameter count cannot be read without (a config lacking one is refused where it is read)."""
        return ()

    def is_moe(self, config: Mapping) -> bool:
        """True when the language model's layers route each token to a few of many experts."""
        return False

    def routed_experts(self, config: Mapping) -> tuple[int | None, int | None] | None:
        """For a mixture-of-experts stack: (experts picked per token, experts per layer); None for a dense one."""
        return None

    def draft_backbone_width(self, config: Mapping) -> int | None:
        """For a drafter that runs on a target's hidden states: the target width it was built for (None: unknown)."""
        return None

    def size_key(self, config: Mapping) -> str | None:
        """The measured size (a key of ``costs.sizes``) whose shape ``config`` has, None for another shape."""
        return self.costs.size_of(text_config(config)) if self.costs is not None else None

    def stack_problem(self, stack: Mapping) -> tuple[str, object, str] | None:
        """A language-model stack's fields of the family that contradict one another: (field, value, why)."""
        return None

    def kv_shared_layers(self, config: Mapping) -> tuple[int, ...]:
        """Indices of the decoder layers that read another layer's KV cache."""
        return tuple(index for index, layer in enumerate(self.kv_layers(config)) if layer.shared)

    def base_repo_for(self, repo_id: str) -> str | None:
        """The base checkpoint whose size ``repo_id`` names (its assistant for an assistant); None: it names none."""
        return None

    def assistant_repo_for(self, base_repo: str) -> str | None:
        """The published MTP assistant of a base checkpoint, None when the family publishes none."""
        return None
