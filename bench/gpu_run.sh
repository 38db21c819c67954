#!/bin/bash
# One run on a device machine: bench/gpu_check.py with every figure of issue #26, then the
# start-up of the README launch on CUDA and where it goes.  Run from the repository root (or a
# copy of it); wheels of missing packages (lark) in ./whl are installed first when present.
#   CHECK_S=300 SIZES=64,1024,8192 bash bench/gpu_run.sh 2>&1 | tee gpu_run.log
# FUSED=both (default) checks and measures the unfused and the fused step (engines/fused.py,
# Triton kernels, compiled on first use: allow a minute) side by side, and profiles both when
# PROFILE_WIDTHS is set; FUSED=no only the unfused.  Both double the lockstep part: SAMPLES=collatz
# keeps it short.
# Shorter: SAMPLES=collatz (the lockstep samples besides mixed), STARTUP=0 (no start-up part),
# PROFILE_WIDTHS=8192 (then bench/gpu_profile.py's phases at those widths, PROFILE_S seconds).
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
if ls whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site whl/*.whl || exit 1
fi
export PYTHONPATH=/tmp/site:$ROOT/src:$ROOT/tests PYTHONUNBUFFERED=1 QGCC_CACHE=${QGCC_CACHE:-/tmp/qgcache}
nvidia-smi --query-gpu=name,memory.used,memory.total,clocks.sm,clocks.max.sm --format=csv
nproc; python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"
python3 -c "import triton; print('triton', triton.__version__)" || echo "no triton: the fused step cannot run (pip install triton, or a wheel in ./whl)"
echo "=== gpu_check"
timeout "${CHECK_S:-420}" python3 bench/gpu_check.py --sizes "${SIZES:-64,1024,8192}" --chunk 16 \
    --fused "${FUSED:-both}" ${SAMPLES:+--samples "$SAMPLES"}
echo "gpu_check exit $?"
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
[ "${STARTUP:-1}" = 0 ] && exit 0
echo "=== start-up: torch import + CUDA context alone"
/usr/bin/time -f "%e s wall" python3 -c "import torch; torch.zeros(1, device='cuda'); torch.cuda.synchronize()"
mkdir -p /tmp/v && cd /tmp/v || exit 1
python3 -c "import numpy as np; np.save('a.npy', np.arange(6, dtype=np.int32)); np.save('b.npy', 100 * np.arange(6, dtype=np.int32))"
python3 -c "import sys; sys.argv = ['qgcc', '$ROOT/samples/vadd.cu', '-o', 'vadd.qg']; from qgcc.cli.qgcc_cmd import main; main()"
Q="from qgcc.cli.qgrun_cmd import main; import sys; sys.argv = ['qgrun', 'vadd.qg', '--grid', '2', '--block', '4', '--arg', 'a=@a.npy', '--arg', 'b=@b.npy', '--arg', 'c=zeros:6', '--arg', 'n=6', '--out', 'c=c.npy', '--device', 'cuda']"
echo "=== start-up: qgrun vadd.qg --device cuda (the README launch), twice"
/usr/bin/time -f "%e s wall" python3 -c "$Q; main()"
/usr/bin/time -f "%e s wall" python3 -c "$Q; main()"
python3 -c "import numpy as np; print('c =', np.load('c.npy').tolist())"
echo "=== where the start-up goes (cProfile, cumulative, top 30)"
timeout 120 python3 -c "$Q
import cProfile, pstats
cProfile.run('main(standalone_mode=False)', '/tmp/prof')
pstats.Stats('/tmp/prof').sort_stats('cumulative').print_stats(30)" 2>&1 | grep -v '^$' | head -60
