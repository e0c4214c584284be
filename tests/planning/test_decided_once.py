"""Each decision is made once: its function is called from one place in the package, and the names that compute
K, the KV dtype, the attention backend, the MoE backend, the method vLLM runs and the hybrid KV rule are used only
by their decision's modules (flags and checks read the ``Decisions`` object instead)."""

import ast
from pathlib import Path

import specdraft
from specdraft.planning.decisions.decide import Decisions

PACKAGE = Path(specdraft.__file__).parent
DECISIONS = "planning/decisions"

DECIDED_BY = {
    "parallel": ("choose_parallel", "plan_parallelism"),
    "speculative": ("choose_method", "decide_k", "choose_speculative"),
    "no_speculation": ("no_speculation_reason",),
    "hybrid_kv_reason": ("hybrid_kv_reason",),
    "hybrid_kv_kept_on": ("hybrid_kv_kept_on",),
    "memory": ("choose_memory",),
    "kv_cache": ("decide_kv_cache", "choose_kv_dtype"),
    "template": (),  # a fact (the template read and checked), handed on unchanged
    "async_scheduling": ("decide_async_scheduling",),
    "k_schedule": ("decide_k_schedule", "no_k_schedule", "model_runner", "modelled_costs"),
    "moe_backend": ("choose_moe_backend",),
    "traits": ("pairing_traits",),
}
"""Each field of ``Decisions`` and the functions of ``decisions/`` that decide it."""

VALUES = {
    "K": ({"k_choice", "k_schedule", "k_levels", "single_k", "k_costs"},
          {"decide_k", "default_num_speculative_tokens", "decide_k_schedule", "no_k_schedule", "choose_level",
           "modelled_levels", "single_k", "why_single_k", "schedule_unavailable", "k_per_batch_size_table"}),
    "KV dtype": ({"kv_dtype", "kv_cache"}, {"choose_kv_dtype", "measured_fp8_faster"}),
    "attention backend": ({"attention_backends", "kv_cache"},
                          {"predict_backends", "observed_backends", "reported_failure", "attention_backend_table"}),
    "MoE backend": ({"moe_backend"}, {"choose_moe_backend", "moe_backend_support", "moe_backend_table"}),
    "method": ({"speculative_method"}, {"resolve_method"}),
    "hybrid KV": ({"hybrid_kv"}, {"needs_hybrid_manager_disabled", "kv_cache_groups_apart"}),
}
"""Per decided value: the ``decisions/`` modules that decide it, and the names that compute it (its functions
and the table it decides by). ``decisions/decide.py`` gathers every decision and may call any of them."""


def _modules(root: Path) -> dict[str, ast.Module]:
    return {path.relative_to(root).as_posix(): ast.parse(path.read_text()) for path in sorted(root.rglob("*.py"))}


def _called_name(call: ast.Call) -> str | None:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def call_places(root: Path, names: set[str]) -> dict[str, set[str]]:
    """For each of ``names``: the places under ``root`` (a package) that call it, a place being a module's
    top-level function or class (``file:name``), or the module itself for a call at its top level."""
    places: dict[str, set[str]] = {name: set() for name in names}
    for relative, tree in _modules(root).items():
        for statement in tree.body:
            owner = getattr(statement, "name", None)
            for node in ast.walk(statement):
                if isinstance(node, ast.Call) and _called_name(node) in names:
                    places[_called_name(node)].add(f"{relative}:{owner}" if owner else relative)
    return places


def decided_twice(root: Path, decided_by: dict[str, tuple[str, ...]]) -> dict[str, set[str]]:
    """The decision functions called from more than one place (none called: also reported, as an empty set)."""
    names = {name for functions in decided_by.values() for name in functions}
    return {name: found for name, found in call_places(root, names).items() if len(found) != 1}


def used_outside_owners(root: Path, values: dict[str, tuple[set[str], set[str]]]) -> set[tuple[str, str, str]]:
    """(value, file, name) for every import of, call of or attribute read of a name that computes ``value``
    outside the ``decisions/`` modules that decide it (and ``decisions/decide.py``, which gathers them). The
    ``knowledge/`` step, where the tables are defined and loaded, imports no decision (``test_layers``)."""
    found = set()
    for relative, tree in _modules(root).items():
        if relative.startswith("planning/knowledge/"):
            continue
        module = relative.removeprefix(f"{DECISIONS}/").removesuffix(".py") if relative.startswith(DECISIONS) else None
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                used = {alias.name for alias in node.names}
            elif isinstance(node, ast.Name):
                used = {node.id}
            elif isinstance(node, ast.Attribute):
                used = {node.attr}
            else:
                continue
            for value, (owners, names) in values.items():
                if module not in owners | {"decide"}:
                    found |= {(value, relative, name) for name in used & names}
    return found


def defined_in_decisions(root: Path) -> dict[str, str]:
    """Every top-level function of ``decisions/``, by name, with its module."""
    return {node.name: relative for relative, tree in _modules(root / DECISIONS).items()
            for node in tree.body if isinstance(node, ast.FunctionDef)}


def test_every_field_of_decisions_names_what_decides_it():
    assert set(DECIDED_BY) == set(Decisions.model_fields)
    named = {name for functions in DECIDED_BY.values() for name in functions}
    named |= {name for _, names in VALUES.values() for name in names if not name.endswith("_table")}
    assert named - set(defined_in_decisions(PACKAGE)) == set()


def test_each_decision_function_is_called_from_one_place():
    assert decided_twice(PACKAGE, DECIDED_BY) == {}


def test_k_kv_dtype_backends_method_and_hybrid_kv_are_computed_only_by_their_decision():
    assert used_outside_owners(PACKAGE, VALUES) == set()


def _synthetic_package(tmp_path: Path, files: dict[str, str]) -> Path:
    for relative, source in files.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(source)
    return tmp_path


def test_a_decision_made_again_by_a_check_is_reported(tmp_path):
    root = _synthetic_package(tmp_path, {
        f"{DECISIONS}/kv_cache.py": "def decide_kv_cache(**kw):\n    return kw\n",
        f"{DECISIONS}/decide.py": "def decide(facts):\n    memory = lambda: 1\n    return decide_kv_cache(a=memory)\n",
        "planning/checks/command.py": "from specdraft.planning.decisions.kv_cache import decide_kv_cache\n\n\n"
                                      "def plan_findings(facts, decided):\n"
                                      "    return decide_kv_cache(profile=facts.profile).attention_backend\n",
    })
    assert decided_twice(root, {"kv_cache": ("decide_kv_cache",)}) == {
        "decide_kv_cache": {f"{DECISIONS}/decide.py:decide", "planning/checks/command.py:plan_findings"}}
    assert decided_twice(root, {"kv_cache": ("decide_kv_cache", "never_called")})["never_called"] == set()


def test_a_flag_that_predicts_the_backend_itself_is_reported(tmp_path):
    root = _synthetic_package(tmp_path, {
        f"{DECISIONS}/attention_backends.py": "def predict_backends(rule):\n    return rule\n",
        f"{DECISIONS}/kv_cache.py": "from specdraft.planning.decisions.attention_backends import predict_backends\n",
        "planning/flags/serve_flags.py": "import specdraft.planning.decisions.attention_backends as backends\n\n\n"
                                         "def attention_backend_flag(facts, decided):\n"
                                         "    return backends.predict_backends(facts.rule).target\n",
    })
    values = {"attention backend": ({"attention_backends", "kv_cache"}, {"predict_backends"})}
    assert used_outside_owners(root, values) == {
        ("attention backend", "planning/flags/serve_flags.py", "predict_backends")}


def test_a_check_that_resolves_the_method_or_the_hybrid_kv_rule_itself_is_reported(tmp_path):
    root = _synthetic_package(tmp_path, {
        f"{DECISIONS}/speculative_method.py": "def resolve_method(method, draft):\n    return method\n",
        f"{DECISIONS}/hybrid_kv.py": "def needs_hybrid_manager_disabled(target, draft):\n    return None\n",
        f"{DECISIONS}/decide.py": "from specdraft.planning.decisions.speculative_method import resolve_method\n",
        "planning/checks/drafter.py":
            "from specdraft.planning.decisions.hybrid_kv import needs_hybrid_manager_disabled\n"
            "from specdraft.planning.decisions import speculative_method\n\n\n"
            "def check_measured_loss(target, speculative, draft):\n"
            "    return speculative_method.resolve_method(speculative.method, draft) == 'draft_model'\n\n\n"
            "def check_kv_cache_manager(target, draft, disabled):\n"
            "    return needs_hybrid_manager_disabled(target, draft) and not disabled\n",
        "planning/checks/reads_decisions.py": "def check(facts, decided):\n"
                                               "    return decided.method, decided.hybrid_kv_reason\n",
    })
    values = {name: VALUES[name] for name in ("method", "hybrid KV")}
    assert used_outside_owners(root, values) == {
        ("method", "planning/checks/drafter.py", "resolve_method"),
        ("hybrid KV", "planning/checks/drafter.py", "needs_hybrid_manager_disabled")}
