import json
import threading

import pytest

from mlonmcu.session.cache import StageCache


def test_miss_then_hit(tmp_path):
    cache = StageCache(tmp_path / "cache")
    calls = []

    def compute(out):
        calls.append(out)
        (out / "a.txt").write_text("hello")
        return {"value": 42}

    result, hit = cache.get_or_compute("build", "ab" * 32, compute, tmp_path / "run1")
    assert (result, hit) == ({"value": 42}, False)
    result, hit = cache.get_or_compute("build", "ab" * 32, compute, tmp_path / "run2")
    assert (result, hit) == ({"value": 42}, True)
    assert (tmp_path / "run2" / "a.txt").read_text() == "hello"
    assert len(calls) == 1


def test_failed_stage_leaves_no_entry(tmp_path):
    cache = StageCache(tmp_path / "cache")

    def broken(out):
        (out / "partial").write_text("x")
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        cache.get_or_compute("run", "cd" * 32, broken, tmp_path / "r")
    assert not (cache.entry("run", "cd" * 32) / "result.json").exists()
    result, hit = cache.get_or_compute("run", "cd" * 32, lambda out: {"ok": 1}, tmp_path / "r2")
    assert result == {"ok": 1} and not hit


def test_concurrent_users_compute_once(tmp_path):
    cache = StageCache(tmp_path / "cache")
    count = []
    gate = threading.Event()

    def compute(out):
        count.append(1)
        gate.wait(0.2)
        return {"n": len(count)}

    results = []
    threads = [
        threading.Thread(
            target=lambda i=i: results.append(cache.get_or_compute("compile", "ef" * 32, compute, tmp_path / f"d{i}"))
        )
        for i in range(3)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(count) == 1
    assert sorted(hit for _, hit in results) == [False, True, True]


def test_disabled_cache_always_computes(tmp_path):
    cache = StageCache(tmp_path / "cache", enabled=False)
    for i in range(2):
        _, hit = cache.get_or_compute("load", "00" * 32, lambda out: {"i": 1}, tmp_path / f"x{i}")
        assert not hit
    assert not (tmp_path / "cache").exists() or not json.dumps(list((tmp_path / "cache").rglob("result.json")))
