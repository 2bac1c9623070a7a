"""The stage cache and the locked atomic entry under it: hits are verified, damage is repaired."""

import logging
import os
import threading
import time
from dataclasses import dataclass

import pytest

from mlonmcu.entry import Entry
from mlonmcu.session.cache import StageCache


@dataclass(frozen=True)
class Result:
    value: int


def writer(calls, content="hello", value=42):
    def compute(out):
        calls.append(out)
        (out / "sub").mkdir(exist_ok=True)
        (out / "sub" / "a.txt").write_text(content)
        (out / "b.bin").write_bytes(bytes(range(256)) * 64)
        return Result(value)

    return compute


def get(cache, dest, calls, **kwargs):
    return cache.get_or_compute("build", "ab" * 32, writer(calls), dest, Result, **kwargs)


def test_miss_then_hit(tmp_path):
    cache = StageCache(tmp_path / "cache")
    calls = []
    first = get(cache, tmp_path / "run1", calls)
    assert (first.result, first.hit) == (Result(42), False)
    second = get(cache, tmp_path / "run2", calls)
    assert (second.result, second.hit, second.repaired) == (Result(42), True, "")
    assert (tmp_path / "run2" / "sub" / "a.txt").read_text() == "hello"
    assert len(calls) == 1
    assert second.files == first.files and set(first.files) == {"sub/a.txt", "b.bin"}


def damage_changed(path):
    data = bytearray(path.read_bytes())
    data[100:110] = b"\xff" * 10  # a flipped byte range, same size
    path.write_bytes(bytes(data))


def damage_truncated(path):
    path.write_bytes(path.read_bytes()[:50])


def damage_deleted(path):
    path.unlink()


@pytest.mark.parametrize("damage", [damage_changed, damage_truncated, damage_deleted])
def test_damaged_entry_is_detected_discarded_and_recomputed(tmp_path, caplog, damage):
    cache = StageCache(tmp_path / "cache")
    calls = []
    get(cache, tmp_path / "run1", calls)
    entry = cache.entry("build", "ab" * 32)
    damage(entry.path / "out" / "b.bin")
    with caplog.at_level(logging.WARNING, logger="mlonmcu"):
        again = get(cache, tmp_path / "run2", calls)
    assert not again.hit and again.repaired and "b.bin" in again.repaired
    assert len(calls) == 2  # recomputed
    assert (tmp_path / "run2" / "b.bin").read_bytes() == bytes(range(256)) * 64
    assert any("damaged" in r.message for r in caplog.records)
    assert get(cache, tmp_path / "run3", calls).hit  # the repaired entry is good again


def test_extra_file_or_missing_manifest_or_bad_result_is_damage(tmp_path):
    cache = StageCache(tmp_path / "cache")
    calls = []
    entry = cache.entry("build", "ab" * 32)
    get(cache, tmp_path / "r0", calls)
    (entry.path / "out" / "planted.c").write_text("int x;")
    assert "not in its manifest" in get(cache, tmp_path / "r1", calls).repaired
    assert not (tmp_path / "r1" / "planted.c").exists()
    (entry.path / ".mlonmcu-manifest.json").unlink()
    assert "manifest" in get(cache, tmp_path / "r2", calls).repaired
    result = entry.path / "result.json"
    result.write_text(result.read_text().replace("42", "43"))  # a different figure, same length
    assert "result.json changed" in get(cache, tmp_path / "r3", calls).repaired
    assert get(cache, tmp_path / "r4", calls).result == Result(42)
    assert len(calls) == 4


def test_refresh_recomputes_and_replaces_the_entry(tmp_path):
    cache = StageCache(tmp_path / "cache")
    calls = []
    get(cache, tmp_path / "r0", calls)
    (cache.entry("build", "ab" * 32).path / "out" / "b.bin").unlink()  # --no-cache also repairs
    fresh = get(cache, tmp_path / "r1", calls, refresh=True)
    assert not fresh.hit and len(calls) == 2
    assert get(cache, tmp_path / "r2", calls).hit and len(calls) == 2


def test_failed_stage_leaves_no_entry(tmp_path):
    cache = StageCache(tmp_path / "cache")

    def broken(out):
        (out / "partial").write_text("x")
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        cache.get_or_compute("run", "cd" * 32, broken, tmp_path / "r", Result)
    entry = cache.entry("run", "cd" * 32)
    assert not entry.path.exists()
    assert not [p for p in entry.path.parent.iterdir() if "staging" in p.name]
    outcome = cache.get_or_compute("run", "cd" * 32, lambda out: Result(1), tmp_path / "r2", Result)
    assert outcome.result == Result(1) and not outcome.hit


def test_concurrent_users_compute_once(tmp_path):
    cache = StageCache(tmp_path / "cache")
    count = []

    def compute(out):
        count.append(1)
        time.sleep(0.2)  # hold the lock while the others wait (not a speed measurement)
        (out / "f").write_text("x")
        return Result(len(count))

    results = []
    threads = [
        threading.Thread(
            target=lambda i=i: results.append(
                cache.get_or_compute("compile", "ef" * 32, compute, tmp_path / f"d{i}", Result)
            )
        )
        for i in range(3)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(count) == 1
    assert sorted(o.hit for o in results) == [False, True, True]
    assert {o.result for o in results} == {Result(1)}


def test_uncacheable_and_disabled_never_store(tmp_path):
    for cache, kwargs in (
        (StageCache(tmp_path / "c1", enabled=False), {}),
        (StageCache(tmp_path / "c2"), {"cacheable": False}),
    ):
        calls = []
        for i in range(2):
            outcome = cache.get_or_compute("run", "00" * 32, writer(calls), tmp_path / f"x{i}", Result, **kwargs)
            assert not outcome.hit
        assert len(calls) == 2
        assert not list(cache.root.rglob("result.json")), "nothing may be stored"


def test_lock_file_deleted_while_waiting_still_excludes(tmp_path):
    """A cleanup that deletes a held lock file must not let two processes into one entry."""
    entry = Entry(tmp_path / "e")
    inside = []
    with entry.locked():
        waiter = threading.Thread(target=lambda: _enter(Entry(tmp_path / "e"), inside))
        waiter.start()
        time.sleep(0.1)
        entry.lock_path.unlink()  # what a careless cleanup would do
        with Entry(tmp_path / "e").locked(wait=False) as free:  # a newcomer on the new lock file
            assert free
            assert not inside, "the waiter must not be inside while the newcomer holds the lock"
    waiter.join()
    assert inside == [True]
    assert os.path.exists(entry.lock_path)


def _enter(entry, inside):
    with entry.locked():
        inside.append(True)


def test_copy_errors_of_a_full_disk_are_a_full_disk():
    """copytree reports each file's ENOSPC inside one shutil.Error: still a full disk."""
    import errno
    import shutil

    from mlonmcu.atomic import is_disk_full

    full = str(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "/h/cache/x"))
    assert is_disk_full(shutil.Error([("/a/x", "/h/cache/x", full)]))
    assert is_disk_full(OSError(errno.EDQUOT, "quota"))
    assert not is_disk_full(shutil.Error([("/a/x", "/b/x", "[Errno 13] Permission denied")]))
    assert not is_disk_full(ValueError("[Errno 28]"))
