"""Model Runner V2 leaves the draft's one-token CUDA graphs out of a K schedule's graph sizes.

With a K schedule (`num_speculative_tokens_per_batch_size`), `CudaGraphManager._init_candidates`
captures decode graphs for every K of the schedule: their query length is `K + (decode_query_len -
num_speculative_tokens)`. That holds for the target's manager (`decode_query_len` = largest K + 1),
but the autoregressive speculator (MTP, EAGLE, EAGLE-3) builds a second manager for its draft
decodes with `decode_query_len=1`: there the sum is `K + 1 - largest K`, zero or less for every K of
the schedule but the largest, and `round_up(num_tokens, 0)` raises `ZeroDivisionError` while the
engine initialises its KV cache. Seen on an H200 with vLLM 0.26.0, the 31B-shaped MTP pair and
`VLLM_USE_V2_MODEL_RUNNER=1` (docs/gpu/README.md section 7.3). vLLM 0.32.0 skips the schedule in a
manager whose query length does not exceed the largest K, the edit made here.

| vLLM | V2 captures a schedule's K | guard on `decode_query_len` | status |
|---|---|---|---|
| 0.19.0 - 0.24.0 | no | - | not-applicable |
| 0.25.0 - 0.31.0 | yes | no | pending |
| 0.32.0 - 0.33.0 | yes | yes | fixed-upstream |

On V1 (`VLLM_USE_V2_MODEL_RUNNER=0`) a schedule never reaches this code: vLLM 0.26.0 switches V1 to
PIECEWISE graphs instead.
"""

from __future__ import annotations

from types import ModuleType

import libcst as cst

from specdraft.patching.anchors import find_all, normalised, same_code
from specdraft.patching.hotfix import Fixture, Hotfix, Inspection, Status, Trait

_METHOD = "_init_candidates"
_DYNAMIC = "uses_dynamic_speculative_decoding()"
_GUARD = "self.decode_query_len > self.vllm_config.num_speculative_tokens"
_OFFSET = "num_new_sampled_tokens_per_step = self.decode_query_len - self.vllm_config.num_speculative_tokens"


def _method(cls: cst.ClassDef) -> cst.FunctionDef | None:
    found = [s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value == _METHOD]
    return found[0] if len(found) == 1 else None


def _schedule_branches(method: cst.FunctionDef) -> list[cst.If]:
    """The ``if`` statements that ask whether a K schedule is set."""
    return find_all(method, cst.If, lambda branch: _DYNAMIC in cst.Module(body=[]).code_for_node(branch.test))


def _guarded(branch: cst.If) -> bool:
    """Whether the branch's test also requires the manager's query length to exceed the largest K."""
    guard = normalised(_GUARD)
    return any(normalised(comparison) == guard for comparison in find_all(branch.test, cst.Comparison))


def _subtracts_largest_k(branch: cst.If) -> bool:
    return bool(find_all(branch.body, cst.SimpleStatementLine, lambda line: same_code(line, _OFFSET)))


# The fixtures' class, cut down from vLLM 0.26.0 (the branch as released) and 0.32.0 (upstream's guard).
_AS_RELEASED = """\
class CudaGraphManager:
    def __init__(self, vllm_config, decode_query_len):
        self.vllm_config = vllm_config
        self.decode_query_len = decode_query_len
        self._init_candidates()

    def _init_candidates(self) -> None:
        speculative_config = self.vllm_config.speculative_config
        if (
            speculative_config
            and speculative_config.uses_dynamic_speculative_decoding()
        ):
            num_spec_per_batch_size = (
                speculative_config.num_speculative_tokens_per_batch_size
            )
            num_new_sampled_tokens_per_step = (
                self.decode_query_len - self.vllm_config.num_speculative_tokens
            )
            decode_query_lens = [
                x[2] + num_new_sampled_tokens_per_step for x in num_spec_per_batch_size
            ]
        else:
            decode_query_lens = [self.decode_query_len]
        self.decode_query_lens = decode_query_lens
"""

_AFTER_THE_FIX = _AS_RELEASED.replace("""\
        speculative_config = self.vllm_config.speculative_config
        if (
            speculative_config
            and speculative_config.uses_dynamic_speculative_decoding()
        ):""", """\
        speculative_config = self.vllm_config.speculative_config
        # specdraft-hotfix: v2-schedule-drafter-graphs (a draft's one-token graphs take no K schedule)
        if (
            speculative_config
            and speculative_config.uses_dynamic_speculative_decoding() and self.decode_query_len > self.vllm_config.num_speculative_tokens
        ):""")

_UPSTREAM = _AS_RELEASED.replace("""\
            and speculative_config.uses_dynamic_speculative_decoding()
        ):""", """\
            and speculative_config.uses_dynamic_speculative_decoding()
            and self.decode_query_len > self.vllm_config.num_speculative_tokens
        ):""")


class V2ScheduleDrafterGraphs(Hotfix):
    id = "v2-schedule-drafter-graphs"
    title = "Model Runner V2 captures a K schedule's graph sizes only where the query length exceeds the largest K"
    why = (
        "the autoregressive speculator's draft-decode graph manager (decode_query_len=1) derives each schedule "
        "K's query length as K + 1 - largest K, zero for the next K down, and round_up divides by it; "
        "upstream: the decode_query_len guard in CudaGraphManager._init_candidates, from vLLM 0.32.0"
    )
    needed_for = (Trait.K_SCHEDULE_ON_MODEL_RUNNER_V2,)
    failure = ("engine start-up raises ZeroDivisionError in CudaGraphManager._init_candidates (round_up) while "
               "the speculator builds its draft-decode CUDA graph manager")
    versions = ">=0.25.0"  # 0.25.0 taught V2's graph manager the K schedule
    function = "CudaGraphManager"
    modules = ("vllm.v1.worker.gpu.cudagraph_utils",)

    def inspect(self, function, module: cst.Module, context) -> Inspection:
        if not isinstance(function, cst.ClassDef):
            return Inspection(Status.DRIFTED, "CudaGraphManager is no longer a class")
        method = _method(function)
        if method is None:
            return Inspection(Status.DRIFTED, f"CudaGraphManager.{_METHOD} not found once")
        branches = _schedule_branches(method)
        if len(branches) != 1:
            return Inspection(Status.DRIFTED, f"expected one `if` on {_DYNAMIC} in {_METHOD}, found {len(branches)}")
        if _guarded(branches[0]):
            return Inspection(Status.APPLIED, "a manager whose query length does not exceed the largest K "
                                              "captures no schedule")
        if not _subtracts_largest_k(branches[0]):
            return Inspection(Status.DRIFTED, "the schedule branch no longer derives the query length as "
                                              "decode_query_len - num_speculative_tokens: review it")
        return Inspection(Status.PENDING, "every manager adds K - largest K to its query length: a draft's "
                                          "one-token manager gets zero")

    def rewrite(self, function: cst.ClassDef) -> cst.ClassDef:
        (branch,) = _schedule_branches(_method(function))
        test = branch.test
        guarded = cst.BooleanOperation(left=test.with_changes(lpar=[], rpar=[]), operator=cst.And(),
                                       right=cst.parse_expression(_GUARD), lpar=test.lpar, rpar=test.rpar)
        fixed = branch.with_changes(test=guarded, leading_lines=[
            *branch.leading_lines, self.marker_comment("a draft's one-token graphs take no K schedule")])
        return function.deep_replace(branch, fixed)

    @staticmethod
    def probe(module: ModuleType) -> None:
        from types import SimpleNamespace

        from vllm.config import CUDAGraphMode

        largest_k = 3
        schedule = SimpleNamespace(uses_dynamic_speculative_decoding=lambda: True,
                                   num_speculative_tokens_per_batch_size=[(1, 4, 3), (5, 8, 2)])
        # Only the method under test runs: __init__ would need a device and a whole engine configuration.
        manager = module.CudaGraphManager.__new__(module.CudaGraphManager)
        manager.__dict__.update(
            vllm_config=SimpleNamespace(speculative_config=schedule, num_speculative_tokens=largest_k),
            compilation_config=SimpleNamespace(cudagraph_capture_sizes=[1, 2, 4, 8], max_cudagraph_capture_size=8),
            cudagraph_mode=CUDAGraphMode.FULL_DECODE_ONLY, decode_query_len=1, max_num_reqs=8,
            lora_capture_cases=[0], use_breakable_cg=False, varlen_decode=False, ubatch_runner=None,
            _candidates={}, _capture_descs={},
        )
        try:
            manager._init_candidates()
        except ZeroDivisionError as failed:
            raise AssertionError(f"a draft's one-token manager with a K schedule 3, 2 failed: {failed!r}") from None
        lengths = {desc.uniform_token_count for descs in manager._capture_descs.values() for desc in descs}
        assert lengths <= {1, None}, f"the one-token manager captured query lengths {sorted(lengths, key=str)}"

    fixtures = (
        Fixture(
            name="as released (0.25.0 to 0.31.0)",
            vllm="0.26.0",
            status=Status.PENDING,
            detail="every manager adds K - largest K to its query length: a draft's one-token manager gets zero",
            before=_AS_RELEASED,
            after=_AFTER_THE_FIX,
        ),
        Fixture(
            name="upstream guards on decode_query_len (0.32.0 on)",
            vllm="0.32.0",
            status=Status.FIXED_UPSTREAM,
            detail="a manager whose query length does not exceed the largest K captures no schedule",
            before=_UPSTREAM,
        ),
        Fixture(
            name="the query length is derived some other way",
            vllm="0.26.0",
            status=Status.DRIFTED,
            detail=("the schedule branch no longer derives the query length as decode_query_len - "
                    "num_speculative_tokens: review it"),
            before=_AS_RELEASED.replace("self.decode_query_len - self.vllm_config.num_speculative_tokens",
                                        "1"),
        ),
        Fixture(
            name="no schedule branch",
            vllm="0.26.0",
            status=Status.DRIFTED,
            detail=f"expected one `if` on {_DYNAMIC} in {_METHOD}, found 0",
            before=_AS_RELEASED.replace("speculative_config.uses_dynamic_speculative_decoding()",
                                        "speculative_config.num_speculative_tokens_per_batch_size"),
        ),
        Fixture(
            name="the method moved",
            vllm="0.26.0",
            status=Status.DRIFTED,
            detail=f"CudaGraphManager.{_METHOD} not found once",
            before=_AS_RELEASED.replace("_init_candidates", "_build_candidates"),
        ),
    )
