"""`qgrun --timeline FILE.svg|FILE.html`: one picture of a launch.

A row per warp and lane, a column per step (or, past ~1,100 steps, per group of steps, its
colour the mix of the states it covers).  Lane states: active (issuing), inactive (masked
off by divergence), ready (its warp is not the one issuing), waiting at a barrier, exited,
and no thread.  Marks: divergence and reconvergence (triangles above the warp), barrier
releases, loads, stores and atomics (on the lane), block boundaries (vertical lines).

`TimelineRecorder` is an on_step callback that keeps a few bytes per step (no trace);
`render_svg` / `render_html` draw it.  The SVG is written by hand: no plotting library.
"""

from __future__ import annotations

import html
import json
import os
from array import array
from typing import Any

import numpy as np

from .isa import Op
from .spec import SPEC
from .trace import StepRecord

WS = SPEC.warp_size
MAX_COLUMNS = 1100

# Lane states, in the order of the legend.
NONE, ACTIVE, INACTIVE, READY, BARRIER, EXITED = range(6)
STATE_NAMES = ["no thread", "active", "inactive (diverged)", "not started", "waiting at barrier", "exited"]
STATE_COLORS = [(255, 255, 255), (42, 157, 143), (244, 162, 97), (241, 245, 249), (142, 84, 233), (203, 213, 225)]
MARK_COLORS = {"ld": "#1d4ed8", "st": "#e11d48", "atom": "#f59e0b", "div": "#e76f51", "rec": "#0284c7",
               "bar": "#7c3aed"}

F_DIV, F_REC, F_WAIT, F_RELEASE, F_EXIT = 1, 2, 4, 8, 16
KINDS = ("ld", "st", "atom")


class TimelineRecorder:
    """on_step callback: per step the block, warp, pc, active mask, flags and per-lane access masks."""

    def __init__(self, launch, then=None):
        self.launch = launch
        self.then = then
        code = launch.program.code
        self._exit = {pc for pc, ins in enumerate(code) if ins.op is Op.EXIT}
        self.block = array("i")
        self.warp = array("b")
        self.pc = array("i")
        self.mask = array("b")
        self.flags = array("b")
        self.mem = {k: array("b") for k in KINDS}  # lane bit masks

    def __call__(self, rec: StepRecord) -> None:
        self.block.append(rec.block)
        self.warp.append(rec.warp)
        self.pc.append(rec.pc)
        self.mask.append(rec.active)
        f = (F_DIV if rec.diverged else 0) | (F_REC if rec.reconverged else 0)
        if rec.barrier == "wait":
            f |= F_WAIT
        elif rec.barrier == "release":
            f |= F_RELEASE
        if rec.pc in self._exit:
            f |= F_EXIT
        self.flags.append(f)
        m = {"ld": 0, "st": 0, "atom": 0}
        for acc in rec.mem:
            m[acc.kind] |= 1 << acc.lane
        for k in KINDS:
            self.mem[k].append(m[k])
        if self.then is not None:
            self.then(rec)

    @property
    def steps(self) -> int:
        return len(self.block)

    def states(self) -> np.ndarray:
        """(rows, steps) uint8 lane states; row = warp * 4 + lane.

        A lane keeps the state of its warp's latest instruction (active, or inactive when a
        divergent branch masked it off) until its warp issues again: warps take turns, and
        the picture shows each warp's own progress rather than whose turn it is."""
        nw = self.launch.warps_per_block
        threads = self.launch.threads_per_block
        rows = nw * WS
        fresh = np.array([READY if r < threads else NONE for r in range(rows)], dtype=np.uint8)
        base = fresh.copy()
        out = np.empty((rows, self.steps), dtype=np.uint8)
        cur_block = None
        lane_bits = [np.array([(m >> lane) & 1 for lane in range(WS)], dtype=bool) for m in range(16)]
        for s in range(self.steps):
            b = self.block[s]
            if b != cur_block:
                base[:] = fresh
                cur_block = b
            w = self.warp[s]
            lo = w * WS
            bits = lane_bits[self.mask[s] & 0xF]
            bseg = base[lo:lo + WS]
            bseg[bits] = ACTIVE
            bseg[~bits & ((bseg == READY) | (bseg == ACTIVE))] = INACTIVE
            out[:, s] = base
            f = self.flags[s]
            if f & F_EXIT:
                bseg[bits] = EXITED
            if f & F_RELEASE:
                base[base == BARRIER] = ACTIVE
            elif f & F_WAIT:
                bseg[bits] = BARRIER
        return out


def _hex(c) -> str:
    return "#%02x%02x%02x" % tuple(int(round(v)) for v in c)


def _fmt(n: int) -> str:
    return f"{n:,}"


def _nice_ticks(total: int, target: int = 8) -> list[int]:
    if total <= 1:
        return [0]
    raw = total / target
    mag = 10 ** int(np.floor(np.log10(raw)))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    return list(range(0, total, int(step)))


class _Layout:
    def __init__(self, rec: TimelineRecorder):
        self.steps = max(rec.steps, 1)
        self.nw = rec.launch.warps_per_block
        if self.steps <= MAX_COLUMNS:
            self.cols = self.steps
            self.cw = float(min(14, max(1, MAX_COLUMNS // self.steps)))
            self.per_col = 1.0
        else:
            self.cols = MAX_COLUMNS
            self.cw = 1.0
            self.per_col = self.steps / MAX_COLUMNS
        self.rh = 10 if self.nw <= 8 else 7
        self.strip = 8  # events strip above each warp's lanes
        self.gap = 5
        self.left, self.top = 78, 108
        self.plot_w = self.cols * self.cw
        self.warp_h = self.strip + WS * self.rh
        self.plot_h = self.nw * self.warp_h + (self.nw - 1) * self.gap
        self.width = int(max(self.left + self.plot_w + 24, 760))
        self.height = int(self.top + self.plot_h + 118)

    def col_of(self, step: int) -> int:
        return int(step // self.per_col) if self.per_col > 1 else step

    def x(self, col: float) -> float:
        return self.left + col * self.cw

    def warp_y(self, w: int) -> float:
        return self.top + w * (self.warp_h + self.gap)

    def row_y(self, w: int, lane: int) -> float:
        return self.warp_y(w) + self.strip + lane * self.rh


def _column_colors(states: np.ndarray, lay: _Layout) -> tuple[list[list[str]], np.ndarray]:
    """(colour per row per column, dominant state per row per column)."""
    rows = states.shape[0]
    if lay.per_col == 1:
        lut = [_hex(c) for c in STATE_COLORS]
        return [[lut[v] for v in states[r]] for r in range(rows)], states
    bounds = (np.arange(lay.cols) * lay.per_col).astype(np.int64)
    widths = np.diff(np.append(bounds, states.shape[1])).astype(np.float64)
    rgb = np.zeros((rows, lay.cols, 3))
    counts = np.zeros((len(STATE_COLORS), rows, lay.cols))
    for k, c in enumerate(STATE_COLORS):
        n = np.add.reduceat((states == k).astype(np.int32), bounds, axis=1)
        counts[k] = n
        rgb += (n / widths)[..., None] * np.array(c, dtype=np.float64)
    q = (np.round(rgb / 4) * 4).clip(0, 255)  # quantised so runs of similar columns merge
    colors = [[_hex(q[r, c]) for c in range(lay.cols)] for r in range(rows)]
    return colors, counts.argmax(axis=0).astype(np.uint8)


def render_svg(rec: TimelineRecorder, *, engine: str, device: str, status: str = "ok",
               stats: Any = None, title: str | None = None, _extra_attrs: str = "") -> str:
    launch = rec.launch
    lay = _Layout(rec)
    states = rec.states() if rec.steps else np.zeros((lay.nw * WS, 0), np.uint8)
    colors, dominant = _column_colors(states, lay) if rec.steps else ([[] for _ in range(lay.nw * WS)], states)
    out: list[str] = []
    a = out.append
    a(f'<svg xmlns="http://www.w3.org/2000/svg" width="{lay.width}" height="{lay.height}" '
      f'viewBox="0 0 {lay.width} {lay.height}" font-family="Inter, Helvetica, Arial, sans-serif" '
      f'data-steps="{rec.steps}" data-columns="{lay.cols}" data-steps-per-column="{lay.per_col:g}"{_extra_attrs}>')
    a('<rect class="background" x="0" y="0" width="100%" height="100%" fill="#ffffff"/>')

    # header
    k = launch.kernel
    shape = lambda d: "×".join(str(v) for v in d)  # noqa: E731
    name = title or f"{k.name}  ·  {os.path.basename(launch.program.source_name)}"
    a(f'<text x="{lay.left}" y="30" font-size="19" font-weight="700" fill="#0f172a">{html.escape(name)}</text>')
    a(f'<text x="{lay.left}" y="52" font-size="13" fill="#334155">grid {shape(launch.grid)}  ·  block '
      f'{shape(launch.block)}  ·  {launch.num_blocks} block{"s" if launch.num_blocks != 1 else ""} of '
      f'{launch.warps_per_block} warp{"s" if launch.warps_per_block != 1 else ""}  ·  engine {html.escape(engine)} '
      f'({html.escape(device)})  ·  status <tspan font-weight="700" fill="{"#15803d" if status == "ok" else "#b91c1c"}">'
      f'{html.escape(status)}</tspan></text>')
    if stats is not None:
        counts = (f"{_fmt(stats.steps)} steps  ·  {_fmt(stats.divergent_steps)} divergent  ·  "
                  f"{_fmt(stats.barrier_waits)} barrier waits  ·  {_fmt(stats.loads)} loads  ·  "
                  f"{_fmt(stats.stores)} stores  ·  {_fmt(stats.atomics)} atomics")
    else:
        counts = f"{_fmt(rec.steps)} steps"
    if lay.per_col > 1:
        counts += f"  ·  one column = {lay.per_col:.1f} steps"
    a(f'<text x="{lay.left}" y="72" font-size="12" fill="#64748b">{counts}</text>')

    # block bands above the plot
    bstarts = [0] + [s for s in range(1, rec.steps) if rec.block[s] != rec.block[s - 1]]
    bends = bstarts[1:] + [rec.steps]
    for i, (s0, s1) in enumerate(zip(bstarts, bends)):
        if not rec.steps:
            break
        x0, x1 = lay.x(s0 / lay.per_col), lay.x(s1 / lay.per_col)
        a(f'<rect class="block-band" x="{x0:.1f}" y="{lay.top - 14}" width="{max(x1 - x0, 0.5):.1f}" height="10" '
          f'fill="{"#cbd5e1" if i % 2 == 0 else "#94a3b8"}"/>')
        label = f"block {rec.block[s0]}"
        if x1 - x0 > 7 * len(label):
            a(f'<text x="{(x0 + x1) / 2:.1f}" y="{lay.top - 18}" font-size="10" text-anchor="middle" '
              f'fill="#475569">{label}</text>')

    # cells (run-length encoded per row)
    a('<g class="cells" shape-rendering="crispEdges">')
    for w in range(lay.nw):
        for lane in range(WS):
            r = w * WS + lane
            y = lay.row_y(w, lane)
            row = colors[r]
            c0 = 0
            while c0 < len(row):
                c1 = c0
                while c1 + 1 < len(row) and row[c1 + 1] == row[c0]:
                    c1 += 1
                if row[c0] != "#ffffff":
                    a(f'<rect x="{lay.x(c0):.1f}" y="{y:.1f}" width="{(c1 - c0 + 1) * lay.cw:.1f}" '
                      f'height="{lay.rh - 1}" fill="{row[c0]}"/>')
                c0 = c1 + 1
    a('</g>')

    # row labels and warp frames
    for w in range(lay.nw):
        y0 = lay.warp_y(w)
        a(f'<text class="warp-label" x="{lay.left - 44}" y="{lay.row_y(w, 0) + 2 * lay.rh + 4:.1f}" font-size="12" '
          f'font-weight="700" fill="#0f172a" text-anchor="end">w{w}</text>')
        for lane in range(WS):
            a(f'<text class="lane-label" x="{lay.left - 6}" y="{lay.row_y(w, lane) + lay.rh - 2:.1f}" '
              f'font-size="{min(9, lay.rh)}" fill="#64748b" text-anchor="end">lane {lane}</text>')
        a(f'<line x1="{lay.left}" x2="{lay.left + lay.plot_w:.1f}" y1="{y0 + lay.strip - 0.5:.1f}" '
          f'y2="{y0 + lay.strip - 0.5:.1f}" stroke="#e2e8f0" stroke-width="0.5"/>')

    # marks
    a('<g class="marks">')
    small = lay.per_col == 1
    seen: set[tuple] = set()
    for s in range(rec.steps):
        f = rec.flags[s]
        w = rec.warp[s]
        col = lay.col_of(s)
        cx = lay.x(col) + lay.cw / 2
        ys = lay.warp_y(w)
        for bit, cls, up in ((F_DIV, "div", False), (F_REC, "rec", True)):
            if f & bit and (small or (cls, w, col) not in seen):
                seen.add((cls, w, col))
                h = min(6.0, max(lay.cw, 4.0))
                if up:
                    pts = f"{cx - h / 2:.1f},{ys + 7:.1f} {cx + h / 2:.1f},{ys + 7:.1f} {cx:.1f},{ys + 1:.1f}"
                else:
                    pts = f"{cx - h / 2:.1f},{ys + 1:.1f} {cx + h / 2:.1f},{ys + 1:.1f} {cx:.1f},{ys + 7:.1f}"
                a(f'<polygon class="mk-{cls}" points="{pts}" fill="{MARK_COLORS[cls]}"/>')
        if f & F_RELEASE and (small or ("bar", col) not in seen):
            seen.add(("bar", col))
            a(f'<line class="mk-bar" x1="{cx:.1f}" x2="{cx:.1f}" y1="{lay.top - 3}" '
              f'y2="{lay.top + lay.plot_h:.1f}" stroke="{MARK_COLORS["bar"]}" stroke-width="1" '
              f'stroke-dasharray="2,2" opacity="0.7"/>')
        for kind in KINDS:
            m = rec.mem[kind][s]
            if not m:
                continue
            for lane in range(WS):
                if not (m >> lane & 1) or (not small and (kind, w, lane, col) in seen):
                    continue
                seen.add((kind, w, lane, col))
                y = lay.row_y(w, lane) + (lay.rh - 1) / 2
                if small and lay.cw >= 5:
                    r = min(lay.cw, lay.rh) * 0.3
                    if kind == "atom":
                        a(f'<rect class="mk-atom" x="{cx - r:.1f}" y="{y - r:.1f}" width="{2 * r:.1f}" '
                          f'height="{2 * r:.1f}" fill="{MARK_COLORS[kind]}" transform="rotate(45 {cx:.1f} {y:.1f})"/>')
                    else:
                        a(f'<circle class="mk-{kind}" cx="{cx:.1f}" cy="{y:.1f}" r="{r:.1f}" '
                          f'fill="{MARK_COLORS[kind] if kind == "st" else "#ffffff"}" '
                          f'stroke="{MARK_COLORS[kind]}" stroke-width="1.2"/>')
                else:
                    a(f'<rect class="mk-{kind}" x="{lay.x(col):.1f}" y="{y - 1.5:.1f}" width="{max(lay.cw, 1):.1f}" '
                      f'height="3" fill="{MARK_COLORS[kind]}"/>')
    a('</g>')

    # block boundaries
    for s0 in bstarts[1:]:
        x = lay.x(s0 / lay.per_col)
        a(f'<line class="block-sep" x1="{x:.1f}" x2="{x:.1f}" y1="{lay.top - 14}" y2="{lay.top + lay.plot_h + 4:.1f}" '
          f'stroke="#0f172a" stroke-width="1.2"/>')

    # step axis
    yb = lay.top + lay.plot_h + 6
    a(f'<line x1="{lay.left}" x2="{lay.left + lay.plot_w:.1f}" y1="{yb}" y2="{yb}" stroke="#94a3b8"/>')
    for t in _nice_ticks(rec.steps):
        x = lay.x(t / lay.per_col)
        a(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{yb}" y2="{yb + 4}" stroke="#94a3b8"/>')
        a(f'<text x="{x:.1f}" y="{yb + 15}" font-size="10" fill="#64748b" text-anchor="middle">{_fmt(t)}</text>')
    a(f'<text x="{lay.left + lay.plot_w:.1f}" y="{yb + 28}" font-size="10" fill="#64748b" '
      f'text-anchor="end">step →</text>')

    # legend
    ly = yb + 46
    x = float(lay.left)
    for st in (ACTIVE, INACTIVE, BARRIER, EXITED, READY):
        a(f'<rect x="{x:.0f}" y="{ly - 9}" width="12" height="10" fill="{_hex(STATE_COLORS[st])}" stroke="#cbd5e1" '
          f'stroke-width="0.5"/>')
        a(f'<text x="{x + 16:.0f}" y="{ly}" font-size="11" fill="#334155">{STATE_NAMES[st]}</text>')
        x += 22 + 6.2 * len(STATE_NAMES[st])
    ly += 22
    x = float(lay.left)
    items = [("div", "divergence"), ("rec", "reconvergence"), ("ld", "load"), ("st", "store"),
             ("atom", "atomic"), ("bar", "barrier release"), ("sep", "block boundary")]
    for kind, label in items:
        if kind in ("div", "rec"):
            pts = (f"{x},{ly - 8} {x + 10},{ly - 8} {x + 5},{ly}" if kind == "div"
                   else f"{x},{ly} {x + 10},{ly} {x + 5},{ly - 8}")
            a(f'<polygon points="{pts}" fill="{MARK_COLORS[kind]}"/>')
        elif kind == "ld":
            a(f'<circle cx="{x + 5}" cy="{ly - 4}" r="3.5" fill="#ffffff" stroke="{MARK_COLORS[kind]}" stroke-width="1.4"/>')
        elif kind == "st":
            a(f'<circle cx="{x + 5}" cy="{ly - 4}" r="3.5" fill="{MARK_COLORS[kind]}"/>')
        elif kind == "atom":
            a(f'<rect x="{x + 2}" y="{ly - 7}" width="6" height="6" fill="{MARK_COLORS[kind]}" '
              f'transform="rotate(45 {x + 5} {ly - 4})"/>')
        elif kind == "bar":
            a(f'<line x1="{x + 5}" x2="{x + 5}" y1="{ly - 10}" y2="{ly + 2}" stroke="{MARK_COLORS[kind]}" '
              f'stroke-dasharray="2,2"/>')
        else:
            a(f'<line x1="{x + 5}" x2="{x + 5}" y1="{ly - 10}" y2="{ly + 2}" stroke="#0f172a" stroke-width="1.2"/>')
        a(f'<text x="{x + 15}" y="{ly}" font-size="11" fill="#334155">{label}</text>')
        x += 26 + 6.2 * len(label)
    a('</svg>')
    return "\n".join(out) + "\n"


_JS = r"""
(function () {
  const svg = document.querySelector('svg'), tip = document.getElementById('tip');
  const D = JSON.parse(document.getElementById('timeline-data').textContent);
  const pt = svg.createSVGPoint();
  svg.addEventListener('mousemove', function (ev) {
    pt.x = ev.clientX; pt.y = ev.clientY;
    const p = pt.matrixTransform(svg.getScreenCTM().inverse());
    const col = Math.floor((p.x - D.left) / D.cw);
    let row = -1;
    for (let i = 0; i < D.rows.length; i++) { const r = D.rows[i]; if (p.y >= r[0] && p.y < r[0] + D.rh) { row = i; break; } }
    if (col < 0 || col >= D.cols.length || row < 0) { tip.style.display = 'none'; return; }
    const c = D.cols[col], w = D.rows[row][1], lane = D.rows[row][2];
    let s = (c[0] === c[1] ? 'step ' + c[0] : 'steps ' + c[0] + '–' + c[1]) + ' · block ' + c[2] +
            '<br><b>warp ' + w + ', lane ' + lane + '</b>: ' + D.names[+D.states[row][col]];
    if (c[3] >= 0) {
      const ins = D.code[c[4]] || ['?', ''];
      s += '<br>warp ' + c[3] + ' issues pc ' + c[4] + ': <code>' + ins[0] + '</code>';
      if (ins[1]) s += '<br><i>' + ins[1] + '</i>';
      if (c[5]) s += '<br>' + c[5];
    }
    tip.innerHTML = s; tip.style.display = 'block';
    tip.style.left = (ev.pageX + 14) + 'px'; tip.style.top = (ev.pageY + 14) + 'px';
  });
  svg.addEventListener('mouseleave', function () { tip.style.display = 'none'; });
})();
"""


def render_html(rec: TimelineRecorder, *, engine: str, device: str, status: str = "ok", stats: Any = None) -> str:
    from .traceout import Describer

    svg = render_svg(rec, engine=engine, device=device, status=status, stats=stats)
    lay = _Layout(rec)
    states = rec.states() if rec.steps else np.zeros((lay.nw * WS, 0), np.uint8)
    _, dominant = _column_colors(states, lay) if rec.steps else (None, states)
    describe = Describer(rec.launch.program)
    cols = []
    for c in range(lay.cols if rec.steps else 0):
        s0 = int(np.ceil(c * lay.per_col)) if lay.per_col > 1 else c
        s1 = (int(np.ceil((c + 1) * lay.per_col)) - 1) if lay.per_col > 1 else c
        s1 = min(max(s1, s0), rec.steps - 1)
        if s0 == s1:
            f = rec.flags[s0]
            notes = [n for bit, n in ((F_DIV, "diverges"), (F_REC, "reconverges"), (F_WAIT, "waits at the barrier"),
                                      (F_RELEASE, "releases the barrier")) if f & bit]
            notes += [f"{k} lanes {', '.join(str(i) for i in range(WS) if rec.mem[k][s0] >> i & 1)}"
                      for k in KINDS if rec.mem[k][s0]]
            cols.append([s0, s1, rec.block[s0], rec.warp[s0], rec.pc[s0], ", ".join(notes)])
        else:
            cols.append([s0, s1, rec.block[s0], -1, -1, ""])
    used = sorted(set(rec.pc))
    code = {pc: [html.escape(describe(pc)[0]),
                 html.escape(f"line {describe(pc)[1]}: {describe(pc)[2]}" if describe(pc)[2] else "")]
            for pc in used}
    rows = [[lay.row_y(w, lane), w, lane] for w in range(lay.nw) for lane in range(WS)]
    data = {"left": lay.left, "cw": lay.cw, "rh": lay.rh, "cols": cols, "code": code, "rows": rows,
            "states": ["".join(str(int(v)) for v in dominant[r]) for r in range(dominant.shape[0])],
            "names": STATE_NAMES}
    title = html.escape(f"{rec.launch.kernel.name}: qgrun timeline")
    payload = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title>\n"
            "<style>body{margin:24px;background:#f8fafc;font-family:Inter,Helvetica,Arial,sans-serif}"
            "svg{background:#fff;box-shadow:0 1px 4px #0002;border-radius:6px}"
            "#tip{position:absolute;display:none;background:#0f172aee;color:#f8fafc;padding:6px 9px;"
            "border-radius:5px;font-size:12px;line-height:1.45;pointer-events:none;max-width:460px}"
            "#tip code{color:#fde68a}</style></head><body>\n"
            f"{svg}<div id=\"tip\"></div>\n"
            f"<script type=\"application/json\" id=\"timeline-data\">{payload}</script>\n"
            f"<script>{_JS}</script>\n</body></html>\n")


def render(path: str, rec: TimelineRecorder, **kw: Any) -> bytes:
    """The file for `path` by its extension: .html is interactive, anything else SVG."""
    text = render_html(rec, **kw) if path.lower().endswith((".html", ".htm")) else render_svg(rec, **kw)
    return text.encode("utf-8")
