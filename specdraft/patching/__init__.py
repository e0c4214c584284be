"""The patch engine: apply, verify, revert and dry-run specdraft's hotfixes to vLLM with libcst.

It edits *another* interpreter's vLLM and never imports vLLM (or torch) itself::

    from specdraft.patching import locate, status, apply, verify, revert, diff, list_hotfixes

    install = locate(python="/opt/venv/bin/python")      # or vllm_root=DIR, or neither
    for report in apply(install):                         # one HotfixReport per hotfix
        print(report.id, report.status, report.outcome, report.file)

Every report has ``id``, ``status`` (``Status``: pending, applied, fixed-upstream, drifted,
not-applicable), ``file``, ``vllm_version`` and ``detail``; ``apply``/``verify``/``revert`` also
say what they did in ``outcome``, ``diff`` carries the unified diff, and ``status`` sets
``changed_since_apply`` on an applied hotfix whose file changed since apply. Which hotfixes a
pairing needs is ``needed_hotfixes(traits)`` (see ``specdraft.patching.hotfix``). Bad input (no
vLLM, a missing interpreter, an unknown id, a read-only, symlinked or unparsable file, a version
that does not parse) raises ``UserError``; an unsafe state is a report with status ``drifted`` or
outcome ``refused``, never an exception.
"""

from specdraft.patching.catalog import CatalogEntry, list_hotfixes, needed_hotfixes
from specdraft.patching.engine import apply, diff, revert, status, verify
from specdraft.patching.hotfix import Fixture, Hotfix, Inspection, Trait
from specdraft.patching.locate import VllmInstall, locate
from specdraft.patching.reports import HotfixReport, Outcome, Status

__all__ = [
    "CatalogEntry",
    "Fixture",
    "Hotfix",
    "HotfixReport",
    "Inspection",
    "Outcome",
    "Status",
    "Trait",
    "VllmInstall",
    "apply",
    "diff",
    "list_hotfixes",
    "locate",
    "needed_hotfixes",
    "revert",
    "status",
    "verify",
]
