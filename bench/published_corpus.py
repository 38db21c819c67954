"""Build the held-out corpus of bench/published.py: the device part of published CUDA files.

    python bench/published_corpus.py bench/published_corpus.json [OUTDIR]   (default /work/corpus)

bench/published_corpus.json names local git mirrors of the public repositories (the CUDA
samples, Rodinia, PolyBench/GPU, CUDA by Example; `fetch` them first) and the directories or
files to take.  Each translation unit with a `__global__` kernel (a .cu that no other file of
its directory includes) is written to OUTDIR/files with the local headers it includes; host
functions, host globals and host-only headers are dropped and everything else is kept
unchanged.  Kernel templates get the instances their host code launches (found in the
directory's sources, or named in the spec's "inst").  The output is third-party text: it is
kept outside this repository.  A source's "runs" ({path: [launch spec, ...]}) become its
files' manifest "runs" (bench/published_run.py).
"""
import json, os, re, subprocess, sys
from pathlib import Path

OUT = Path(sys.argv[2]) if len(sys.argv) > 2 else Path("/work/corpus")
HOST_HEADERS = {
    "GL/freeglut.h", "GL/gl.h", "GL/glew.h", "GL/glut.h", "algorithm", "avilib.h", "book.h",
    "chrono", "cpu_anim.h", "cpu_bitmap.h", "cstdlib", "ctype.h", "cuda_gl_interop.h",
    "cuda_profiler_api.h", "errno.h", "error.h", "exception.h", "fcntl.h", "fstream",
    "getopt.h", "gl_helper.h", "gpu_anim.h", "helper_cuda.h", "helper_cuda_drvapi.h",
    "helper_functions.h", "helper_gl.h", "helper_image.h", "helper_multiprocess.h",
    "helper_string.h", "helper_timer.h", "iomanip", "iostream", "map", "matrix.h", "memory",
    "memory.h", "multithreading.h", "omp.h", "polybench.c", "polybenchUtilFuncts.h",
    "pthread.h", "set", "signal.h", "sstream", "stdarg.h", "stdbool.h", "string", "sys/mman.h",
    "sys/resource.h", "sys/stat.h", "sys/time.h", "sys/types.h", "sys/utsname.h",
    "thrust/device_vector.h", "thrust/host_vector.h", "time.h", "timer.h", "unistd.h",
    "utility", "vector"
}
DEVICE_WORDS = ("__global__", "__device__", "__constant__", "__shared__", "texture<", "texture <", "surface<")


def git_show(repo, path):
    return subprocess.run(["git", "-C", repo, "show", f"HEAD:{path}"], capture_output=True, text=True,
                          errors="replace").stdout


def items(text):
    """Split text into top-level items: ('pp', text) for directives, ('item', text)."""
    out, i, n, cur, depth = [], 0, len(text), [], 0
    line_start = True
    transparent = []  # depths of transparent blocks (extern "C" {, namespace x {)
    def flush():
        s = "".join(cur)
        if s.strip():
            out.append(("item", s))
        cur.clear()
    while i < n:
        c = text[i]
        if line_start and c in " \t":
            cur.append(c); i += 1; continue
        if line_start and c == "#":
            j = i
            while j < n:
                if text[j] == "\n" and text[j - 1] != "\\":
                    break
                j += 1
            if depth == len(transparent):
                pre = re.sub(r"//[^\n]*|/\*.*?\*/", "", "".join(cur), flags=re.S)
                if pre.strip() == "" or pre.rstrip().endswith((";", "}")):
                    flush()
                    out.append(("pp", text[i:j + 1]))
                else:
                    cur.append(text[i:j + 1])
            else:
                cur.append(text[i:j + 1])
            i = j + 1; line_start = True; continue
        line_start = False
        if text.startswith("//", i):
            j = text.find("\n", i); j = n if j < 0 else j
            cur.append(text[i:j]); i = j; continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2); j = n if j < 0 else j + 2
            cur.append(text[i:j]); i = j; continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            cur.append(text[i:j + 1]); i = j + 1; continue
        if c == "\n":
            line_start = True
            cur.append(c); i += 1
            if depth == len(transparent) and not "".join(cur).strip():
                pass
            continue
        if c == "{":
            head = re.sub(r"//.*|/\*.*?\*/", "", "".join(cur), flags=re.S).strip()
            if depth == len(transparent) and (re.fullmatch(r'extern\s+"C"', head) or re.fullmatch(r"namespace(\s+\w+)?", head)):
                out.append(("open", "".join(cur) + "{"))
                cur.clear(); transparent.append(depth); depth += 1; i += 1; continue
            depth += 1; cur.append(c); i += 1; continue
        if c == "}":
            if transparent and depth - 1 == transparent[-1] and depth == len(transparent):
                flush(); out.append(("close", "}")); transparent.pop(); depth -= 1; i += 1; continue
            depth -= 1; cur.append(c); i += 1
            if depth == len(transparent):
                # end of a function body unless a ';' follows (struct, initialiser)
                k = i
                while k < n and text[k] in " \t\r\n":
                    k += 1
                if not text.startswith(";", k) and not re.match(r"\s*\w+\s*[;,=\[]", text[i:i+200]):
                    flush()
            continue
        if c == ";" and depth == len(transparent):
            cur.append(c); i += 1; flush(); continue
        cur.append(c); i += 1
    flush()
    return out


def keep_item(s):
    code = re.sub(r"//[^\n]*|/\*.*?\*/", "", s, flags=re.S).strip()
    if not code:
        return True  # comments
    if any(w in code for w in DEVICE_WORDS):
        return True
    head = code.split("{")[0]
    if re.match(r"(template\s*<[^{]*>\s*)?(typedef\s+)?(struct|class|union|enum)\b", code) and "(" not in head.split("struct")[0]:
        # a type definition (not a function returning a struct)
        if not re.search(r"\)\s*$", head.strip()):
            return True
    if re.match(r"namespace\s+\w+\s*=|using\s+namespace\b", code):
        return True
    if re.search(r'=\s*"', code) or re.match(r"(static\s+)?(const\s+)?char\s*\*", code):
        return False  # host strings (sample names)
    if re.match(r"typedef\b|using\b", code):
        return True
    if re.match(r"(static\s+)?(const|constexpr)\b", code) and "(" not in head:
        return True
    return False


def extract(repo, path, seen_headers, outdir, depth=0):
    text = git_show(repo, path)
    res = []
    for kind, s in items(text):
        if kind == "pp":
            m = re.match(r'\s*#\s*include\s*([<"])([^>"]+)[>"]', s)
            if m:
                name = m.group(2)
                base = os.path.basename(name)
                if base in HOST_HEADERS or name in HOST_HEADERS:
                    continue
                if m.group(1) == '"' or not name.startswith(("cuda", "std", "math", "string", "limits", "float", "assert", "c", "iostream", "vector", "device", "sm_", "helper_math")):
                    cand = os.path.normpath(os.path.join(os.path.dirname(path), name))
                    if git_show(repo, cand):
                        if cand not in seen_headers:
                            seen_headers.add(cand)
                            sub = extract(repo, cand, seen_headers, outdir, depth + 1)
                            dst = outdir / name
                            dst.parent.mkdir(parents=True, exist_ok=True)
                            dst.write_text(sub)
                        res.append(s); continue
            res.append(s)
        elif kind in ("open", "close"):
            res.append(s)
        else:
            if keep_item(s):
                res.append(s)
            else:
                # keep the line count roughly: replace with nothing
                pass
    return "".join(x if x.endswith("\n") else x + "\n" for x in res)


def instances(repo, path, text, alltext):
    names = re.findall(r"template\s*<[^;{]*?>\s*(?:static\s+)?__global__\s+(?:static\s+)?(?:__launch_bounds__\([^)]*\)\s*)?void\s+(?:__launch_bounds__\([^)]*\)\s*)?(\w+)", text)
    defs = dict(re.findall(r"#\s*define\s+(\w+)\s+(\w+)\s*\n", alltext))
    inst = []
    for nm in dict.fromkeys(names):
        for m in re.finditer(re.escape(nm) + r"\s*<([^<>;{}()]*?)>\s*(?:<<<|[,;)])", alltext):
            args = [a.strip() for a in m.group(1).split(",")]
            args = [defs.get(a, a) for a in args]
            ok = all(re.fullmatch(r"-?\d+[uUlL]*|true|false|float|double|int|unsigned( int)?|char|unsigned char|bool|long( long)?|unsigned long( long)?|uint|float[234]|int[234]|uint[234]", a) for a in args)
            if ok:
                inst.append(f"{nm}<{', '.join(args)}>")
                break
    return inst


def main():
    spec = json.loads(Path(sys.argv[1]).read_text())
    manifest = []
    for src in spec:
        repo = src["repo"]
        paths = list(src["files"])
        for d in src.get("dirs", []):
            listing = subprocess.run(["git", "-C", repo, "ls-tree", "-r", "--name-only", "HEAD", d + "/"], capture_output=True, text=True).stdout.split()
            cus = [p for p in listing if p.endswith(".cu")]
            texts = {p: git_show(repo, p) for p in listing if p.endswith((".cu", ".cuh", ".h", ".cpp"))}
            for p in cus:
                b = os.path.basename(p)
                if any(re.search(r'#\s*include\s*[<"]([^>"]*/)?' + re.escape(b) + r'[>"]', t) for q, t in texts.items() if q != p):
                    continue  # included by another file: part of that translation unit
                paths.append(p)
        for path in paths:
            text = git_show(repo, path)
            if "__global__" not in text and not re.search(r'#\s*include\s*"[^"]*(kernel|\.cu)', text):
                continue
            tag = src["tag"] + "/" + path.split("/", src.get("strip", 0))[-1] if src.get("strip") else src["tag"] + "/" + path
            outdir = OUT / "files" / os.path.dirname(tag)
            outdir.mkdir(parents=True, exist_ok=True)
            body = extract(repo, path, set(), outdir)
            def tu_text(text, d, seen):
                out = text
                for inc in re.findall(r'#\s*include\s*"([^"]+)"', text):
                    q = (d / inc).resolve()
                    if q.is_file() and q not in seen:
                        seen.add(q)
                        out += tu_text(q.read_text(), q.parent, seen)
                return out
            alltu = tu_text(body, outdir, set())
            if "__global__" not in alltu:
                continue
            dst = OUT / "files" / tag
            dst.write_text(body)
            # host text of the directory for instantiations
            d = os.path.dirname(path)
            sib = subprocess.run(["git", "-C", repo, "ls-tree", "--name-only", "HEAD", d + "/"], capture_output=True, text=True).stdout.split()
            alltext = "\n".join(git_show(repo, p) for p in sib if p.endswith((".cu", ".cpp", ".cuh", ".h")))
            manifest.append({"file": "files/" + tag, "source": f"{src['url']}/{path}", "instantiate": src.get("inst", {}).get(path, instances(repo, path, alltu, alltext))})
            if path in src.get("runs", {}):  # launch specs kept here (bench/published_spec.py's format)
                manifest[-1]["runs"] = src["runs"][path]
    # headers of the include directory, device part only
    for repo, path in [("/work/.mirror/cavazos-lab+PolyBench-ACC/repo", "CUDA/utilities/polybench.h")]:
        (OUT / "include").mkdir(exist_ok=True)
        (OUT / "include" / os.path.basename(path)).write_text(extract(repo, path, set(), OUT / "include"))
    (OUT / "manifest.json").write_text(json.dumps(manifest, indent=1))
    print(len(manifest), "entries")


main()
