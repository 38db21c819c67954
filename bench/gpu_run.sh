#!/bin/bash
# One run on a device machine: bench/gpu_check.py with every figure of issue #26 (and the
# targets judged met / not met), the hf engine on that machine's transformers, then the
# start-up of the README launch on CUDA and where it goes.  Run from the repository root (or a
# copy of it).  Wheels of missing packages in ./.whl (the device tool's convention) or ./whl are
# installed first.  The H200 image has torch, transformers, triton and pytest but no lark; here,
# before the run (lark is pure Python, any platform's wheel does):
#   echo /.whl/ >> .git/info/exclude
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#       --platform manylinux2014_x86_64 -d .whl lark==1.3.1
# and name .whl in the run's carry.  Then, there:
#   CHECK_S=300 SIZES=64,1024,8192 bash bench/gpu_run.sh 2>&1 | tee $OUT/gpu_run.log
# Within one device command of at most 10 minutes (the parts run most important first, each under
# its own timeout, and print as they go, so a cut run still returns what it measured):
#   CHECK_S=300 SAMPLES=collatz SPARSE_S=60 HF_S=90 bash bench/gpu_run.sh 2>&1 | tee $OUT/gpu_run.log
# with the run's timeout_s at 590: gpu_check, sparse_dense, onelaunch (bench/onelaunch.py), host_ceiling, the hf test, the start-up and its
# profile, and last the README launch with --engine hf (worst case about 600 s, usually far less).
# PHASED=1 (default) also checks and measures the phased step (engines/phased.py, the one-launch
# form: 70 Triton kernels a step) beside them; PHASED=0 leaves it out.
# FUSED=both (default) checks and measures the unfused and the fused step (engines/fused.py,
# Triton kernels, compiled on first use: allow a minute) side by side, and profiles both when
# PROFILE_WIDTHS is set; FUSED=no only the unfused.  Both double the lockstep part: SAMPLES=collatz
# keeps it short.
# OVERLAP=both (default) times every batch with the host's work overlapped with the device's
# (BatchRunner's default on CUDA) and without, side by side; OVERLAP=on halves the batch part.
# Shorter: SAMPLES=collatz (the lockstep samples besides mixed), STARTUP=0 (no start-up part),
# PROFILE_WIDTHS=8192 (then bench/gpu_profile.py's phases at those widths, PROFILE_S seconds).
# HF=0 leaves out the hf engine part (transformers' modules on CUDA: about 9 GB of dense layers).
# Rehearsal on a CPU machine (the whole script, the device's code path on the CPU):
#   DEVICE=cpu SHORT=1 FUSED=no PHASED=0 HF=0 bash bench/gpu_run.sh
DEVICE=${DEVICE:-cuda}
SITE=${SITE:-/tmp/site}  # where carried wheels are installed
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
WHEELS=$(ls .whl/*.whl whl/*.whl 2>/dev/null)
if [ -n "$WHEELS" ]; then
    # shellcheck disable=SC2086
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" $WHEELS || exit 1
fi
export PYTHONPATH=$SITE:$ROOT/src:$ROOT/tests PYTHONUNBUFFERED=1 QGCC_CACHE=${QGCC_CACHE:-/tmp/qgcache}
python3 -c "import lark" 2>/dev/null || { echo "no lark here: carry its wheel in .whl (see the header)"; exit 1; }
[ "$DEVICE" = cuda ] && nvidia-smi --query-gpu=name,memory.used,memory.total,clocks.sm,clocks.max.sm --format=csv
nproc; python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"
python3 -c "import triton; print('triton', triton.__version__)" 2>/dev/null || echo "no triton: the fused step cannot run (pip install triton, or a wheel in ./.whl)"
echo "=== gpu_check"
timeout "${CHECK_S:-420}" python3 bench/gpu_check.py --device "$DEVICE" --sizes "${SIZES:-64,1024,8192}" --chunk 16 \
    --fused "${FUSED:-both}" --overlap "${OVERLAP:-both}" ${SAMPLES:+--samples "$SAMPLES"} ${SHORT:+--short} \
    $([ "${PHASED:-1}" != 0 ] && echo --phased)
echo "gpu_check exit $?"
echo "=== sparse (CSR, nonzeros only) against the dense products the step runs (issue #26, item 2)"
timeout "${SPARSE_S:-120}" python3 bench/sparse_dense.py --device "$DEVICE" --widths "1,${SIZES:-64,1024,8192}" \
    ${SHORT:+--layers 2}
echo "sparse_dense exit $?"
echo "=== one launch: kernel boundaries a step and what a step touches, against this machine's C step"
timeout "${ONE_S:-60}" python3 bench/onelaunch.py
echo "onelaunch exit $?"
echo "=== the host's share of a batch: what this machine's CPU alone can feed (bench/host_ceiling.py)"
timeout "${HOST_S:-90}" python3 bench/host_ceiling.py --widths 1024,8192
echo "host_ceiling exit $?"
if [ -n "$PROFILE_WIDTHS" ]; then
    echo "=== gpu_profile"
    timeout "${PROFILE_S:-120}" python3 bench/gpu_profile.py --widths "$PROFILE_WIDTHS" --profile-width 1024 2>&1 | head -${PROFILE_LINES:-40}
    echo "gpu_profile exit ${PIPESTATUS[0]}"
    if [ "${FUSED:-both}" != no ]; then
        echo "=== gpu_profile --fused"
        timeout "${PROFILE_S:-120}" python3 bench/gpu_profile.py --fused --widths "$PROFILE_WIDTHS" --profile-width 1024 2>&1 | head -${PROFILE_LINES:-40}
        echo "gpu_profile --fused exit ${PIPESTATUS[0]}"
    fi
fi
if [ "${HF:-1}" != 0 ]; then
    echo "=== the hf engine on this machine's transformers (issue #26, item 6)"
    timeout 60 python3 -m pytest -q -p no:cacheprovider tests/test_hf_versions.py 2>&1 | tail -3
fi
[ "${STARTUP:-1}" = 0 ] && exit 0
echo "=== start-up: torch import + $DEVICE context alone"
/usr/bin/time -f "%e s wall" python3 -c "import torch; torch.zeros(1, device='$DEVICE'); torch.cuda.synchronize() if '$DEVICE' == 'cuda' else None"
mkdir -p /tmp/v && cd /tmp/v || exit 1
python3 -c "import numpy as np; np.save('a.npy', np.arange(6, dtype=np.int32)); np.save('b.npy', 100 * np.arange(6, dtype=np.int32))"
python3 -c "import sys; sys.argv = ['qgcc', '$ROOT/samples/vadd.cu', '-o', 'vadd.qg']; from qgcc.cli.qgcc_cmd import main; main()"
A="'qgrun', 'vadd.qg', '--grid', '2', '--block', '4', '--arg', 'a=@a.npy', '--arg', 'b=@b.npy', '--arg', 'c=zeros:6', '--arg', 'n=6', '--device', '$DEVICE'"
Q="from qgcc.cli.qgrun_cmd import main; import sys; sys.argv = [$A, '--out', 'c=c.npy']"
echo "=== start-up: qgrun vadd.qg --device $DEVICE (the README launch), twice"
/usr/bin/time -f "%e s wall" python3 -c "$Q; main()"
/usr/bin/time -f "%e s wall" python3 -c "$Q; main()"
python3 -c "import numpy as np; print('c =', np.load('c.npy').tolist())"
if [ "${PHASED:-1}" != 0 ] && [ "$DEVICE" = cuda ]; then  # the user's path to the Triton steps: qgrun --step
    for S in phased phased fused; do  # the first compiles its kernels (Triton's cache then serves the second)
        echo "=== qgrun vadd.qg --device $DEVICE --step $S"
        timeout "${STEP_S:-120}" /usr/bin/time -f "%e s wall" python3 -c "$Q; sys.argv[-1] = 'c=c_$S.npy'; sys.argv += ['--step', '$S']; main()"
        python3 -c "import numpy as np; print('$S c equal to the unfused step:', np.array_equal(np.load('c_$S.npy'), np.load('c.npy')))"
    done
fi
echo "=== where the start-up goes (cProfile, cumulative, top 30)"
timeout 60 python3 -c "$Q
import cProfile, pstats
cProfile.run('main(standalone_mode=False)', '/tmp/prof')
pstats.Stats('/tmp/prof').sort_stats('cumulative').print_stats(30)" 2>&1 | grep -v '^$' | head -60
if [ "${HF:-1}" != 0 ]; then
    echo "=== qgrun vadd.qg --engine hf --device $DEVICE (transformers' modules; the issue's crash was here)"
    H="from qgcc.cli.qgrun_cmd import main; import sys; sys.argv = [$A, '--out', 'c=c_hf.npy', '--engine', 'hf']"
    timeout "${HF_S:-180}" /usr/bin/time -f "%e s wall" python3 -c "$H; main()"
    echo "qgrun --engine hf exit $?"
    python3 -c "import numpy as np; print('hf c =', np.load('c_hf.npy').tolist(), 'equal to neural:', np.array_equal(np.load('c_hf.npy'), np.load('c.npy')))"
fi
