"""One cache root: $SPECDRAFT_CACHE when set and not empty, else ~/.cache/specdraft; every part uses it."""

from pathlib import Path

import pytest

from specdraft.cache import cache_root
from specdraft.patching.status_memo import StatusMemo
from specdraft.planning.facts.chat_template import _cache_dir as template_check_dir
from specdraft.testbed.vllm_env import vllm_cpu_venv_dir


@pytest.mark.parametrize("value", ["", None])
def test_an_empty_or_unset_variable_means_the_home_cache(monkeypatch, value):
    if value is None:
        monkeypatch.delenv("SPECDRAFT_CACHE", raising=False)
    else:
        monkeypatch.setenv("SPECDRAFT_CACHE", value)
    home = Path.home() / ".cache" / "specdraft"
    assert cache_root() == home
    # an empty variable once put the patch-status memo in the working directory
    assert StatusMemo().path == home / "patch-status.json"
    assert template_check_dir() == home / "template-checks"
    assert vllm_cpu_venv_dir().parent == home / "venvs"


def test_a_set_variable_is_used_with_its_tilde_expanded(monkeypatch):
    monkeypatch.setenv("SPECDRAFT_CACHE", "~/elsewhere")
    assert cache_root() == Path.home() / "elsewhere"
    assert StatusMemo().path == Path.home() / "elsewhere" / "patch-status.json"
