"""A patched checkpoint's text outputs against its base's (issue 18: the user's experiment).

    python bench/checkpoint_text.py [BASE PATCHED] [--seqs 3] [--tokens 12] [--new-tokens 4]

Without BASE and PATCHED, builds a small base with transformers (Qwen3.5-2B text geometry,
2 text layers, random weights, bf16) and links samples/vadd.cu into it with `qgcc --base`.
Then, for Qwen3_5ForConditionalGeneration, AutoModelForImageTextToText and Qwen3_5ForCausalLM,
in float32 and in the checkpoint's own dtype, it loads both, runs the same random token
sequences, and prints the largest logit difference (0 means bit for bit), whether the
argmax tokens and greedy generations agree, the load time and the resident memory that
loading the patched checkpoint adds (the machine's 4.2 GB are not loaded).
"""
import argparse, gc, os, sys, tempfile, time
from pathlib import Path

import torch
import transformers

ROOT = Path(__file__).resolve().parents[1]


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def build(tmp: Path) -> tuple[Path, Path]:
    sys.path.insert(0, str(ROOT / "tests"))
    from test_checkpoint import tiny_config  # noqa: E402  (the tests' small base)

    torch.manual_seed(0)
    transformers.Qwen3_5ForConditionalGeneration(tiny_config(16)).to(torch.bfloat16).save_pretrained(tmp / "base")
    gc.collect()
    from click.testing import CliRunner

    from qgcc.cli.qgcc_cmd import main as qgcc

    r = CliRunner().invoke(qgcc, [str(ROOT / "samples" / "vadd.cu"), "--base", str(tmp / "base"), "-o",
                                  str(tmp / "patched")])
    if r.exit_code:
        sys.exit(r.output)
    return tmp / "base", tmp / "patched"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("dirs", nargs="*", metavar="BASE PATCHED")
    ap.add_argument("--seqs", type=int, default=3)
    ap.add_argument("--tokens", type=int, default=12)
    ap.add_argument("--new-tokens", type=int, default=4)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp:
        if args.dirs and len(args.dirs) != 2:
            ap.error("give both BASE and PATCHED, or neither")
        base_dir, patched_dir = map(Path, args.dirs) if args.dirs else build(Path(tmp))
        vocab = transformers.AutoConfig.from_pretrained(base_dir).get_text_config().vocab_size
        ids = torch.randint(0, vocab, (args.seqs, args.tokens), generator=torch.Generator().manual_seed(0))
        print(f"{'class':32} {'dtype':8} {'max|dlogit|':>11} {'max|logit|':>10} {'argmax':>6} {'generate':>8} "
              f"{'load s':>6} {'+RSS MB':>7}")
        for cls in ("Qwen3_5ForConditionalGeneration", "AutoModelForImageTextToText", "Qwen3_5ForCausalLM"):
            for dtype in ("float32", "auto"):
                load = getattr(transformers, cls).from_pretrained
                base = load(base_dir, dtype=dtype).eval()
                before, t = rss_mb(), time.perf_counter()
                patched = load(patched_dir, dtype=dtype).eval()
                took, grew = time.perf_counter() - t, rss_mb() - before
                with torch.no_grad():
                    a, b = base(input_ids=ids).logits.float(), patched(input_ids=ids).logits.float()
                gen = dict(max_new_tokens=args.new_tokens, do_sample=False)
                same_gen = base.generate(ids[:1], **gen).tolist() == patched.generate(ids[:1], **gen).tolist()
                print(f"{cls:32} {str(patched.dtype).removeprefix('torch.'):8} {(a - b).abs().max().item():11.4g} "
                      f"{a.abs().max().item():10.4g} {str(torch.equal(a.argmax(-1), b.argmax(-1))):>6} "
                      f"{str(same_gen):>8} {took:6.2f} {grew:7.0f}", flush=True)
                del base, patched
                gc.collect()


if __name__ == "__main__":
    main()
