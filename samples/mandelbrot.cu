// mandelbrot.cu -- escape-time Mandelbrot set on a small float32 grid.
//
// Pixel (px, py) is the point c = (x0 + px*dx) + i*(y0 + py*dy); z starts at 0 and
// iterates z = z^2 + c until |z|^2 > 4 or max_iter steps.  Lanes of a warp leave the
// loop at different iterations (divergence, then reconvergence at the store); each
// iteration is four float multiplies, four adds/subtracts and a float compare, all
// one float instruction each (FMUL, FADD, FSUB, FSLT, I2F).
//
// Launch (from the repository root):
//   $ qgcc samples/mandelbrot.cu -o mandelbrot.qg
//   $ qgrun mandelbrot.qg --grid 1 --block 8,2 --arg iters=zeros:16 --arg width=8 --arg height=2 --arg x0=-2.0 --arg y0=0.0 --arg dx=0.375 --arg dy=0.5 --arg max_iter=10 --out iters=iters.npy
//
// Expected output: row 0 (y = 0) is the real axis from -2 to 0.625: points in
// [-2, 0.25] never escape (10), 0.625 escapes after 4 steps; row 1 (y = 0.5) escapes
// after 1 step at -2 + 0.5i, stays bounded near the main cardioid, escapes at the right:
//   iters = [10, 10, 10, 10, 10, 10, 10, 4,
//            1, 3, 4, 5, 10, 10, 10, 3]

__global__ void mandelbrot(int *iters, int width, int height, float x0, float y0, float dx, float dy,
                           int max_iter)
{
    int px = blockIdx.x * blockDim.x + threadIdx.x;
    int py = blockIdx.y * blockDim.y + threadIdx.y;
    if (px >= width || py >= height) {
        return;
    }
    float cr = x0 + px * dx;
    float ci = y0 + py * dy;
    float zr = 0.0f, zi = 0.0f, zr2 = 0.0f, zi2 = 0.0f;
    int k = 0;
    while (k < max_iter && zr2 + zi2 <= 4.0f) {
        zi = 2.0f * zr * zi + ci;
        zr = zr2 - zi2 + cr;
        zr2 = zr * zr;
        zi2 = zi * zi;
        k++;
    }
    iters[py * width + px] = k;
}
