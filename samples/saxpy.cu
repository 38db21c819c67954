// saxpy.cu -- single-precision y = a*x + y, the first float kernel most people write.
//
// Every float operation is IEEE binary32 with round-to-nearest-even, one rounding
// per operation: a*x[i] is rounded, then the add is rounded (qgcc never contracts
// a multiply and an add into an fma, like nvcc -fmad=false).  The multiply and the
// add are the machine's FMUL and FADD instructions (qgcc --soft-float makes them
// calls of soft-float routines instead).
//
// Launch (from the repository root):
//   $ python -c "import numpy as np; i = np.arange(12, dtype=np.float32); np.save('x.npy', i / 3); np.save('y.npy', 1 - i)"
//   $ qgcc samples/saxpy.cu -o saxpy.qg
//   $ qgrun saxpy.qg --grid 2 --block 8 --arg a=0.1 --arg x=@x.npy --arg y=@y.npy --arg n=12 --out y=y.npy
//
// Expected output: y[i] = fl(fl(0.1f * fl(i/3)) + (1 - i)), i.e. about 1 - 0.9667*i, exactly
// the float32 values numpy gives for the same two roundings:
//   y = [1.0, 0.033333335, -0.93333334, -1.9, -2.8666666, -3.8333333, -4.8, -5.766667,
//        -6.733333, -7.7, -8.666667, -9.633333]

__global__ void saxpy(float a, const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = a * x[i] + y[i];
    }
}
