"""The Python API: compile or load a program, launch its kernels with numpy arrays.

    import numpy as np, qgcc
    prog = qgcc.compile("samples/vadd.cu")            # or a source string, a .qsass, a .qg, a checkpoint dir
    a = np.arange(6, dtype=np.int32)
    r = prog.launch(grid=2, block=4, a=a, b=100 * a, c=np.zeros(6, np.int32), n=6, engine="ref")
    r["c"], r.stats.steps                              # the buffers (numpy, pointee dtypes) and the statistics
    prog.vadd[2, 4](a, 100 * a, c, 6)                  # CUDA-style: writes the results back into c

`qgrun` runs its launches through the same functions (`select_kernel`, `run_launch`), so a
launch gives the same outputs, trace, statistics and errors here as on the command line:
bad arguments raise `qgcc.diagnostics.UsageError`, a bad file `QgFileError`, a compile error
`CompileError`, and a kernel fault the `qgcc.trace.Fault` subclass qgrun reports (with the
same message; `fault_message(fault, prog)` gives qgrun's one-line form).
"""

from __future__ import annotations

import os
import queue
import threading
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import numpy as np

from .diagnostics import UsageError
from .program import ELEM_DTYPES, Kernel, Param
from .program import Program as _Program
from .trace import Fault, Stats, StepRecord

DEFAULT_MAX_STEPS = 1_000_000
STAT_KEYS = ("steps", "warp_instructions", "divergent_steps", "barrier_waits", "atomics", "loads", "stores")
OPTIONS = ("kernel", "engine", "device", "dtype", "trace", "max_steps", "on_step", "args", "shared", "constants",
           "dump_states", "dump_every")


# ------------------------------------------------------------------ the launch path (shared with qgrun)

def select_kernel(program: _Program, name: str | None) -> Kernel:
    """The kernel called `name` (None: the only one); UsageError naming the kernels otherwise."""
    try:
        return program.kernel(name)
    except LookupError as e:
        raise UsageError(str(e.args[0]) if e.args else str(e)) from None


def run_launch(engine, launch, *, device: str, max_steps: int, on_step=None, linked=None, dtype: str = "fp32",
               states=None, step: str = "unfused"):
    """Run a Launch on an engine of the registry (`qgcc.engines.get(name)`): (RunResult, {buffer: array}).

    The arrays are every pointer parameter's final contents in its pointee dtype, flat.
    `states` (qgcc.engines.states.StateDump) receives the network's states (qgrun --dump-states).
    Faults propagate as the engine raises them, a failing device assert as an AssertionFault.
    `result.printf` is the launch's device printf output (runtime/printf.py)."""
    from .runtime.printf import assertion, collect

    try:
        result = engine.run(launch, max_steps=max_steps, on_step=on_step, device=device, dtype=dtype, states=states,
                            step=step)
    except Fault as fault:
        out = assertion(fault, launch)
        memory = getattr(fault, "memory", None)  # an out-of-bounds fault's memory (the engines attach it)
        out.printf = collect(launch.program, memory) if memory is not None else None
        raise out from None
    result.printf = collect(launch.program, result.memory)
    if linked is not None and linked.network is None:
        linked.network = launch.network  # linked by this first network launch: reused from now on
    buffers = {p.name: launch.read_buffer(result.memory, p.name) for p in launch.kernel.params
               if p.pointer and p.name in launch.buffers}  # a null pointer argument has none
    for p in launch.kernel.params:  # `T **`: the list of the buffers its cells point to
        if p.indirect:
            buffers[p.name] = [launch.read_buffer(result.memory, f"{p.name}[{j}]")
                               for j in range(launch.buffers[p.name].length)]
    return result, buffers


def dim3(value: Any, what: str) -> tuple[int, int, int]:
    """grid/block: an int, a sequence of 1-3 ints, or "X,Y,Z" (the --grid syntax)."""
    from .runtime.launch import parse_dim3

    if isinstance(value, (bool, np.bool_)):
        text = "bad"
    elif isinstance(value, (int, np.integer)):
        text = str(int(value))
    elif isinstance(value, str):
        text = value
    elif isinstance(value, (tuple, list)) and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                                                 for v in value):
        text = ",".join(str(int(v)) for v in value)
    else:
        text = repr(value)
    return parse_dim3(text, what)


def check_args(kernel: Kernel, values: dict[str, Any]) -> tuple[dict[str, int], dict[str, np.ndarray]]:
    """Python values -> (scalar words, flat arrays), with qgrun's checks and messages (runtime/values.py):
    arrays must have the pointee's dtype exactly; scalars are range-checked; floats round once to float32."""
    from .cli.args import parse_float
    from .runtime.values import check_array, check_array_list, check_int

    params = {p.name: p for p in kernel.params}
    scalars: dict[str, int] = {}
    arrays: dict[str, np.ndarray] = {}
    for name, value in values.items():
        p = params.get(name)
        if p is None:
            have = ", ".join(params) or "none"
            raise UsageError(f"argument '{name}': kernel '{kernel.name}' has no parameter '{name}' "
                             f"(parameters: {have})")
        if p.indirect:  # `T **`: a list of arrays, one buffer each
            arrays[name] = check_array_list(name, value, p)
        elif p.pointer and value is None:  # a null pointer (qgrun --arg p=null)
            arrays[name] = None
        elif p.pointer:
            if p.struct is not None and not isinstance(value, np.ndarray):
                from .runtime.structbuf import describe

                raise UsageError(f"{name}={_short(value)}: parameter '{name}' is a pointer ({p.describe()}); "
                                 f"give a numpy structured array with the members ({describe(p.struct)})")
            want = None if p.struct is not None else np.dtype(ELEM_DTYPES[p.ctype])
            if not isinstance(value, np.ndarray):
                raise UsageError(f"{name}={_short(value)}: parameter '{name}' is a pointer ({p.describe()}); "
                                 f"give a numpy array of {want} (e.g. np.zeros(n, np.{want}))")
            arrays[name] = check_array(name, "the array", value, p)
        elif p.struct is not None:  # a struct by value: one record of a structured array
            if not isinstance(value, np.ndarray) or value.size != 1:
                from .runtime.structbuf import describe

                raise UsageError(f"{name}={_short(value)}: parameter '{name}' is a struct passed by value "
                                 f"({p.describe()}); give a numpy structured array of one record with the "
                                 f"members ({describe(p.struct)})")
            arrays[name] = check_array(name, "the array", value, p)
        else:
            scalars[name] = _scalar(name, value, p, check_int, parse_float)
    missing = [p for p in kernel.params if p.name not in values]
    if missing:
        listed = ", ".join(f"'{p.name}' ({p.describe()})" for p in missing)
        raise UsageError(f"missing argument for {listed}")
    return scalars, arrays


def check_constants(program: _Program, values: dict[str, Any] | None) -> dict[str, np.ndarray]:
    """Python values of __constant__ variables -> arrays of their dtype (make_launch checks sizes)."""
    from .cli.args import parse_float
    from .runtime.values import check_int

    known = {c.name: c for c in program.user_constants}
    out: dict[str, np.ndarray] = {}
    for name, value in (values or {}).items():
        c = known.get(name)
        if c is None:
            have = ", ".join(known) or "none"
            raise UsageError(f"constants: the program has no __constant__ variable '{name}' (it has: {have})")
        want = np.dtype(ELEM_DTYPES[c.ctype])
        if c.dims or isinstance(value, np.ndarray):
            if not isinstance(value, np.ndarray):
                raise UsageError(f"constants: {c.describe()} is an array; give a numpy array of {want}")
            out[name] = value
        else:
            word = _scalar(name, value, Param(name, c.ctype), check_int, parse_float)
            cell = np.array([word], np.uint32)
            out[name] = cell.astype(np.int64).astype(want) if want.itemsize == 1 else cell.view(want)
    return out


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _scalar(name: str, value: Any, p: Param, check_int, parse_float) -> int:
    label = f"{name}={_short(value)}"
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if p.ctype == "float":
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise UsageError(f"{label}: parameter '{name}' is a scalar ({p.describe()}); give a number")
        if isinstance(value, (int, np.integer)) and not isinstance(value, np.floating):
            return parse_float(name, str(int(value)))  # exact integers round once, as on the command line
        with np.errstate(over="ignore"):
            return int(np.array([value], dtype=np.float32).view(np.uint32)[0])
    if p.ctype == "double":
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise UsageError(f"{label}: parameter '{name}' is a scalar ({p.describe()}); give a number")
        # an int rounds once to the nearest double (Python's int -> float is correctly rounded)
        value = float(int(value)) if isinstance(value, (int, np.integer)) else float(value)
        return int(np.array([value], dtype=np.float64).view(np.uint64)[0])
    if isinstance(value, (bool, np.bool_)):
        value = int(value)
    if not isinstance(value, (int, np.integer)):
        raise UsageError(f"{label}: parameter '{name}' is a scalar ({p.describe()}); give an int")
    return check_int(label, int(value), p)


# ------------------------------------------------------------------ programs

def compile(source: str | os.PathLike, *, name: str | None = None,  # noqa: A001 (qgcc.compile)
            instantiate: tuple[str, ...] = ()) -> "Program":
    """A program from a path (.cu, .qsass, .qg, or a checkpoint directory linked with qgcc --base)
    or from CUDA-C source text (anything with a newline or a `__global__`; `name` labels its errors).
    `instantiate` names kernel templates to compile (`("matmul<8>",)`; launch them by that name)."""
    if isinstance(source, str) and ("\n" in source or "__global__" in source) and not os.path.exists(source):
        from .frontend import compile_source

        prog = compile_source(source, name or "<string>", instantiate=tuple(instantiate))
        if not prog.source_lines:
            prog.source_lines = source.splitlines()
        return Program(prog)
    return load(source, instantiate=instantiate)


def load(path: str | os.PathLike, instantiate: tuple[str, ...] = ()) -> "Program":
    """A program from a file or checkpoint directory, exactly as qgrun reads it."""
    from .inputs import open_program

    return Program(open_program(os.fspath(path), tuple(instantiate)))


class Program:
    """A compiled program: `.launch(...)`, `.stream(...)`, and one attribute per kernel (`prog.vadd[grid, block](...)`)."""

    def __init__(self, program):
        """`program`: a compiled qgcc.program.Program, or a LinkedProgram (a .qg or checkpoint)
        whose network is reused; a program without one is linked by its first network launch."""
        from .link.linker import LinkedProgram

        linked = program if isinstance(program, LinkedProgram) else LinkedProgram(program)
        self.program = linked.program
        self._linked = linked

    @property
    def kernels(self) -> list[str]:
        return [k.name for k in self.program.kernels]

    @property
    def source_name(self) -> str:
        return self.program.source_name

    def __repr__(self) -> str:
        return f"<qgcc.Program {self.source_name} kernels: {', '.join(self.kernels)}>"

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self.kernels))

    def __getattr__(self, name: str) -> "KernelLauncher":
        if name.startswith("_") or name == "program":
            raise AttributeError(name)
        if name in self.kernels:
            return KernelLauncher(self, name)
        raise AttributeError(f"no kernel named '{name}'; the program has: {', '.join(self.kernels)}")

    def _prepare(self, grid, block, kernel, engine, device, args, shared=0, constants=None, dtype="fp32",
                 step="unfused"):
        from . import engines
        from .runtime.launch import make_launch

        grid3, block3 = dim3(grid, "grid"), dim3(block, "block")
        eng = engines.get(engine)
        dev, note = eng.resolve_device(device)
        dtype, dtype_note = eng.resolve_dtype(dtype)
        k = select_kernel(self.program, kernel)
        if not (isinstance(step, str) and step in engines.STEPS) and any(p.name == "step" for p in k.params):
            raise UsageError(f"step={step!r}: `step` names the batched step (qgrun --step); pass the kernel's "
                             f"parameter 'step' as args={{'step': ...}}")
        step, step_note = eng.resolve_step(step, dev)
        scalars, arrays = check_args(k, args)
        if isinstance(shared, bool) or not isinstance(shared, (int, np.integer)) or shared < 0:
            raise UsageError(f"shared={shared!r}: expected a number of bytes >= 0")
        launch = make_launch(self.program, k, grid3, block3, scalars, arrays, network=self._linked.network,
                             shared_bytes=int(shared), constants=check_constants(self.program, constants))
        for n_ in (note, dtype_note, step_note):
            if n_:
                warnings.warn(n_, stacklevel=3)
        shapes = {n: np.shape(a) for n, a in args.items() if isinstance(a, np.ndarray)}
        return eng, (dev, dtype, step), launch, shapes

    def launch(self, grid, block, *, kernel: str | None = None, engine: str = "neural", device: str = "cpu",
               dtype: str = "fp32", trace: bool = False, max_steps: int = DEFAULT_MAX_STEPS,
               on_step: Callable[[StepRecord], None] | None = None, args: dict[str, Any] | None = None,
               shared: int = 0, constants: dict[str, Any] | None = None,
               dump_states: str | os.PathLike | None = None, dump_every: int = 1, step: str = "unfused",
               **kwargs: Any) -> "Result":
        """Run one launch; keyword arguments (or `args=`, for parameters named like an option) are the
        kernel's parameters: numpy arrays of the pointee dtype for pointers (None: a null pointer, which
        has no buffer in the result), Python numbers for scalars.
        `shared` is the dynamic shared memory per block in bytes (qgrun --shared), `constants` sets
        __constant__ variables (numpy arrays, or numbers for scalars; qgrun --const).
        `dump_states` writes the network's states to that .npz (qgrun --dump-states, every
        `dump_every`-th step's input; docs/protocol.md, section 5a), also when the launch faults.
        `step` is the neural engine's batched step (qgrun --step: "unfused", "fused", "phased").
        Returns a Result; raises UsageError before running, a Fault if the kernel faults."""
        values = {**(args or {}), **kwargs}
        eng, (dev, dtype, step), launch, shapes = self._prepare(grid, block, kernel, engine, device, values, shared,
                                                                constants, dtype, step)
        records: list[StepRecord] | None = [] if trace else None
        callback = on_step
        if records is not None:
            callback = records.append if on_step is None else _both(records.append, on_step)
        dump = None
        if dump_states is not None:
            from .engines.states import StateDump, check_engine

            check_engine(eng.name, "dump_states", step)
            dump = StateDump(dump_every)
        t0 = time.perf_counter()
        try:
            result, buffers = run_launch(eng, launch, device=dev, max_steps=_max_steps(max_steps), on_step=callback,
                                         linked=self._linked, dtype=dtype, states=dump, step=step)
        except Fault as fault:
            if dump is not None:
                _save_dump(dump_states, dump, launch, eng.name, dev, dtype, fault.kind)
            raise
        if dump is not None:
            _save_dump(dump_states, dump, launch, eng.name, dev, dtype, "ok")
        return Result(self, launch, eng.name, dev, _shaped(buffers, shapes), result.stats,
                      round(time.perf_counter() - t0, 6), records, result.printf.lines, result.printf.dropped)

    def stream(self, grid, block, *, kernel: str | None = None, engine: str = "neural", device: str = "cpu",
               dtype: str = "fp32", max_steps: int = DEFAULT_MAX_STEPS, args: dict[str, Any] | None = None,
               shared: int = 0, constants: dict[str, Any] | None = None, step: str = "unfused",
               **kwargs: Any) -> "TraceStream":
        """Like launch, but an iterator over the trace records as the engine produces them (for long
        runs: nothing is kept); `.result` is the Result once the iterator is exhausted.  Arguments are
        checked now; a fault is raised by the iteration, after the records that precede it."""
        values = {**(args or {}), **kwargs}
        eng, dev, launch, shapes = self._prepare(grid, block, kernel, engine, device, values, shared, constants,
                                                 dtype, step)
        return TraceStream(self, eng, dev, launch, shapes, _max_steps(max_steps))


def _save_dump(path, dump, launch, engine: str, device: str, dtype: str, status: str) -> None:
    from .engines.states import dump_bytes, save

    save(os.fspath(path), dump_bytes(dump, launch, engine, device, dtype, status))


def _max_steps(n: Any) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise UsageError(f"max_steps={n!r}: expected a positive integer")
    return int(n)


def _both(f, g):
    def call(rec):
        f(rec)
        g(rec)
    return call


def _shaped(buffers: dict[str, np.ndarray], shapes: dict[str, tuple]) -> dict[str, np.ndarray]:
    return {n: (a.reshape(shapes[n]) if n in shapes and isinstance(a, np.ndarray) and int(np.prod(shapes[n])) == a.size
                else a) for n, a in buffers.items()}


@dataclass
class Result:
    """One launch's outcome: `outputs` (every buffer, numpy, pointee dtype, shaped like the array
    passed in), `stats` (qgcc.trace.Stats), `trace` (the StepRecords when asked, else None)."""

    program: Program
    launch: Any = field(repr=False)
    engine: str
    device: str
    outputs: dict[str, np.ndarray]
    stats: Stats
    wall_time_s: float
    trace: list[StepRecord] | None = field(default=None, repr=False)
    # device printf: one string per call, by block, thread, then call order (docs/subset.md),
    # and the cells of records dropped because the buffer was full
    printf: list[str] = field(default_factory=list)
    printf_dropped: int = 0

    def __getitem__(self, name: str) -> np.ndarray:
        return self.outputs[name]

    @property
    def kernel(self) -> str:
        return self.launch.kernel.name

    @property
    def grid(self) -> tuple[int, int, int]:
        return self.launch.grid

    @property
    def block(self) -> tuple[int, int, int]:
        return self.launch.block

    def summary(self) -> dict[str, Any]:
        """The object `qgrun --json` writes for this launch."""
        out: dict[str, Any] = {"kernel": self.kernel, "grid": list(self.grid), "block": list(self.block)}
        out.update({k: int(getattr(self.stats, k)) for k in STAT_KEYS})
        out.update(engine=self.engine, device=self.device, wall_time_s=self.wall_time_s, status="ok", exit_code=0)
        return out


class _Stop(BaseException):
    """Raised inside the engine's callback when the consumer of a TraceStream went away."""


class TraceStream:
    """Iterator over a launch's StepRecords, run by the engine in a worker thread with a bounded queue."""

    _END = object()

    def __init__(self, program: Program, eng, dev, launch, shapes, max_steps: int):
        self._q: queue.Queue = queue.Queue(maxsize=4096)
        self._closed = threading.Event()
        self.result: Result | None = None
        self._error: BaseException | None = None
        self._args = (program, eng, dev, launch, shapes, max_steps)
        self._thread: threading.Thread | None = None
        self._done = False

    def _put(self, item) -> None:
        while not self._closed.is_set():
            try:
                self._q.put(item, timeout=0.1)
                return
            except queue.Full:
                continue
        raise _Stop

    def _work(self) -> None:
        program, eng, (dev, dtype, step), launch, shapes, max_steps = self._args
        t0 = time.perf_counter()
        try:
            result, buffers = run_launch(eng, launch, device=dev, max_steps=max_steps, on_step=self._put, dtype=dtype,
                                         step=step)
            self.result = Result(program, launch, eng.name, dev, _shaped(buffers, shapes), result.stats,
                                 round(time.perf_counter() - t0, 6), None, result.printf.lines,
                                 result.printf.dropped)
        except _Stop:
            return
        except BaseException as e:  # handed to the consumer
            self._error = e
        try:
            self._put(self._END)
        except _Stop:
            pass

    def __iter__(self) -> Iterator[StepRecord]:
        return self

    def __next__(self) -> StepRecord:
        if self._done:
            raise StopIteration
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, name="qgcc-trace", daemon=True)
            self._thread.start()
        item = self._q.get()
        if item is self._END:
            self._done = True
            self._thread.join()
            if self._error is not None:
                raise self._error
            raise StopIteration
        return item

    def close(self) -> None:
        """Stop the launch early (the engine stops at its next step)."""
        self._closed.set()
        self._done = True
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> "TraceStream":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        self._closed.set()


class KernelLauncher:
    """`prog.vadd[grid, block](a, b, c, n)`: CUDA's launch syntax.  Positional arguments follow the
    kernel's parameters (keywords work too); after the run every numpy array passed for a non-const
    pointer receives the buffer's final contents.  Options (engine, device, max_steps, trace) are
    keywords; the Result is returned."""

    def __init__(self, program: Program, name: str):
        self.program, self.name = program, name

    def __repr__(self) -> str:
        k = self.program.program.kernel(self.name)
        return f"<qgcc kernel {self.name}({', '.join(p.describe() for p in k.params)})>"

    def __getitem__(self, shape) -> Callable[..., Result]:
        if not isinstance(shape, tuple) or len(shape) not in (2, 3):
            raise UsageError(f"{self.name}[...]: expected {self.name}[grid, block] or {self.name}[grid, block, "
                             f"shared_bytes], e.g. {self.name}[2, 4] or {self.name}[(2, 1), (4, 4)]")
        grid, block = shape[:2]
        shared = shape[2] if len(shape) == 3 else 0  # CUDA's <<<grid, block, sharedMemBytes>>>
        kernel = self.program.program.kernel(self.name)

        def call(*pos: Any, engine: str = "neural", device: str = "cpu", max_steps: int = DEFAULT_MAX_STEPS,
                 trace: bool = False, constants: dict[str, Any] | None = None, **kw: Any) -> Result:
            params = kernel.params
            if len(pos) > len(params):
                raise UsageError(f"{self.name}() takes {len(params)} arguments "
                                 f"({', '.join(p.name for p in params)}); {len(pos)} were given")
            values: dict[str, Any] = {}
            for p, v in zip(params, pos):
                values[p.name] = v
            for k, v in kw.items():
                if k in values:
                    raise UsageError(f"{self.name}(): argument '{k}' is given twice")
                values[k] = v
            result = self.program.launch(grid, block, kernel=self.name, engine=engine, device=device,
                                         max_steps=max_steps, trace=trace, args=values, shared=shared,
                                         constants=constants)
            for p in params:
                arr = values.get(p.name)
                if p.pointer and not p.const and isinstance(arr, np.ndarray) and arr.flags.writeable:
                    arr[...] = result.outputs[p.name].reshape(arr.shape)
                if p.indirect and isinstance(arr, (list, tuple)):  # `T **`: into each array of the list
                    for a, out in zip(arr, result.outputs[p.name]):
                        if a.flags.writeable:
                            a[...] = out.reshape(a.shape)
            return result

        return call
