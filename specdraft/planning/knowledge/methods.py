"""The speculative methods specdraft plans for Gemma 4, what each proposes with, and what each needs from the
serving vLLM beyond the method's name (checked per release from ``data/release_support.json``).

- ``draft_model``: a smaller Gemma 4 (E2B/E4B) run as an independent model;
- ``mtp``: the target's MTP assistant (``google/gemma-4-*-it-assistant``), sharing its KV cache;
- ``eagle3`` / ``dflash`` / ``dspark``: a speculators-format drafter (``knowledge.speculators``) that reads the target's
  hidden states, so the target's class must implement ``SupportsEagle3`` in the release, and the release's
  speculators loader must know the checkpoint's ``speculators_model_type``; a Gemma 4 DSpark drafter in its own
  format needs the release's ``Gemma4DSparkModel`` (0.26.0 on);
- ``ngram`` (prompt lookup on the CPU), ``ngram_gpu`` (on the GPU), ``suffix`` (suffix trees, Arctic
  Inference's ``arctic_inference`` package in the serving interpreter): no draft checkpoint; their options are
  ``SpeculativeConfig`` fields the release defines (``method_options``).

vLLM's V1 model runner schedules ahead only for EAGLE-type (eagle, eagle3, mtp, dflash), ngram_gpu and draft_model
speculation and refuses an explicit ``--async-scheduling`` for ngram and suffix (``VllmConfig.__post_init__``:
"Currently, async scheduling is only supported with EAGLE/MTP/Draft Model/NGram GPU kind of speculative
decoding" through 0.32.0, "Async scheduling is not supported by the V1 model runner with ..." in 0.33.0).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Literal

from packaging.version import Version
from pydantic import BaseModel, ConfigDict

from specdraft.findings import Finding
from specdraft.planning.knowledge.release_support import ReleaseSupport, first_release

Proposer = Literal["draft model", "MTP assistant", "speculator", "none"]


class Method(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    proposer: Proposer
    async_scheduling: bool
    """Whether vLLM runs it with async scheduling."""
    package: str | None = None
    """A module the serving interpreter must have besides vLLM."""


METHODS: dict[str, Method] = {m.name: m for m in (
    Method(name="draft_model", proposer="draft model", async_scheduling=True),
    Method(name="mtp", proposer="MTP assistant", async_scheduling=True),
    Method(name="eagle3", proposer="speculator", async_scheduling=True),
    Method(name="dflash", proposer="speculator", async_scheduling=True),
    # DSpark runs on Model Runner V2 only, which vLLM forces for it (VllmConfig._use_v2_model_runner, 0.25.0 on)
    Method(name="dspark", proposer="speculator", async_scheduling=True),
    Method(name="ngram", proposer="none", async_scheduling=False),
    Method(name="ngram_gpu", proposer="none", async_scheduling=True),
    Method(name="suffix", proposer="none", async_scheduling=False, package="arctic_inference"),
)}
DRAFTLESS_METHODS = frozenset(name for name, method in METHODS.items() if method.proposer == "none")
NO_SPECULATION = "none"
"""``--method none``: the target served alone, the same plan without ``--speculative-config`` (the baseline
``specdraft bench --compare`` measures a speculative server against)."""


def _first(has, what: str) -> str:
    release = first_release(has)
    return f"pip install 'vllm>={release}'" if release else f"no vLLM release 0.19.0-0.33.0 has {what}"


def check_hidden_state_target(method: str, target_architectures: Sequence[str], support: ReleaseSupport,
                              version: str) -> Finding | None:
    """EAGLE-3 and DFlash drafters read the target's hidden states: its class must implement SupportsEagle3."""
    if METHODS[method].proposer != "speculator" or not target_architectures:
        return None
    if any(a in support.gemma4_eagle3_architectures for a in target_architectures):
        return Finding(level="ok", check="method-target",
                       message=f"vLLM {version}'s {target_architectures[0]} hands {method} its hidden states")
    return Finding(level="error", check="method-target",
                   message=f"vLLM {version}'s {', '.join(target_architectures)} does not implement SupportsEagle3, "
                           f"so a {method} drafter gets no hidden states ('Model does not support EAGLE3 interface')",
                   hint=_first(lambda r: any(a in r.gemma4_eagle3_architectures for a in target_architectures),
                               "it"))


def check_drafter_class(method: str, architecture: str | None, support: ReleaseSupport,
                        version: str) -> Finding | None:
    """A drafter in its own format is built from the class its config names, which the release must register.
    Without ``Gemma4DSparkModel`` (before 0.26.0) vLLM takes a DSpark config that is not ``Qwen3DSparkModel`` for
    DeepSeek-V4's, whose weights ship inside the target (``SpeculativeConfig.__post_init__``, 0.25.x)."""
    if architecture is None:
        return None
    if architecture in support.gemma4_architectures:
        return Finding(level="ok", check="drafter-class", message=f"vLLM {version} builds {architecture} drafters")
    return Finding(level="error", check="drafter-class",
                   message=f"vLLM {version} has no {architecture}: it cannot build this Gemma 4 {method} drafter "
                           "(it would take it for DeepSeek-V4's DSpark stages, which ship inside the target)",
                   hint=_first(lambda r: architecture in r.gemma4_architectures, architecture))


def check_speculators_type(speculators_type: str, support: ReleaseSupport, version: str) -> Finding:
    """vLLM loads a speculators checkpoint only for the ``speculators_model_type`` values it registers."""
    if speculators_type in support.speculators_types:
        return Finding(level="ok", check="speculators-type",
                       message=f"vLLM {version} loads {speculators_type} speculators")
    return Finding(level="error", check="speculators-type",
                   message=f"vLLM {version} does not load {speculators_type!r} speculators "
                           f"(it loads {', '.join(support.speculators_types)})",
                   hint=_first(lambda r: speculators_type in r.speculators_types, speculators_type))


def check_method_options(method: str, options: Mapping[str, object], support: ReleaseSupport,
                         version: str) -> Finding | None:
    """A method's own options must be ``SpeculativeConfig`` fields of the release, and belong to the method."""
    if not options:
        return None
    known = support.method_options.get(method, ())
    foreign = [name for name in options if name not in known]
    if foreign:
        return Finding(level="error", check="method-options",
                       message=f"{', '.join(foreign)}: not an option of method {method} in vLLM {version}"
                               + (f" (it has {', '.join(known)})" if known else " (it has none)"),
                       hint="drop the option, or choose the method it belongs to")
    return Finding(level="ok", check="method-options",
                   message=", ".join(f"{name}={value}" for name, value in options.items()))


def check_method_package(method: str, installed: Collection[str] | None, vllm_root: Path | None) -> Finding | None:
    """``suffix`` imports Arctic Inference inside the serving interpreter; it is not a vLLM dependency.
    ``installed``: the methods' packages found beside the vLLM at ``vllm_root`` (None: no vLLM found)."""
    package = METHODS[method].package
    if package is None:
        return None
    if installed is None:
        return Finding(level="warning", check="method-package",
                       message=f"method {method} needs the {package} package beside vLLM; no vLLM found to look in",
                       hint="pass --python with the interpreter that will serve")
    if package in installed:
        return Finding(level="ok", check="method-package", message=f"{package} is installed beside vLLM")
    return Finding(level="error", check="method-package",
                   message=f"method {method} needs {package} in the serving interpreter, not found beside "
                           f"{vllm_root} (vLLM: 'Arctic Inference is required for suffix decoding')",
                   hint="pip install arctic-inference (in the serving interpreter)")


def check_async_for_method(method: str, extra_args: Sequence[str]) -> Finding | None:
    """vLLM refuses an explicit ``--async-scheduling`` for methods it cannot schedule ahead."""
    if METHODS[method].async_scheduling or "--async-scheduling" not in extra_args:
        return None
    return Finding(level="error", check="async-scheduling",
                   message=f"--async-scheduling given with method {method}: vLLM's V1 model runner schedules ahead "
                           "only for EAGLE/MTP/draft model/n-gram GPU speculation and refuses it here",
                   hint="drop --async-scheduling after --")


SPECULATIVE_CONFIG_FLAG = "--speculative-config"
LOSSY_REJECTION_METHODS = {
    "fly": "vLLM 0.33.0's vllm/config/speculative.py:2032, SpeculativeConfig._verify_args: 'FLy verification is a "
           "lossy speculative decoding method and may degrade model outputs'",
}
"""Rejection-sampling methods that accept draft tokens the target would not have produced, with the vLLM source
that says so."""


def given_rejection_method(extra_args: Sequence[str]) -> str | None:
    """The ``rejection_sample_method`` the user passes to vLLM after ``--`` (``given_speculative_option``)."""
    return given_speculative_option(extra_args, "rejection_sample_method")


def given_speculative_option(extra_args: Sequence[str], key: str) -> str | None:
    """The string value of ``key`` the user passes to vLLM after ``--``: in ``--speculative-config JSON`` (or
    ``=JSON``), or in vLLM's dotted form ``--speculative-config.KEY VALUE`` (or ``=VALUE``; ``FlexibleArgumentParser``
    reads the value as JSON, else as a string); vLLM reads ``_`` and ``-`` alike in an option's name. The last one
    given wins, as in vLLM's parser."""
    found = None
    for i, arg in enumerate(extra_args):
        name, eq, inline = arg.partition("=")
        option, dot, field = name.partition(".")
        if option.replace("_", "-") != SPECULATIVE_CONFIG_FLAG:
            continue
        value = inline if eq else (extra_args[i + 1] if i + 1 < len(extra_args) else "")
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = value
        if not dot and isinstance(parsed, dict) and isinstance(parsed.get(key), str):
            found = parsed[key]
        elif dot and field == key and isinstance(parsed, str):
            found = parsed
    return found


def check_lossy_rejection(extra_args: Sequence[str], version: str | None,
                          support: ReleaseSupport | None = None) -> Finding | None:
    """A rejection-sampling method the release does not define is refused by vLLM; a lossy one (``fly``) serves,
    but its outputs are no longer the target's: a warning naming the vLLM line that says so."""
    method = given_rejection_method(extra_args)
    if method is None:
        return None
    if support is not None and method not in support.rejection_sample_methods:
        return Finding(level="error", check="rejection-sample-method",
                       message=f"rejection_sample_method {method!r} (in {SPECULATIVE_CONFIG_FLAG} after --) is not a "
                               f"choice of vLLM {version} ({', '.join(support.rejection_sample_methods)})",
                       hint=_first(lambda r: method in r.rejection_sample_methods, method))
    if method in LOSSY_REJECTION_METHODS:
        return Finding(level="warning", check="rejection-sample-method",
                       message=f"rejection_sample_method {method!r} is lossy: it accepts draft tokens the target "
                               "would have rejected, so the outputs differ from the target's alone "
                               f"({LOSSY_REJECTION_METHODS[method]})",
                       hint="for outputs identical to the target's, drop rejection_sample_method (vLLM's standard "
                            "rejection sampling is lossless)")
    return None


DRAFT_LM_HEAD_SINCE = "0.33.0"
"""The first release whose ``SpeculativeConfig`` has ``draft_lm_head_quantization`` (vllm/config/speculative.py;
earlier configs refuse unknown keys)."""


def check_draft_lm_head_quantization(extra_args: Sequence[str], version: str | None, method: str) -> Finding | None:
    """``draft_lm_head_quantization`` quantizes the drafter's copy of a target lm_head it shares (EAGLE and MTP,
    Model Runner V2). No Gemma 4 drafter shares one, so vLLM refuses it for every Gemma 4 pairing: an error that says
    which refusal and where it is, before any GPU work. None where the option is not given."""
    value = given_speculative_option(extra_args, "draft_lm_head_quantization")
    if value is None:
        return None
    if version is not None and Version(version) < Version(DRAFT_LM_HEAD_SINCE):
        why = (f"vLLM {version} has no such option ({DRAFT_LM_HEAD_SINCE} added it) and its speculative config "
               "refuses unknown keys")
    elif method == "mtp":
        why = ("Gemma 4's MTP assistant scores the tied embedding rows and has no lm_head to share: vLLM raises "
               "'draft_lm_head_quantization is not supported for method 'mtp'' (vllm/config/speculative.py, "
               "SpeculativeConfig._verify_args)")
    elif method in ("eagle", "eagle3"):
        why = ("the Gemma 4 EAGLE-3 speculators carry their own lm_head (a 32000-token draft vocabulary): vLLM raises "
               "'draft_lm_head_quantization needs a drafter that shares the target lm_head.' "
               "(vllm/v1/worker/gpu/spec_decode/eagle/utils.py)")
    else:
        why = (f"vLLM quantizes only an EAGLE or MTP drafter's shared lm_head and raises "
               f"'draft_lm_head_quantization is not supported for method {method!r}' (vllm/config/speculative.py)")
    return Finding(level="error", check="draft-lm-head-quantization",
                   message=f"draft_lm_head_quantization {value!r} (in {SPECULATIVE_CONFIG_FLAG} after --): {why}",
                   hint="drop draft_lm_head_quantization: no Gemma 4 drafter shares the target's lm_head")
