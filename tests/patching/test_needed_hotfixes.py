"""What each hotfix declares it is for (``needed_for``, ``failure``), as planning asks it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from specdraft.patching import Trait, catalog, list_hotfixes, needed_hotfixes

from .conftest import HYBRID_OFF_HOTFIXES, REPO

MTP_HOTFIX = "gemma4-mtp-shares-backbone-embeddings"


def _ids(entries) -> list[str]:
    return [entry.id for entry in entries]


def test_a_pairing_with_the_hybrid_manager_off_needs_the_kv_sharing_and_drafter_hotfixes():
    assert _ids(needed_hotfixes({Trait.HYBRID_KV_CACHE_MANAGER_OFF})) == HYBRID_OFF_HOTFIXES


def test_an_mtp_pairing_needs_only_the_embedding_hotfix():
    assert _ids(needed_hotfixes({Trait.GEMMA4_MTP_ASSISTANT})) == [MTP_HOTFIX]


def test_a_pairing_with_both_traits_needs_every_hotfix_of_either():
    both = needed_hotfixes({Trait.HYBRID_KV_CACHE_MANAGER_OFF, Trait.GEMMA4_MTP_ASSISTANT})
    assert _ids(both) == sorted([*HYBRID_OFF_HOTFIXES, MTP_HOTFIX])


def test_a_pairing_without_traits_needs_no_hotfix():
    assert needed_hotfixes(set()) == ()
    (mtp,) = needed_hotfixes({Trait.GEMMA4_MTP_ASSISTANT})
    assert not mtp.is_needed_for({Trait.HYBRID_KV_CACHE_MANAGER_OFF})


def test_trait_values_are_accepted_and_an_unknown_trait_is_refused():
    assert _ids(needed_hotfixes({"gemma4-mtp-assistant"})) == [MTP_HOTFIX]
    with pytest.raises(ValueError, match="kv-sharing"):
        needed_hotfixes({"kv-sharing"})


def test_declarations_read_without_running_the_file_are_the_classes_own():
    for entry in catalog.entries():
        hotfix = entry.load()
        assert (entry.needed_for, entry.failure) == (frozenset(hotfix.needed_for), hotfix.failure), entry.id


def test_every_failure_is_one_line_naming_the_error():
    for hotfix in list_hotfixes():
        assert "\n" not in hotfix.failure and ("Error" in hotfix.failure or "error" in hotfix.failure), hotfix.id


def test_needed_hotfixes_answers_without_importing_libcst():
    code = ("import sys; from specdraft.patching import Trait, needed_hotfixes; "
            "assert needed_hotfixes({Trait.GEMMA4_MTP_ASSISTANT}); print('libcst' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                          env={"PYTHONPATH": str(REPO), "PATH": ""})
    assert (done.returncode, done.stdout.strip()) == (0, "False"), done.stderr


@pytest.fixture
def catalog_in(tmp_path, monkeypatch):
    """``catalog_in({"name": source})`` -> the entries of a catalog made of those files."""

    def entries(files: dict[str, str]):
        for name, source in files.items():
            (tmp_path / f"{name}.py").write_text(source)
        monkeypatch.setattr(catalog, "catalog_dir", lambda: tmp_path)
        catalog.entries.cache_clear()
        return catalog.entries()

    yield entries
    catalog.entries.cache_clear()


_HOTFIX_FILE = '''\
from specdraft.patching.hotfix import Hotfix, Trait


class Example(Hotfix):
    id = "example"
    needed_for = NEEDED_FOR
    failure = "engine start-up raises KeyError"
    versions = ">=0.19.0"
    function = "f"
    modules = ("vllm.x",)
'''


def test_a_hotfix_file_declaring_what_it_is_for_is_read_without_running_it(catalog_in):
    (entry,) = catalog_in({"example": _HOTFIX_FILE.replace("NEEDED_FOR", "(Trait.MOE_PER_EXPERT_WEIGHTS,)")})
    assert entry.needed_for == {Trait.MOE_PER_EXPERT_WEIGHTS} and entry.context == ()
    assert _ids(needed_hotfixes({Trait.MOE_PER_EXPERT_WEIGHTS})) == ["example"]


@pytest.mark.parametrize("needed_for, refusal", [
    ("()", "declares needed_for"),
    ("(Trait.KV_SHARING,)", "no trait Trait.KV_SHARING"),
    ('("kv-sharing",)', "'kv-sharing' is not a valid Trait"),
])
def test_a_hotfix_file_that_does_not_say_what_it_is_for_is_refused(catalog_in, needed_for, refusal):
    with pytest.raises(TypeError, match=refusal):
        catalog_in({"example": _HOTFIX_FILE.replace("NEEDED_FOR", needed_for)})
