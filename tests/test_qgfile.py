"""The .qg container: round trip, integrity checks, atomic writes."""

from __future__ import annotations

import json
import os
import struct

import numpy as np
import pytest
import safetensors.numpy

from qgcc import atomicfile, qgfile
from qgcc.asm import assemble
from qgcc.diagnostics import QgFileError
from qgcc.isa import encode
from qgcc.program import Program

SRC = """\
.source "vadd.cu"
.kernel vadd
.param const int* a
.param int* c
.param int n
.shared 4
    .loc 3    // int i = threadIdx.x;
    S2R      r0, %tid.x
    LDC      r1, c[2]
    SLT      r2, r0, r1
    BRZ      r2, out
    .loc 4    // c[i] = a[i] + 1;
    LDC      r3, c[0]
    ADD      r3, r3, r0
    LD       r3, [r3]
    ADD      r3, r3, #-1
    LDC      r4, c[1]
    ADD      r4, r4, r0
    ST       [r4], r3
out:
    .loc none
    EXIT
.end
.kernel other
    MOV r1, #0xffffffff
    .word 0x0420000000000007
    EXIT
.end
"""


@pytest.fixture
def prog() -> Program:
    return assemble(SRC, "vadd.qsass")


def words(p: Program) -> list[int]:
    return [encode(i) for i in p.code]


def leftovers(d) -> list[str]:
    return sorted(n for n in os.listdir(d) if n.endswith(".tmp"))


def test_round_trip(prog, tmp_path):
    path = tmp_path / "vadd.qg"
    qgfile.save(prog, path)
    q = qgfile.load(path)
    assert words(q.program) == words(prog)
    assert q.program.kernels == prog.kernels
    assert [i.line for i in q.program.code] == [i.line for i in prog.code]
    assert q.program.source_name == "vadd.cu"
    assert q.program.source_lines == prog.source_lines
    assert q.program.source_line(4) == "c[i] = a[i] + 1;"
    assert q.tensors == {}
    assert q.meta["format"] == "qg" and q.meta["format_version"] == "2"
    assert ".kernel vadd" in q.meta["qsass"] and "// c[i] = a[i] + 1;" in q.meta["qsass"]
    assert json.loads(q.meta["lines"]) == [i.line for i in prog.code]
    assert leftovers(tmp_path) == []


def test_file_layout_is_plain_safetensors(prog, tmp_path):
    path = tmp_path / "vadd.qg"
    qgfile.save(prog, path)
    tensors = safetensors.numpy.load_file(str(path))
    code = tensors["program.code"]
    assert code.dtype == np.int64 and code.shape == (len(prog.code),)
    assert [int(w) & (2**64 - 1) for w in code] == words(prog)
    meta = qgfile._read_header(str(path), path.read_bytes())["__metadata__"]
    kernels = json.loads(meta["kernels"])
    assert kernels[0] == {"name": "vadd", "entry": 0, "end": 12, "shared_words": 4, "regs": 5,
                          "params": [{"name": "a", "ctype": "int", "pointer": True, "const": True},
                                     {"name": "c", "ctype": "int", "pointer": True, "const": False},
                                     {"name": "n", "ctype": "int", "pointer": False, "const": False}]}
    assert meta["content_hash"] == qgfile.content_hash(code, meta["kernels"], {})


def test_saving_one_program_twice_gives_the_same_bytes(prog, tmp_path):
    # safetensors writes its metadata from a hash map: without sorting, two saves differed.
    extra = {"w.layer0": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.array([True, False])}
    meta = {f"k{i}": str(i) for i in range(12)}
    blobs = set()
    for i in range(6):
        qgfile.save(prog, tmp_path / f"{i}.qg", extra_tensors=extra, extra_meta=meta)
        blobs.add((tmp_path / f"{i}.qg").read_bytes())
    assert len(blobs) == 1
    data = blobs.pop()
    (n,) = struct.unpack("<Q", data[:8])
    assert n % 8 == 0 and list(json.loads(data[8:8 + n])["__metadata__"]) == sorted(json.loads(data[8:8 + n])["__metadata__"])
    assert safetensors.numpy.load(data)["w.layer0"].tolist() == [[0, 1, 2], [3, 4, 5]]


def test_extras_round_trip_and_are_hashed(prog, tmp_path):
    path = tmp_path / "x.qg"
    extra = {"w.layer0": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.array([True, False])}
    qgfile.save(prog, path, extra_tensors=extra, extra_meta={"linker": "v0"})
    q = qgfile.load(path)
    assert set(q.tensors) == {"w.layer0", "b"}
    np.testing.assert_array_equal(q.tensors["w.layer0"], extra["w.layer0"])
    assert q.meta["linker"] == "v0"
    h_without = qgfile.content_hash(qgfile.code_tensor(prog), qgfile.kernels_json(prog.kernels), {})
    assert q.meta["content_hash"] != h_without
    # tamper with an extra tensor, keep the metadata: the hash check catches it
    tensors = safetensors.numpy.load_file(str(path))
    tensors["w.layer0"] = tensors["w.layer0"] + 1
    safetensors.numpy.save_file(tensors, str(path), metadata=q.meta)
    with pytest.raises(QgFileError, match="content hash mismatch"):
        qgfile.load(path)


def test_extra_metadata_is_hashed_because_it_decides_how_the_program_runs(prog, tmp_path):
    # The linker's field map is extra metadata: a damaged one would run the wrong dimensions.
    path = tmp_path / "x.qg"
    qgfile.save(prog, path, extra_meta={"machine": '{"fields": {"pc": [1, 2]}}'})
    rewrite(path, meta_update={"machine": '{"fields": {"pc": [1, 3]}}'})
    assert "content hash mismatch" in load_error(path)


def test_empty_program(tmp_path):
    p = Program([], [])
    qgfile.save(p, tmp_path / "e.qg")
    q = qgfile.load(tmp_path / "e.qg")
    assert q.program.code == [] and q.program.kernels == []


@pytest.mark.parametrize("kwargs,match", [
    ({"extra_tensors": {"program.code": np.zeros(1)}}, "reserved"),
    ({"extra_meta": {"kernels": "x"}}, "reserved"),
    ({"extra_meta": {"k": 5}}, "string"),
    ({"extra_tensors": {"o": np.array([object()])}}, "cannot serialise"),
])
def test_save_rejects_bad_extras_and_writes_nothing(prog, tmp_path, kwargs, match):
    path = tmp_path / "x.qg"
    with pytest.raises(ValueError, match=match):
        qgfile.save(prog, path, **kwargs)
    assert not path.exists() and leftovers(tmp_path) == []


def test_failed_save_leaves_existing_file_untouched(prog, tmp_path, monkeypatch):
    path = tmp_path / "x.qg"
    path.write_bytes(b"precious")
    bad = Program(prog.code, [])  # code outside any kernel: malformed
    with pytest.raises(ValueError, match="malformed"):
        qgfile.save(bad, path)
    assert path.read_bytes() == b"precious"

    def boom(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        qgfile.save(prog, path)
    assert path.read_bytes() == b"precious"
    assert leftovers(tmp_path) == []


def test_save_into_missing_directory(prog, tmp_path):
    with pytest.raises(OSError):
        qgfile.save(prog, tmp_path / "nope" / "x.qg")
    assert not (tmp_path / "nope").exists()


def test_atomic_files_batch(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    b.write_text("old")
    with atomicfile.AtomicFiles() as batch:
        batch.add(a, b"1")
        batch.add(b, b"2")
        assert not a.exists() and b.read_text() == "old"  # nothing visible before commit
    assert not a.exists() and b.read_text() == "old" and leftovers(tmp_path) == []  # discarded
    with atomicfile.AtomicFiles() as batch:
        batch.add(a, b"1")
        batch.add(b, b"2")
        batch.commit()
    assert a.read_text() == "1" and b.read_text() == "2" and leftovers(tmp_path) == []
    assert (a.stat().st_mode & 0o777) == (0o666 & ~atomicfile._umask())


# -- load errors --------------------------------------------------------------------------------

def rewrite(path, *, tensors=None, meta_update=None, drop_meta=(), drop_tensor=None):
    """Re-serialise a .qg with changes (metadata kept as is unless said)."""
    t = safetensors.numpy.load_file(str(path))
    meta = qgfile._read_header(str(path), path.read_bytes())["__metadata__"]
    meta.update(meta_update or {})
    for k in drop_meta:
        meta.pop(k)
    if tensors:
        t.update(tensors)
    if drop_tensor:
        t.pop(drop_tensor)
    safetensors.numpy.save_file(t, str(path), metadata=meta)


def rehash(path):
    t = safetensors.numpy.load_file(str(path))
    meta = qgfile._read_header(str(path), path.read_bytes())["__metadata__"]
    code = t.pop("program.code")
    extra = qgfile.extra_meta_of(meta)
    rewrite(path, meta_update={"content_hash": qgfile.content_hash(code, meta["kernels"], t, extra)})


def load_error(path) -> str:
    with pytest.raises(QgFileError) as ei:
        qgfile.load(path)
    msg = str(ei.value)
    assert "\n" not in msg
    assert msg.startswith(str(path))
    return msg


def test_missing_file(tmp_path):
    msg = load_error(tmp_path / "none.qg")
    assert "no such file" in msg and "qgcc KERNEL.cu -o" in msg


def test_directory(tmp_path):
    assert "is a directory" in load_error(tmp_path)


@pytest.mark.parametrize("cut", [0, 5, 8, 40, -1, -10])
def test_truncated(prog, tmp_path, cut):
    path = tmp_path / "x.qg"
    qgfile.save(prog, path)
    data = path.read_bytes()
    path.write_bytes(data[:cut])
    msg = load_error(path)
    assert "truncated" in msg or "corrupt" in msg or "not a .qg file" in msg
    assert "recompile it with qgcc" in msg


def test_garbage_and_foreign_safetensors(tmp_path):
    path = tmp_path / "g.qg"
    path.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json at all}")
    assert "corrupt safetensors header" in load_error(path)
    path.write_bytes(struct.pack("<Q", 2) + b"[]")
    assert "corrupt safetensors header" in load_error(path)
    safetensors.numpy.save_file({"x": np.zeros(2)}, str(path))
    assert "format=qg" in load_error(path)


def test_wrong_version(prog, tmp_path):
    path = tmp_path / "x.qg"
    qgfile.save(prog, path)
    rewrite(path, meta_update={"format_version": "1"})
    assert "format version '1' is not supported (this qgcc reads version 2); recompile" in load_error(path)


def test_hash_mismatch(prog, tmp_path):
    path = tmp_path / "x.qg"
    qgfile.save(prog, path)
    code = safetensors.numpy.load_file(str(path))["program.code"].copy()
    code[0] ^= 1 << 53  # change rd of the first instruction
    rewrite(path, tensors={"program.code": code})
    assert "content hash mismatch" in load_error(path)
    qgfile.save(prog, path)
    meta = qgfile.load(path).meta
    rewrite(path, meta_update={"kernels": meta["kernels"].replace('"regs":5', '"regs":6')})
    assert "content hash mismatch" in load_error(path)


def test_missing_tensor_and_metadata(prog, tmp_path):
    path = tmp_path / "x.qg"
    qgfile.save(prog, path)
    rewrite(path, drop_tensor="program.code", tensors={"other": np.zeros(1)})
    assert "tensor 'program.code' is missing" in load_error(path)
    qgfile.save(prog, path)
    rewrite(path, drop_meta=("lines",))
    assert "metadata 'lines' is missing" in load_error(path)


def test_wrong_code_dtype(prog, tmp_path):
    path = tmp_path / "x.qg"
    qgfile.save(prog, path)
    rewrite(path, tensors={"program.code": np.zeros(3, dtype=np.int32)})
    assert "must be int64 [n], found int32" in load_error(path)


@pytest.mark.parametrize("field,value,match", [
    ("lines", "[1, 2]", "corrupt 'lines' metadata"),
    ("lines", "not json", "corrupt 'lines' metadata"),
    ("kernels", "{}", "corrupt 'kernels' metadata"),
    ("kernels", '[{"name": "k"}]', "corrupt 'kernels' metadata"),
    ("kernels", '[{"name":"k","entry":0,"end":1,"params":[],"shared_words":0,"regs":0}]',
     "inconsistent program (instructions 1..14 belong to no kernel)"),
])
def test_corrupt_metadata_with_valid_hash(prog, tmp_path, field, value, match):
    path = tmp_path / "x.qg"
    qgfile.save(prog, path)
    rewrite(path, meta_update={field: value})
    rehash(path)
    assert match in load_error(path)


def test_invalid_instruction_word(prog, tmp_path):
    path = tmp_path / "x.qg"
    qgfile.save(prog, path)
    code = safetensors.numpy.load_file(str(path))["program.code"].copy()
    code[1] = np.int64(-(1 << 63))  # opcode 32
    rewrite(path, tensors={"program.code": code})
    rehash(path)
    assert "instruction 1 is invalid (unknown opcode 32)" in load_error(path)


def test_a_batch_that_fails_half_way_restores_the_files_it_already_replaced(tmp_path, monkeypatch):
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    a.write_text("old a")
    b.write_text("old b")
    real_replace, calls = os.replace, []

    def third_rename_fails(src, dst):
        calls.append(dst)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", third_rename_fails)
    with pytest.raises(OSError), atomicfile.AtomicFiles() as batch:
        for path in (a, c, b):
            batch.add(path, b"new")
        batch.commit()
    assert (a.read_text(), b.read_text(), c.exists()) == ("old a", "old b", False)
    assert sorted(os.listdir(tmp_path)) == ["a", "b"]  # no temporaries, no backups
