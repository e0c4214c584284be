"""Which NVFP4 MoE kernel one vLLM release picks on its own, per GPU compute capability, read from its source.

vLLM's ``select_nvfp4_moe_backend`` (``vllm/model_executor/layers/fused_moe/oracle/nvfp4.py``) walks its
``AVAILABLE_BACKENDS`` in order and takes the first whose kernel class answers ``is_supported_config``; that
answer is the class's ``_supports_current_device``, ``_supports_activation`` and ``_supports_quant_scheme``
(``modular_kernel.py``). This module evaluates those three methods statically, on the AST of the release
(vLLM is never imported), for one compute capability, the activation Gemma 4's MoE passes
(``activation=`` in ``models/gemma4.py``) and ModelOpt NVFP4's weight / activation keys (``kNvfp4Static``
with ``kNvfp4Dynamic``: W4A4, what NVFP4 checkpoints declare).

What the evaluation assumes, and what it leaves out:
- the packages the release's wheel requires are installed (``has_flashinfer_*()``, ``has_humming()`` are
  true: ``flashinfer-python`` and ``humming-kernels`` are ``Requires-Dist`` of the CUDA wheels), no
  ``VLLM_*`` environment override is set, one GPU (no expert parallelism), LoRA off;
- ``prioritize_humming`` moves Humming directly ahead of Marlin where the capability is in
  ``_HUMMING_PREFERRED_CAPABILITIES``, as vLLM does;
- routing method, shape and parallel-config checks are not evaluated: the SM90/SM12x candidates (FlashInfer
  CUTLASS, vLLM CUTLASS, Marlin) are modular kernels, which accept any routing, and they accept one GPU
  without expert parallelism in 0.19.0-0.33.0; a method this reader cannot evaluate raises ``Unreadable``,
  so a release whose selection changed shape fails its test instead of guessing.
"""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path
from types import SimpleNamespace

from specdraft.planning.facts.vllm_arguments import _parse


class Unreadable(Exception):
    """The release's kernel selection has a construct this reader does not evaluate."""


_FUSED_MOE = Path("model_executor") / "layers" / "fused_moe"
_ORACLE = _FUSED_MOE / "oracle" / "nvfp4.py"
_HUMMING_PRIORITY = Path("model_executor") / "layers" / "quantization" / "utils" / "humming" / "priority.py"
_QUANT_UTILS = Path("model_executor") / "layers" / "quantization" / "utils" / "quant_utils.py"
# ModelOpt NVFP4 (W4A4): the weight and activation keys its MoE method passes to select_nvfp4_moe_backend.
_NVFP4_KEYS = ("kNvfp4Static", "kNvfp4Dynamic")
_KERNEL_METHODS = ("_supports_current_device", "_supports_activation", "_supports_quant_scheme")


class _Platform:
    """``current_platform`` of a CUDA GPU with compute capability ``capability`` (e.g. 121 for SM 12.1)."""

    def __init__(self, capability: int):
        self.capability = capability

    def call(self, method: str, args: list) -> object:
        value = args[0] if args else None
        if isinstance(value, tuple):
            value = value[0] * 10 + value[1]
        answers = {
            "is_cuda": lambda: True, "is_cuda_alike": lambda: True, "is_rocm": lambda: False,
            "is_xpu": lambda: False, "is_cpu": lambda: False, "supports_fp8": lambda: self.capability >= 89,
            "fp8_dtype": lambda: "torch.float8_e4m3fn",
            "is_device_capability": lambda: self.capability == value,
            "is_device_capability_family": lambda: self.capability // 10 == value // 10,
            "has_device_capability": lambda: self.capability >= value,
        }
        if method not in answers:
            raise Unreadable(f"current_platform.{method}()")
        return answers[method]()


class _Source:
    """The fused-MoE package of one release and the quantization keys (``quant_utils.py``): classes, module-level
    functions and constants (``Name = ...`` and ``Class.NAME = ...``), parsed once."""

    def __init__(self, package: Path):
        self.classes: dict[str, ast.ClassDef] = {}
        self.functions: dict[str, ast.FunctionDef] = {}
        self.constants: dict[str, ast.expr] = {}
        for path in [package / _QUANT_UTILS, *sorted((package / _FUSED_MOE).rglob("*.py"))]:
            tree = _parse(path)
            for node in tree.body if tree is not None else ():
                if isinstance(node, ast.ClassDef):
                    self.classes.setdefault(node.name, node)
                elif isinstance(node, ast.FunctionDef):
                    self.functions.setdefault(node.name, node)
                elif isinstance(node, ast.Assign) and len(node.targets) == 1:
                    self.constants.setdefault(ast.unparse(node.targets[0]), node.value)

    def fields(self, class_name: str) -> list[tuple[str, ast.expr | None]]:
        """A dataclass's (or named tuple's) fields and defaults, in order, its first base's when it has none."""
        node = self.classes[class_name]
        found = [(item.target.id, item.value) for item in node.body if isinstance(item, ast.AnnAssign)
                 and isinstance(item.target, ast.Name) and "ClassVar" not in ast.unparse(item.annotation)]
        if not found and node.bases and ast.unparse(node.bases[0]) in self.classes:
            return self.fields(ast.unparse(node.bases[0]))
        return found

    def method(self, class_name: str, name: str) -> ast.FunctionDef:
        """``name`` as ``class_name`` resolves it through its bases (``mk.X`` is ``X``)."""
        node = self.classes.get(class_name)
        if node is None:
            raise Unreadable(f"class {class_name}")
        for item in node.body:
            if isinstance(item, ast.FunctionDef) and item.name == name:
                return item
        for base in node.bases:
            try:
                return self.method(ast.unparse(base).rsplit(".", 1)[-1], name)
            except Unreadable:
                continue
        raise Unreadable(f"{class_name}.{name}")


class _Evaluator:
    """Evaluates a kernel method's body: the few statements and expressions those methods are made of."""

    def __init__(self, source: _Source, platform: _Platform):
        self.source, self.platform = source, platform

    def run(self, function: ast.FunctionDef, args: dict[str, object]) -> object:
        scope = dict(args)
        for statement in function.body:
            done, value = self.statement(statement, scope)
            if done:
                return value
        return None

    def statement(self, node: ast.stmt, scope: dict) -> tuple[bool, object]:
        if isinstance(node, ast.Return):
            return True, self.value(node.value, scope)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            return False, None
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(_target(node), ast.Name):
            scope[_target(node).id] = self.value(node.value, scope)
            return False, None
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and isinstance(node.op, ast.Add):
            scope[node.target.id] = scope[node.target.id] + self.value(node.value, scope)
            return False, None
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and ast.unparse(node.value.func).endswith(".append"):
            scope[ast.unparse(node.value.func.value)].append(self.value(node.value.args[0], scope))
            return False, None
        if isinstance(node, ast.If):
            for inner in node.body if self.value(node.test, scope) else node.orelse:
                done, value = self.statement(inner, scope)
                if done:
                    return True, value
            return False, None
        raise Unreadable(ast.unparse(node).splitlines()[0])

    def value(self, node: ast.expr | None, scope: dict) -> object:
        if node is None or isinstance(node, ast.Constant):
            return None if node is None else node.value
        if isinstance(node, ast.Name):
            return self.name(node.id, scope)
        if isinstance(node, ast.Attribute) and ast.unparse(node.value) == "MoEActivation":
            return node.attr
        if isinstance(node, ast.Attribute):
            return self.attribute(node, scope)
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            items = [self.value(item, scope) for item in node.elts]
            return tuple(items) if isinstance(node, ast.Tuple) else items
        if isinstance(node, ast.BoolOp):
            values = (self.value(item, scope) for item in node.values)
            return all(values) if isinstance(node.op, ast.And) else any(values)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Not, ast.USub)):
            operand = self.value(node.operand, scope)
            return (not operand) if isinstance(node.op, ast.Not) else -operand
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            return self.compare(node.ops[0], self.value(node.left, scope), self.value(node.comparators[0], scope))
        if isinstance(node, ast.Call):
            return self.call(node, scope)
        raise Unreadable(ast.unparse(node))

    def name(self, name: str, scope: dict) -> object:
        if name in scope:
            return scope[name]
        if name == "current_platform":
            return self.platform
        if name in self.source.constants:
            return self.value(self.source.constants[name], {})
        if name.startswith("k") and name[1:2].isupper():
            return name  # a QuantKey defined outside quant_utils.py: equal only to itself
        raise Unreadable(name)

    def attribute(self, node: ast.Attribute, scope: dict) -> object:
        """``key.scale2.static`` of a record, ``GroupShape.PER_TOKEN`` of a constant, ``torch.float32`` as text."""
        text = ast.unparse(node)
        if text in self.source.constants:
            return self.value(self.source.constants[text], {})
        if isinstance(node.value, ast.Name) and node.value.id not in scope and node.value.id not in self.source.constants:
            return text  # a module's member (torch.float32, scalar_types.uint4b8, GroupShape.PER_TOKEN): as text
        owner = self.value(node.value, scope)
        if isinstance(owner, SimpleNamespace) and hasattr(owner, node.attr):
            return getattr(owner, node.attr)
        raise Unreadable(text)

    @staticmethod
    def compare(op: ast.cmpop, left: object, right: object) -> bool:
        if isinstance(op, ast.In):
            return left in right
        if isinstance(op, ast.NotIn):
            return left not in right
        if isinstance(op, (ast.Eq, ast.Is)):
            return left == right
        if isinstance(op, (ast.NotEq, ast.IsNot)):
            return left != right
        raise Unreadable(type(op).__name__)

    def call(self, node: ast.Call, scope: dict) -> object:
        func = node.func
        args = [self.value(arg, scope) for arg in node.args]
        if isinstance(func, ast.Attribute) and isinstance(self.value(func.value, scope), _Platform):
            return self.platform.call(func.attr, args)
        name = ast.unparse(func)
        if name.startswith("has_"):
            return True  # a package the release's wheel requires (see the module docstring)
        if name in ("frozenset", "set", "list", "tuple"):
            return list(args[0]) if args else []
        if name == "replace" and isinstance(args[0], SimpleNamespace):
            return SimpleNamespace(**{**vars(args[0]), **{k.arg: self.value(k.value, scope) for k in node.keywords}})
        if name in self.source.classes:
            return self.record(name, args, {k.arg: self.value(k.value, scope) for k in node.keywords})
        if name in self.source.functions:
            function = self.source.functions[name]
            return self.run(function, dict(zip((a.arg for a in function.args.args), args)))
        raise Unreadable(f"{name}()")


    def record(self, class_name: str, args: list, keywords: dict) -> SimpleNamespace:
        """An instance of a dataclass (``QuantKey``, ``ScaleDesc``, ``GroupShape``) as its fields' values."""
        fields = self.source.fields(class_name)
        if not fields or len(args) > len(fields):
            raise Unreadable(f"{class_name}(...)")
        values = {name: self.value(default, {}) for name, default in fields}
        values.update(zip((name for name, _ in fields), args))
        values.update(keywords)
        return SimpleNamespace(**values)


def _target(node: ast.Assign | ast.AnnAssign) -> ast.expr:
    return node.targets[0] if isinstance(node, ast.Assign) else node.target


def _oracle_functions(package: Path) -> tuple[ast.FunctionDef, ast.FunctionDef]:
    """``select_nvfp4_moe_backend`` and ``backend_to_kernel_cls`` of the release's NVFP4 MoE oracle."""
    tree = _parse(package / _ORACLE)
    found = {n.name: n for n in (tree.body if tree else ()) if isinstance(n, ast.FunctionDef)}
    if "select_nvfp4_moe_backend" not in found or "backend_to_kernel_cls" not in found:
        raise Unreadable(f"{_ORACLE}: select_nvfp4_moe_backend / backend_to_kernel_cls")
    return found["select_nvfp4_moe_backend"], found["backend_to_kernel_cls"]


def auto_order(select: ast.FunctionDef) -> list[str]:
    """The backends of the first ``AVAILABLE_BACKENDS = [...]`` list, in order."""
    for node in ast.walk(select):
        if (isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "AVAILABLE_BACKENDS"
                and isinstance(node.value, ast.List)):
            return [ast.unparse(item).rsplit(".", 1)[-1] for item in node.value.elts]
    raise Unreadable("AVAILABLE_BACKENDS")


def kernel_classes(backend_to_kernel_cls: ast.FunctionDef) -> dict[str, list[str]]:
    """backend -> the kernel classes ``backend_to_kernel_cls`` returns for it, in order."""
    classes: dict[str, list[str]] = {}
    for node in ast.walk(backend_to_kernel_cls):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Compare):
            backend = ast.unparse(node.test.comparators[0]).rsplit(".", 1)[-1]
            returns = [r.value for s in node.body for r in ast.walk(s) if isinstance(r, ast.Return)]
            classes.setdefault(backend, [ast.unparse(e) for r in returns if isinstance(r, ast.List) for e in r.elts])
    return classes


def _humming_preferred(package: Path) -> set[int]:
    tree = _parse(package / _HUMMING_PRIORITY)
    for node in tree.body if tree is not None else ():
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "_HUMMING_PREFERRED_CAPABILITIES":
            return {c.value for c in ast.walk(node.value) if isinstance(c, ast.Constant) and isinstance(c.value, int)}
    raise Unreadable(f"{_HUMMING_PRIORITY}: _HUMMING_PREFERRED_CAPABILITIES")


def _prioritized(order: list[str], select: ast.FunctionDef, package: Path, capability: int) -> list[str]:
    """``order`` after ``prioritize_humming`` where the release calls it: Humming moved right ahead of Marlin."""
    calls = any(isinstance(n, ast.Call) and ast.unparse(n.func) == "prioritize_humming" for n in ast.walk(select))
    if not calls or "HUMMING" not in order or "MARLIN" not in order or capability not in _humming_preferred(package):
        return order
    moved = [b for b in order if b != "HUMMING"]
    moved.insert(moved.index("MARLIN"), "HUMMING")
    return moved if order.index("HUMMING") > order.index("MARLIN") else order


def gemma4_moe_activation(package: Path) -> str:
    """The ``MoEActivation`` member Gemma 4's experts run (``activation="gelu_tanh"`` -> ``GELU_TANH``)."""
    tree = _parse(package / "model_executor" / "models" / "gemma4.py")
    values = {kw.value.value for node in ast.walk(tree) if isinstance(node, ast.Call) for kw in node.keywords
              if kw.arg == "activation" and isinstance(kw.value, ast.Constant)} if tree is not None else set()
    enum = _cached_source(package).classes.get("MoEActivation")
    members = {item.value.value: item.targets[0].id for item in (enum.body if enum else ())
               if isinstance(item, ast.Assign) and isinstance(item.value, ast.Constant)}
    if len(values) != 1 or next(iter(values)) not in members:
        raise Unreadable(f"models/gemma4.py: the experts' activation ({sorted(values)}) as a MoEActivation")
    return members[values.pop()]


def nvfp4_pick(package: Path, capability: int) -> str:
    """The NVFP4 MoE backend the release at ``package`` picks for Gemma 4 on a GPU of ``capability``
    (``"none"`` when no backend supports it: vLLM raises)."""
    select, to_classes = _oracle_functions(package)
    source = _cached_source(package)
    evaluator = _Evaluator(source, _Platform(capability))
    weight, activation_key = (evaluator.name(key, {}) for key in _NVFP4_KEYS)
    activation = gemma4_moe_activation(package)
    classes = kernel_classes(to_classes)
    for backend in _prioritized(auto_order(select), select, package, capability):
        for name in classes.get(backend, []):
            if _supported(evaluator, source, name, activation, weight, activation_key):
                return backend
    return "none"


def _supported(evaluator: _Evaluator, source: _Source, name: str, activation: str, weight: object,
               activation_key: object) -> bool:
    device, act, scheme = (source.method(name, method) for method in _KERNEL_METHODS)
    return bool(evaluator.run(device, {}) and evaluator.run(act, {act.args.args[0].arg: activation})
                and evaluator.run(scheme, dict(zip((a.arg for a in scheme.args.args), (weight, activation_key)))))


@lru_cache(maxsize=8)
def _cached_source(package: Path) -> _Source:
    return _Source(package)

