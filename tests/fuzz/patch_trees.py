"""Small vLLM trees for the patch commands: the hotfixed modules of a real release, then one thing broken."""

from __future__ import annotations

import functools
import json
import random
import shutil
from pathlib import Path

from specdraft.patching import catalog
from tools.release_trees import release_tree

RELEASE = "0.26.0"  # every hotfix is pending on it
_VERSION_TEXTS = ("garbage", "", "1.2.3.4.5.6", "0.26.0+local", "\u0663", "v", "None", "0.26.0 ", "0.26.0\n0.27.0")


@functools.cache
def pristine_tree() -> Path:
    """The unpacked release (downloaded once into specdraft's cache); resolve before the cache is redirected."""
    return release_tree(RELEASE)


def _modules() -> list[str]:
    names = {"vllm"}
    for entry in catalog.select(None):
        names.update(entry.modules)
        names.update(entry.context)
    return sorted(names)


def copy_hotfixed_modules(root: Path) -> Path:
    """A site-packages-shaped copy holding the package, its metadata and every module a hotfix reads."""
    source = pristine_tree()
    for module in _modules():
        relative = Path(*module.split("."))
        relative = relative / "__init__.py" if module == "vllm" else relative.with_suffix(".py")
        if (source / relative).is_file():
            (root / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source / relative, root / relative)
    for dist_info in source.glob("*.dist-info"):
        shutil.copytree(dist_info, root / dist_info.name)
    return root


def _hotfixed_files(root: Path) -> list[Path]:
    return sorted(path for path in (root / "vllm").rglob("*.py") if path.name != "__init__.py")


def break_tree(rng: random.Random, breakage: str, root: Path, case: Path, outside: Path) -> list[str]:
    """Break ``root`` as ``breakage`` says; returns the options that point a patch command at it."""
    target = ["--vllm-root", str(root)]
    module = rng.choice(_hotfixed_files(root))
    if breakage == "version":
        for dist_info in root.glob("*.dist-info"):
            shutil.rmtree(dist_info)
        (root / "vllm" / "_version.py").write_text(f"__version__ = version = {rng.choice(_VERSION_TEXTS)!r}\n")
    elif breakage == "module bytes":
        module.write_bytes(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200))))
    elif breakage == "module truncated":
        data = module.read_bytes()
        module.write_bytes(data[:rng.randrange(len(data))])
    elif breakage == "module empty":
        module.write_bytes(b"")
    elif breakage == "symlink outside":
        shared = outside / f"{case.name}-{module.name}"
        shutil.move(module, shared)
        module.symlink_to(shared)
    elif breakage == "journal":
        _write_broken_journal(rng, root, module)
    elif breakage == "metadata":
        (metadata,) = root.glob("*.dist-info/METADATA")
        text = metadata.read_text()
        metadata.write_text(rng.choice([text.replace("Version: ", "Version: x"), text.replace("Name: vllm", "Name:"),
                                        "", "\x00\x01", text.replace(RELEASE, "")]))
    elif breakage == "no package":
        (root / "vllm" / "__init__.py").unlink()
    elif breakage == "root is a file":
        target = ["--vllm-root", str(module)]
    elif breakage == "unknown id":
        target += ["--only", rng.choice(["", "kv", "KV-SHARING-UNIFORM-SPECS", "../x", "kv-sharing-uniform-specs "])]
    elif breakage == "root path":
        target = ["--vllm-root", rng.choice([str(case / ("x" * 300)), str(case / "missing"), "", "/dev/null", "~nobody/x"])]
    elif breakage == "python":
        target = ["--python", rng.choice(["/bin/true", "/bin/echo", str(case), str(module), str(case / "missing"), ""])]
    return target


def _write_broken_journal(rng: random.Random, root: Path, module: Path) -> None:
    journal = root / "vllm" / ".specdraft" / "journal.json"
    journal.parent.mkdir(parents=True)
    relative = module.relative_to(root).as_posix()
    record = {"pristine_sha256": "0" * 64, "patched_sha256": "1" * 64, "backup": "x.orig",
              "hotfixes": [entry.id for entry in catalog.select(None)], "vllm_version": RELEASE, "applied_at": ""}
    field = rng.choice([*record, None])
    if field is not None:
        record[field] = rng.choice([None, 1, [], {}, "../../outside", ""])
    document = rng.choice([{"files": {relative: record}}, {"files": []}, [], {"files": {relative: None}}, "x"])
    journal.write_text(json.dumps(document) if rng.random() < 0.8 else json.dumps(document)[:-1])
