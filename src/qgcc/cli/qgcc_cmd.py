"""`qgcc`: compile CUDA-C (.cu) or assemble qsass (.qsass) into a .qg; -S writes assembly; -d disassembles.

    qgcc KERNEL.cu [-o KERNEL.qg]          compile
    qgcc -S KERNEL.cu [-o KERNEL.qsass]    assembly with source annotations (-o - for stdout)
    qgcc KERNEL.qsass [-o KERNEL.qg]       assemble hand-written assembly
    qgcc -d KERNEL.qg [-o FILE]            disassemble (to stdout unless -o)
    qgcc KERNEL.cu --base DIR -o OUTDIR    link into a copy of a Qwen3.5 checkpoint (docs/checkpoint.md);
                                           KERNEL.qg reuses the layers baked into a .qg
    qgcc -D NAME[=VALUE] -I DIR KERNEL.cu  macros and #include directories (docs/subset.md)

The default output is the input path with its extension replaced.  Nothing is
written unless the whole compilation succeeds, and outputs are replaced atomically.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from ..version import __version__
from ..diagnostics import CheckpointError, OutputError, UsageError
from ..qgfile import FORMAT_VERSION as QG_FORMAT_VERSION
from .args import check_writable

from . import CONTEXT_SETTINGS, QG_EXTS, REPORTED, ToolCommand, compile_file, internal_error, report

TOOL = "qgcc"


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.realpath(a) == os.path.realpath(b)
    except OSError:  # pragma: no cover
        return False


def _write_text(path: str, text: str) -> None:
    from ..atomicfile import atomic_write

    if path == "-":
        click.echo(text, nl=False)
    else:
        atomic_write(path, text.encode("utf-8"))


def _link_checkpoint(input_path: str, base_dir: str, output: str | None, pp: dict,
                     machine_dtype: str = "base") -> int:
    """`--base`: the base is checked before compiling, so a wrong directory fails in a second.

    The input may also be a linked .qg, whose layers are then copied rather than linked again.
    """
    from ..checkpoint.base import inspect_base
    from ..checkpoint.writer import check_outdir, write_checkpoint
    from ..link.linker import link, to_tensors
    from ..link.schedule import CapacityError

    if output is None or output == "-":
        raise UsageError("--base needs -o OUTDIR, the new checkpoint directory")
    base = inspect_base(base_dir)
    check_outdir(output, base)
    if machine_dtype == "base":
        from ..checkpoint.machine_dtype import base_dtype

        machine_dtype = base_dtype(base.config, base.text_config)
    if Path(input_path).suffix.lower() in QG_EXTS:
        # A linked .qg already holds the layers: reuse them rather than link again.
        from ..qgfile import load

        qg = load(input_path)
        if "num_layers" not in qg.meta:
            raise UsageError(f"{input_path} was compiled with --no-link; give the .cu, or recompile it without "
                             f"--no-link")
        program, tensors, meta = qg.program, qg.tensors, qg.meta
    else:
        program = compile_file(input_path, **pp)
        try:
            tensors, meta = to_tensors(link(program))
        except CapacityError as e:
            raise UsageError(f"{input_path}: the program does not fit the compiled machine: {e}") from None
    try:
        write_checkpoint(base, program, tensors, meta, output, machine_dtype)
    except OSError as e:
        raise CheckpointError(f"cannot write {output}: {e.strerror or e}") from None
    return 0


def _run(input_path: str, output: str | None, asm_out: bool, disasm: bool, no_link: bool = False,
         base_dir: str | None = None, pp: dict | None = None, machine_dtype: str | None = None) -> int:
    from ..asm import disassemble
    from ..qgfile import load, save

    if base_dir is not None:
        if asm_out or disasm or no_link:
            raise UsageError("--base cannot be combined with -S, -d or --no-link")
        return _link_checkpoint(input_path, base_dir, output, pp or {}, machine_dtype or "base")
    if machine_dtype is not None:
        raise UsageError("--machine-dtype only applies with --base (a .qg always holds float32 layers)")
    if asm_out and disasm:
        raise UsageError("-S and -d cannot be combined")
    ext = Path(input_path).suffix.lower()
    if ext in QG_EXTS:
        if not disasm:
            raise UsageError(f"{input_path} is already compiled; use 'qgcc -d {input_path}' to disassemble "
                             f"it or 'qgrun {input_path} ...' to run it")
        if output is not None and output != "-":
            if _same_file(output, input_path):
                raise UsageError(f"-o {output} would overwrite the input")
            check_writable(f"-o {output}", output)
        program = load(input_path).program
        text = disassemble(program, header=f"disassembly of {input_path} (source: {program.source_name})")
        _write_text(output or "-", text)
        return 0
    if disasm:
        raise UsageError(f"-d disassembles a .qg file; {input_path} is not one")
    default_ext = ".qsass" if asm_out else ".qg"
    if output is None:
        output = str(Path(input_path).with_suffix(default_ext))
    if output != "-" and _same_file(output, input_path):
        raise UsageError(f"the output {output} would overwrite the input; choose another with -o")
    if output != "-":
        check_writable(f"-o {output}", output)
    program = compile_file(input_path, **(pp or {}))
    if asm_out:
        _write_text(output, disassemble(program, header=f"qsass for {program.source_name}, "
                                                        f"generated by qgcc {__version__}"))
    else:
        if output == "-":
            raise UsageError("a .qg cannot be written to stdout; give -o FILE.qg")
        tensors, meta = None, None
        if not no_link:
            from ..link.linker import link, to_tensors
            from ..link.schedule import CapacityError

            try:
                tensors, meta = to_tensors(link(program))
            except CapacityError as e:
                raise UsageError(f"{input_path}: the program does not fit the compiled machine: {e}") from None
        save(program, output, extra_tensors=tensors, extra_meta=meta)
    return 0


@click.command(name=TOOL, cls=ToolCommand, context_settings=CONTEXT_SETTINGS)
@click.argument("input_path", metavar="INPUT")
@click.option("-o", "output", metavar="OUTPUT",
              help="Output file (default: INPUT with .qg or .qsass; '-' = stdout for text).")
@click.option("-S", "asm_out", is_flag=True, help="Write qsass assembly with source annotations.")
@click.option("-d", "disasm", is_flag=True, help="Disassemble a .qg (to stdout unless -o).")
@click.option("--no-link", "no_link", is_flag=True,
              help="Write the program only, without baking the layers (network engines then link at run time).")
@click.option("--base", "base_dir", metavar="DIR",
              help="Link into a copy of this Hugging Face Qwen3.5 checkpoint; -o names the new directory.")
@click.option("--machine-dtype", "machine_dtype", type=click.Choice(["base", "bfloat16", "float32"]),
              default=None, help="With --base: store the machine's layers in the base's dtype (the default; "
                                 "bfloat16 for Qwen3.5-2B), or as given (docs/checkpoint.md).")
@click.option("-D", "defines", metavar="NAME[=VALUE]", multiple=True,
              help="Define a macro for a .cu file (NAME alone defines it as 1).")
@click.option("-I", "include_dirs", metavar="DIR", multiple=True,
              help="Search DIR for #include files of a .cu file.")
@click.option("--soft-float", "soft_float", is_flag=True,
              help="Compile float operations to the soft-float routines (integer code) instead of the "
                   "machine's float instructions, for comparison.")
@click.option("--instantiate", "instances", metavar="NAME<ARGS>", multiple=True,
              help="Instantiate a kernel template of a .cu file (e.g. 'matmul<8>', 'scale<float>').")
@click.version_option(__version__, "--version", prog_name=TOOL,
                      message=f"%(prog)s %(version)s (.qg format version {QG_FORMAT_VERSION})")
def main(input_path: str, output: str | None, asm_out: bool, disasm: bool, no_link: bool,
         base_dir: str | None, defines: tuple = (), include_dirs: tuple = (), soft_float: bool = False,
         instances: tuple = (), machine_dtype: str | None = None) -> int:
    """Compile a CUDA-C kernel file (.cu) or qsass assembly (.qsass) into a .qg program."""
    try:
        for d in include_dirs:
            if not os.path.isdir(d):
                raise UsageError(f"-I {d}: no such directory")
        pp = {"include_dirs": include_dirs, "defines": defines, "soft_float": soft_float, "instantiate": instances}
        return _run(input_path, output, asm_out, disasm, no_link, base_dir, pp, machine_dtype)
    except REPORTED as e:
        return report(TOOL, e)
    except OSError as e:
        return report(TOOL, OutputError(output or "the output", e))
    except Exception as e:
        return internal_error(TOOL, e)
