"""The order a pool gets its runs in: runs that share cache entries are not started side by side."""

from __future__ import annotations

from pathlib import Path

from mlonmcu.session.session import interleaved
from mlonmcu.session.spec import ModelRef, RunSpec, Stage


def spec(run: int, model: str, backend: str = "tvmaot") -> RunSpec:
    ref = ModelRef(model, f"/m/{model}.tflite", None)
    return RunSpec(0, run, Path(str(run)), ref, "tflite", backend, "mlif", "spike", [], {}, {}, Stage.RUN, Path("c"))


def test_groups_sharing_a_build_take_turns():
    specs = [spec(0, "aww"), spec(1, "aww"), spec(2, "aww"), spec(3, "vww"), spec(4, "vww"), spec(5, "aww", "tflmi")]
    order = [s.run for s in interleaved(specs)]
    assert order == [0, 3, 5, 1, 4, 2]
    assert sorted(order) == list(range(6))  # every run once
    assert interleaved([]) == []


def test_models_with_more_operators_go_first_whatever_their_size():
    bundled = Path(__file__).resolve().parents[2] / "resources" / "models"

    def at(run: int, model: str) -> RunSpec:
        ref = ModelRef(model, str(bundled / model / f"{model}.tflite"), None)
        return RunSpec(
            0, run, Path(str(run)), ref, "tflite", "tvmaot", "mlif", "spike", [], {}, {}, Stage.RUN, Path("c")
        )

    # kws_dscnn: 13 kB, 9 operators; cnn_small: 10 kB, 11 operators (compiling costs per kernel)
    specs = [at(0, "kws_dscnn"), at(1, "kws_dscnn"), at(2, "cnn_small"), at(3, "cnn_small")]
    assert [s.run for s in interleaved(specs)] == [2, 0, 3, 1]


def test_larger_models_go_first(tmp_path):
    for name, size in {"small": 10, "large": 1000, "medium": 100}.items():
        (tmp_path / f"{name}.tflite").write_bytes(b"\0" * size)

    def at(run: int, model: str) -> RunSpec:
        ref = ModelRef(model, str(tmp_path / f"{model}.tflite"), None)
        return RunSpec(
            0, run, Path(str(run)), ref, "tflite", "tvmaot", "mlif", "spike", [], {}, {}, Stage.RUN, Path("c")
        )

    specs = [at(0, "small"), at(1, "small"), at(2, "large"), at(3, "medium"), at(4, "large")]
    assert [s.run for s in interleaved(specs)] == [2, 3, 0, 4, 1]


def test_no_cache_runs_are_never_taken_as_cached(monkeypatch):
    """`--no-cache --parallel N` recomputes every run: none may count as restorable and be kept
    in the orchestrator, one after another, instead of going to the pool."""
    from dataclasses import replace
    from types import SimpleNamespace

    from mlonmcu.session import stages

    def restored(ctx):
        ctx.cached.append("load")

    monkeypatch.setattr(stages.RunContext, "create", staticmethod(lambda s: SimpleNamespace(cached=[], peek=False)))
    monkeypatch.setattr(stages, "STAGE_FUNCTIONS", {stage: restored for stage in Stage})
    cached = spec(0, "aww")
    assert stages.cached_stages(cached)  # every entry there
    assert stages.cached_stages(replace(cached, use_cache=False)) == []
