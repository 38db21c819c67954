"""qsass programs shared by the CLI and API tests: kernels that fault in each way the machine
reports (an out-of-bounds store, a barrier in divergent code, a kernel that never ends)."""

FAULTS = """\
.source "faults.cu"
.kernel oob
.param int* c
    .loc 2    // c[1000] = 1;
    LDC r0, c[0]
    MOV r1, #1
    ST [r0+1000], r1
    EXIT
.end
.kernel divbar
    .loc 7    // if (threadIdx.x) __syncthreads();
    S2R r0, %tid.x
    BRZ r0, skip
    BAR
skip:
    EXIT
.end
.kernel spin
    .loc 9    // for (;;);
top:
    BRA top
.end
"""
