"""A checkpoint's ``config.json``, read once and checked before anything plans with it.

``read_model_config(path)`` is the one reader: checkpoints, ``quantize`` and ``tune``'s cost model read
config.json through it. ``check_model_config(config, path)`` is the check alone (pure): every field that
planning, the memory model, the checks or ``quantize`` read has the JSON type, sign and range a model has,
or the file is refused (``UserError``) naming the file, the field and the value.

Why here and not where a value is used: Python's json reads ``NaN``, ``Infinity`` and ``1e999`` (as inf) and
``true`` is an ``int`` to Python, so a bad value travels far before anything fails ("target -2.6 GiB", zero
KV heads, ``hidden_size: true``). Ranges are generous: they turn away what no model has, not what no model
has yet. JSON null reads as "not given", as transformers reads it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from pathlib import Path

from specdraft.errors import UserError
from specdraft.families import FAMILIES, family_of
from specdraft.paths import refuse_special_file

Check = Callable[[object], str | None]
"""A value -> why it is refused (None: accepted)."""

_STACKS = ("text_config", "transformer_layer_config")
"""Where a config nests its language model (multimodal configs; speculators-format drafters)."""
_IDENTITY = ("model_type", "architectures", "speculators_model_type", "dflash_config")
"""A model's config.json names its model one of these ways (transformers' AutoConfig needs ``model_type``)."""
# Above the largest of each any model has; 2**27 positions is past every context length published.
_MAX_WIDTH = 2**20
_MAX_LAYERS = 2**12
_MAX_HEADS = 2**12
_MAX_HEAD_DIM = 2**14
_MAX_VOCAB = 2**24
_MAX_POSITIONS = 2**27
_MAX_EXPERTS = 2**16
_HINT = "fix that field in config.json, or download the checkpoint again (e.g. hf download REPO)"


def _is_whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _count(low: int, high: int) -> Check:
    def check(value: object) -> str | None:
        if not _is_whole(value):
            return f"not a whole number (a JSON {_json_type(value)})"
        return None if low <= value <= high else f"outside {low:,}..{high:,}"
    return check


def _counts_or_count(low: int, high: int) -> Check:
    one = _count(low, high)

    def check(value: object) -> str | None:
        if isinstance(value, list):
            return next((f"entry {i}: {why}" for i, item in enumerate(value) if (why := one(item))), None)
        return one(value)
    return check


def _flag(value: object) -> str | None:
    return None if isinstance(value, bool) else f"not true or false (a JSON {_json_type(value)})"


def _name(value: object) -> str | None:
    return None if isinstance(value, str) else f"not a string (a JSON {_json_type(value)})"


def _names(value: object) -> str | None:
    if not isinstance(value, list):
        return f"not a list of strings (a JSON {_json_type(value)})"
    return next((f"entry {i} is a JSON {_json_type(v)}, not a string" for i, v in enumerate(value)
                 if not isinstance(v, str)), None)


def _layer_ids(value: object) -> str | None:
    if not isinstance(value, list):
        return f"not a list of whole numbers (a JSON {_json_type(value)})"
    layer = _count(0, _MAX_LAYERS)
    return next((f"entry {i}: {why}" for i, v in enumerate(value) if (why := layer(v))), None)


def _object(value: object) -> str | None:
    return None if isinstance(value, dict) else f"not an object (a JSON {_json_type(value)})"



STACK_FIELDS: Mapping[str, Check] = {
    "model_type": _name,
    "hidden_size": _count(1, _MAX_WIDTH),
    "intermediate_size": _counts_or_count(1, _MAX_WIDTH * 4),
    "moe_intermediate_size": _count(1, _MAX_WIDTH * 4),
    "hidden_size_per_layer_input": _count(0, _MAX_WIDTH),
    "num_hidden_layers": _count(1, _MAX_LAYERS),
    "layer_types": _names,
    "num_attention_heads": _count(1, _MAX_HEADS),
    "num_key_value_heads": _count(1, _MAX_HEADS),
    "num_global_key_value_heads": _count(1, _MAX_HEADS),
    "head_dim": _count(1, _MAX_HEAD_DIM),
    "global_head_dim": _count(1, _MAX_HEAD_DIM),
    "vocab_size": _count(1, _MAX_VOCAB),
    "vocab_size_per_layer_input": _count(0, _MAX_VOCAB),
    "max_position_embeddings": _count(1, _MAX_POSITIONS),
    "sliding_window": _count(1, _MAX_POSITIONS),
    "num_experts": _count(1, _MAX_EXPERTS),
    "top_k_experts": _count(1, _MAX_EXPERTS),
    "attention_k_eq_v": _flag,
    "use_double_wide_mlp": _flag,
    "tie_word_embeddings": _flag,
    "dtype": _name,
    "torch_dtype": _name,
}
"""Fields read from the config itself and from each language-model stack nested in it. Token ids are not here:
their reader takes whole numbers only and leaves the rest unknown (old configs write ``pad_token_id: -1``)."""

TOP_FIELDS: Mapping[str, Check] = {
    "architectures": _names,
    "text_config": _object,
    "transformer_layer_config": _object,
    "speculators_config": _object,
    "dflash_config": _object,
    "quantization_config": _object,
    "speculators_model_type": _name,
    "target_hidden_size": _count(1, _MAX_WIDTH),
    "draft_vocab_size": _count(1, _MAX_VOCAB),
    "eagle_aux_hidden_state_layer_ids": _layer_ids,
    "aux_hidden_state_layer_ids": _layer_ids,
}
"""Fields read from the top level only."""

_KIND_CHECKS: Mapping[str, Check] = {"layers": _count(0, _MAX_LAYERS), "flag": _flag, "width": _count(1, _MAX_WIDTH)}
"""How a family's own fields (``ModelFamily.stack_fields``, ``top_fields``) are checked, by what they hold."""


def _family_fields(where: str) -> dict[str, Check]:
    """Every registered family's own fields of the top level (``top``) or of a stack, with their checks."""
    return {key: _KIND_CHECKS[kind] for family in FAMILIES
            for key, kind in getattr(family, f"{where}_fields").items()}


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return {str: "string", list: "list", dict: "object"}.get(type(value), type(value).__name__)


def _shown(value: object) -> str:
    text = json.dumps(value, allow_nan=True) if not isinstance(value, (dict, list)) else (
        "{...}" if isinstance(value, dict) else "[...]")
    return text if len(text) <= 40 else text[:37] + "..."


def _refuse(path: Path | str, field: str, value: object, why: str) -> UserError:
    return UserError(f"{path}: {field} is {_shown(value)}, {why}; not a model's config.json", hint=_HINT)


def _first_non_finite(document: object) -> tuple[str, float] | None:
    """The dotted path and value of the first NaN or infinity in ``document`` (walked without recursion)."""
    pending: list[tuple[str, object]] = [("", document)]
    while pending:
        where, value = pending.pop()
        if isinstance(value, float) and not math.isfinite(value):
            return where or "the document", value
        items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
        pending.extend((f"{where}.{key}" if where else str(key), item) for key, item in items)
    return None


def check_model_config(config: Mapping, path: Path | str, *, needs: tuple[str, ...] | None = None) -> None:
    """Refuse (``UserError``) a config.json whose fields no model has; pure, reads no file.

    ``needs``: the language model's keys the reader cannot do without, which must be whole numbers (default: what
    the config's family needs to plan it, ``ModelFamily.required_shape_keys``)."""
    non_finite = _first_non_finite(config)
    if non_finite is not None:
        field, value = non_finite
        raise _refuse(path, field, value, "not a finite number")
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    if not any(config.get(key) for key in _IDENTITY) and not text.get("model_type"):
        raise UserError(f"{path}: no {', '.join(_IDENTITY[:-1])} or {_IDENTITY[-1]}; not a model's config.json",
                        hint="pass the directory of a Hugging Face checkpoint (its config.json names its model_type)")
    for key, check in {**TOP_FIELDS, **_family_fields("top")}.items():
        _check_field(path, key, config.get(key), check)
    stacks = [("", config)] + [(f"{key}.", config[key]) for key in _STACKS if isinstance(config.get(key), dict)]
    stack_fields = {**STACK_FIELDS, **_family_fields("stack")}
    for prefix, stack in stacks:
        for key, check in stack_fields.items():
            _check_field(path, prefix + key, stack.get(key), check)
        _check_stack_together(path, prefix, stack)
    family = family_of(config)
    if needs is None:
        needs = family.required_shape_keys(config) if family is not None else ()
    prefix = "text_config." if text is not config else ""
    whose = f"a {family.display_name} {family.kind(config)} config" if family is not None else "specdraft"
    for key in needs:
        if not _is_whole(text.get(key)):
            raise _refuse(path, prefix + key, text.get(key), f"but {whose} needs it as a whole number")


def _check_field(path: Path | str, field: str, value: object, check: Check) -> None:
    if value is None:
        return
    why = check(value)
    if why is not None:
        raise _refuse(path, field, value, why)


def _check_stack_together(path: Path | str, prefix: str, stack: Mapping) -> None:
    """The fields that bound one another: layer kinds against the layers, experts picked, and each family's own
    (``ModelFamily.stack_problem``: Gemma 4's shared layers against the layers)."""
    layers = stack.get("num_hidden_layers")
    for family in FAMILIES:
        problem = family.stack_problem(stack)
        if problem is not None:
            field, value, why = problem
            raise _refuse(path, prefix + field, value, why)
    types = stack.get("layer_types")
    if layers is not None and types is not None and len(types) != layers:
        raise _refuse(path, prefix + "layer_types", types,
                      f"{len(types)} entries where num_hidden_layers is {layers}")
    experts, picked = stack.get("num_experts"), stack.get("top_k_experts")
    if experts is not None and picked is not None and picked > experts:
        raise _refuse(path, prefix + "top_k_experts", picked, f"more than num_experts ({experts})")


def read_json_document(path: Path, *, what: str, hint: str) -> object:
    """The JSON value in ``path``: ``UserError`` for a file that is not regular, unreadable, not UTF-8, not
    JSON, nested deeper than the parser follows, or holding NaN or an infinity."""
    refuse_special_file(path, what=what, hint=hint)
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise UserError(f"{what} {path} does not exist", hint=hint) from None
    except OSError as err:
        raise UserError(f"cannot read {what} {path}: {err.strerror or err}", hint=hint) from None
    except UnicodeDecodeError as err:
        raise UserError(f"{what} {path} is not UTF-8 text (byte {err.start})", hint=hint) from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise UserError(f"{path}: not JSON ({err.msg}, line {err.lineno})", hint=hint) from None
    except RecursionError:
        raise UserError(f"{path}: JSON nested deeper than a reader follows", hint=hint) from None
    non_finite = _first_non_finite(value)
    if non_finite is not None:
        raise UserError(f"{path}: {non_finite[0]} is {_shown(non_finite[1])}, not a finite number", hint=hint)
    return value


def read_model_config(path: Path, *, needs: tuple[str, ...] | None = None) -> dict:
    """The config.json at ``path``, checked (``check_model_config``, with ``needs``); ``UserError`` for anything
    else."""
    hint = f"check {path.name}, or download the checkpoint again (e.g. hf download REPO)"
    value = read_json_document(path, what="model config", hint=hint)
    if not isinstance(value, dict):
        raise UserError(f"{path}: a JSON {type(value).__name__}, not an object; not a checkpoint file", hint=hint)
    check_model_config(value, path, needs=needs)
    return value
