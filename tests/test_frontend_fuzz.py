"""Front-end fuzzing, short: no input makes the compiler raise anything but a clean CompileError.

The same generators and the same check as the long run in bench/fuzz/frontend.py
(which is run to 100,000 inputs), driven here by hypothesis for a few hundred
examples: programs generated from the subset's grammar, mutations of the
samples (flipped bytes, deleted, doubled, swapped and inserted tokens,
truncations, splices) and arbitrary bytes.  Every input must either compile to a
well-formed program or give a CompileError that names the file, points at a line
and column inside it, quotes that line, and is not an "internal compiler error".
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench" / "fuzz"))

from check import check_source  # noqa: E402
from mutate import mutate  # noqa: E402
from programs import random_program  # noqa: E402

SAMPLES = {p.name: p.read_bytes() for p in sorted((ROOT / "samples").glob("*.cu"))}


def fuzz(examples: int) -> settings:
    """Deterministic (derandomised) runs: the suite gives the same answer every time."""
    return settings(max_examples=examples, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def assert_clean(data: bytes) -> str:
    outcome = check_source(data, "fuzz.cu")
    assert outcome.kind != "escape", f"{outcome.detail}\n--- input:\n{data.decode('utf-8', 'replace')}"
    return outcome.kind


@fuzz(120)
@given(st.randoms(use_true_random=False))
def test_programs_generated_from_the_grammar_compile_or_fail_cleanly(rnd):
    assert_clean(random_program(rnd).encode())


def test_most_generated_programs_compile():
    # The generator is only useful if it reaches code generation; a regression that made
    # every program an early error would leave the fuzzer testing nothing.
    kinds = [check_source(random_program(random.Random(i)).encode()).kind for i in range(40)]
    assert kinds.count("compiled") >= 20
    assert "escape" not in kinds


@fuzz(300)
@given(st.randoms(use_true_random=False), st.sampled_from(sorted(SAMPLES)), st.sampled_from(sorted(SAMPLES)))
def test_mutated_samples_compile_or_fail_cleanly(rnd, name, other):
    _, data = mutate(rnd, SAMPLES[name], SAMPLES[other])
    assert_clean(data)


@fuzz(200)
@given(st.binary(max_size=200))
def test_arbitrary_bytes_fail_cleanly(data):
    assert_clean(data)


@fuzz(150)
@given(st.text(alphabet="intuvoda_xy019 \t\r\n(){}[];,.+-*/%&|^!~<>=?:#'\"\\", max_size=120))
def test_c_like_text_fails_cleanly(text):
    assert_clean(("__global__ void k(int *a) {" + text).encode())
