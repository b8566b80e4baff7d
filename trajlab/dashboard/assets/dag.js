/* trajlab dashboard: the step DAG, drawn on one <canvas> (#dag-canvas) by this file.
 *
 * Why not Cytoscape: measured in headless Chromium (CPU profile of a 2,000-node, 3,757-edge DAG),
 * Cytoscape spent ~2.7 s of main thread per load computing the style of every element, measuring every
 * label and drawing, against a 2 s budget that already holds ~1.1 s of page load. This renderer keeps
 * the nodes and edges in flat arrays and draws only what is in view: edges batched per type (one path
 * each), node shapes, highlight halos, labels when they are big enough to read.
 *
 * The server sends the DAG once (in the trajectory page itself, or from the callback when the folding
 * options change) in a compact column form, split into chunks (top layers first); one chunk is added
 * per animation frame, so a long run shows its beginning at once and never blocks the page.
 *
 * What is drawn: fill = modality, outline = status (thicker when failed), shape = kind (rounded square
 * step, barrel with a double outline = folded run, hexagon = folded sub-agent, star = answer step), halos
 * for the DAG's candidates (blue), evidence (yellow), a human's decisive step (green) and the label's
 * decisive step (orange, black outline), a blue veil on the selected step; every edge as a line coloured
 * by type (retry dashed), with an arrow head once zoomed in enough to see it; parallel edges of
 * different types between the same two nodes bend apart so none hides another.
 *
 * Interaction: drag to pan, wheel to zoom (around the pointer), click a node to select it. A click is
 * sent to Dash through the `dag-tap` store ({id, kind, step, agent}); the server opens the step in the
 * inspector, or unfolds a folded run or sub-agent. Labels are drawn with fillText (text, never HTML);
 * the hover title is a plain attribute.
 *
 * window.trajlabDag is a small read API over what is drawn (tests and the benchmark use it).
 */
(function () {
  'use strict';
  const F = {decisive: 1, 'human-decisive': 2, evidence: 4, candidate: 8, 'selected-step': 16,
    answer: 32, 'answer-path': 64, failed: 128, group: 256, agent: 512};
  const EDGE_WIDTH = {sequence: 1, data: 2, retry: 2, answer: 2.5};
  const EDGE_ORDER = ['sequence', 'summary', 'spawn', 'return', 'data', 'retry', 'answer'];
  const MIN_ZOOM = 0.05;
  const FLOOR_ZOOM = 0.002;  // fit() goes below MIN_ZOOM down to this to show a tall graph whole
  const MAX_ZOOM = 1.6;
  const FONT_PX = 11;
  const MIN_FONT_PX = 7;  // labels smaller than this on screen are not drawn (as Cytoscape did)
  const CHUNK_BUDGET_MS = 40;  // main-thread time spent adding chunks before the next frame (< a long task)
  const FONT = FONT_PX + 'px system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif';

  const empty = () => ({
    n: {id: [], label: [], kind: [], step: [], first: [], last: [], count: [], agent: [], modality: [],
      status: [], x: [], y: [], flags: [], fill: [], border: [], classes: []},
    e: {s: [], t: [], type: [], count: [], bend: []},
    index: new Map(), pairs: new Map(),
  });
  const S = {
    canvas: null, ctx: null, w: 0, h: 0, ratio: 1, scale: 1, tx: 0, ty: 0,
    g: empty(), style: null, selected: -1, hover: -1, frame: 0, drag: null, observers: null,
  };

  // -- data ----------------------------------------------------------------------------------------

  const addChunk = function (chunk, data) {
    S.minZoom = undefined;  // the extent changes: recomputed on the next fit or zoom
    const g = S.g;
    const n = chunk.n;
    for (let i = 0; i < n.id.length; i++) {
      const kind = n.kind[i];
      let flags = 0;
      const cls = n.classes[i] ? n.classes[i].split(' ') : [];
      for (const c of cls) { flags |= F[c] || 0; }
      g.index.set(n.id[i], g.n.id.length);
      g.n.id.push(n.id[i]);
      g.n.label.push(String(n.label[i]));
      g.n.kind.push(kind);
      g.n.step.push(kind === 'step' ? n.first[i] : null);
      g.n.first.push(n.first[i]);
      g.n.last.push(n.last[i]);
      g.n.count.push(n.count[i]);
      g.n.agent.push(n.agent[i]);
      g.n.modality.push(n.modality[i]);
      g.n.status.push(n.status[i]);
      g.n.x.push(n.x[i]);
      g.n.y.push(n.y[i]);
      g.n.flags.push(flags);
      g.n.classes.push(cls);
      g.n.fill.push(kind === 'agent' ? data.agent_fill : (data.modality_colors[n.modality[i]] || '#FFFFFF'));
      g.n.border.push(data.status_colors[n.status[i]] || '#404040');
    }
    const e = chunk.e;
    for (let i = 0; i < e.source.length; i++) {
      const s = g.index.get(e.source[i]);
      const t = g.index.get(e.target[i]);
      if (s === undefined || t === undefined) { continue; }  // both ends are always sent first
      const k = g.e.s.length;
      g.e.s.push(s);
      g.e.t.push(t);
      g.e.type.push(e.type[i]);
      g.e.count.push(e.count[i]);
      g.e.bend.push(0);
      // edges of several types between the same two nodes bend apart (one stays straight when odd)
      const key = s < t ? s + ':' + t : t + ':' + s;
      const same = g.pairs.get(key);
      if (same) {
        same.push(k);
        same.forEach((j, m) => { g.e.bend[j] = (m - (same.length - 1) / 2) * 14; });
      } else {
        g.pairs.set(key, [k]);
      }
    }
  };

  const half = function (i) {  // half width and height of node i
    const f = S.g.n.flags[i];
    if (f & F.agent) { return [17, 15]; }
    if (f & F.answer) { return [14, 14]; }
    if (f & F.group) { return [15, 15]; }
    return [11, 11];
  };

  // -- drawing -------------------------------------------------------------------------------------

  const request = function () {
    if (!S.frame) { S.frame = window.requestAnimationFrame(draw); }
  };

  // the graph's extent and the zoom at which it fits the canvas with `pad` pixels around it
  const bounds = function (pad) {
    const g = S.g;
    let x0 = Infinity; let y0 = Infinity; let x1 = -Infinity; let y1 = -Infinity;
    S.ctx.font = FONT;
    for (let i = 0; i < g.n.id.length; i++) {
      const [hw, hh] = half(i);
      const lw = g.n.id.length <= 400 ? S.ctx.measureText(g.n.label[i]).width + 6 : 7 * g.n.label[i].length;
      x0 = Math.min(x0, g.n.x[i] - hw - 10); x1 = Math.max(x1, g.n.x[i] + hw + lw);
      y0 = Math.min(y0, g.n.y[i] - hh - 10); y1 = Math.max(y1, g.n.y[i] + hh + 10);
    }
    const sc = Math.min((S.w - 2 * pad) / Math.max(1, x1 - x0), (S.h - 2 * pad) / Math.max(1, y1 - y0));
    // zooming out stops at MIN_ZOOM, or further out where a tall graph fits whole (every node in view)
    S.minZoom = Math.max(FLOOR_ZOOM, Math.min(MIN_ZOOM, sc));
    return [x0, y0, x1, y1, sc];
  };

  const fit = function (pad) {
    if (!S.canvas || !S.w || !S.g.n.id.length) { return; }
    const [x0, y0, x1, y1, sc] = bounds(pad === undefined ? 30 : pad);
    S.scale = Math.max(S.minZoom, Math.min(MAX_ZOOM, sc));
    S.tx = (S.w - (x0 + x1) * S.scale) / 2;
    S.ty = (S.h - (y0 + y1) * S.scale) / 2;
    request();
  };

  const shape = function (ctx, i, x, y, grow) {
    const f = S.g.n.flags[i];
    const [hw0, hh0] = half(i);
    const hw = hw0 + grow; const hh = hh0 + grow;
    ctx.beginPath();
    if (f & F.agent) {
      ctx.moveTo(x - hw, y); ctx.lineTo(x - hw / 2, y - hh); ctx.lineTo(x + hw / 2, y - hh);
      ctx.lineTo(x + hw, y); ctx.lineTo(x + hw / 2, y + hh); ctx.lineTo(x - hw / 2, y + hh);
      ctx.closePath();
    } else if ((f & F.answer) && !grow) {
      for (let k = 0; k < 10; k++) {
        const r = k % 2 ? hw * 0.45 : hw;
        const a = -Math.PI / 2 + k * Math.PI / 5;
        if (k) { ctx.lineTo(x + r * Math.cos(a), y + r * Math.sin(a)); } else { ctx.moveTo(x + r * Math.cos(a), y + r * Math.sin(a)); }
      }
      ctx.closePath();
    } else if (f & F.group) {
      ctx.roundRect(x - hw, y - hh, 2 * hw, 2 * hh, hw * 0.45);
    } else {
      ctx.roundRect(x - hw, y - hh, 2 * hw, 2 * hh, Math.min(5 + grow, hw));
    }
  };

  const draw = function () {
    S.frame = 0;
    if (!attach()) { return; }
    const ctx = S.ctx; const g = S.g; const sc = S.scale;
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.clearRect(0, 0, S.canvas.width, S.canvas.height);
    ctx.setTransform(S.ratio * sc, 0, 0, S.ratio * sc, S.ratio * S.tx, S.ratio * S.ty);
    const m = 40 / Math.max(sc, 0.2);
    const vx0 = -S.tx / sc - m; const vy0 = -S.ty / sc - m;
    const vx1 = (S.w - S.tx) / sc + m; const vy1 = (S.h - S.ty) / sc + m;
    const nx = g.n.x; const ny = g.n.y;
    const inView = (i) => nx[i] >= vx0 && nx[i] <= vx1 && ny[i] >= vy0 && ny[i] <= vy1;

    // edges, one path per type; arrow heads once they are at least ~3 px long on screen
    const arrows = sc >= 0.4;
    const byType = new Map();
    for (let k = 0; k < g.e.s.length; k++) {
      const a = g.e.s[k]; const b = g.e.t[k];
      if ((nx[a] < vx0 && nx[b] < vx0) || (nx[a] > vx1 && nx[b] > vx1) ||
          (ny[a] < vy0 && ny[b] < vy0) || (ny[a] > vy1 && ny[b] > vy1)) { continue; }
      let list = byType.get(g.e.type[k]);
      if (!list) { list = []; byType.set(g.e.type[k], list); }
      list.push(k);
    }
    const types = [...byType.keys()].sort((p, q) => EDGE_ORDER.indexOf(p) - EDGE_ORDER.indexOf(q));
    for (const t of types) {
      const ks = byType.get(t);
      const color = S.style.edge_colors[t] || '#999999';
      ctx.strokeStyle = color;
      ctx.lineWidth = Math.max(EDGE_WIDTH[t] || 1.5, 0.8 / sc);
      ctx.setLineDash(t === 'retry' ? [6, 4] : []);
      ctx.beginPath();
      const heads = [];
      for (const k of ks) {
        const a = g.e.s[k]; const b = g.e.t[k];
        const x0 = nx[a]; const y0 = ny[a]; const x1 = nx[b]; const y1 = ny[b];
        let fx = x0; let fy = y0;  // where the last stretch comes from (for the arrow head)
        ctx.moveTo(x0, y0);
        const bend = g.e.bend[k];
        if (bend) {
          const lo = a < b;  // bend relative to one fixed direction per pair
          const dx = (lo ? x1 - x0 : x0 - x1); const dy = (lo ? y1 - y0 : y0 - y1);
          const len = Math.hypot(dx, dy) || 1;
          const cx = (x0 + x1) / 2 - dy / len * bend * 2; const cy = (y0 + y1) / 2 + dx / len * bend * 2;
          ctx.quadraticCurveTo(cx, cy, x1, y1);
          fx = cx; fy = cy;
        } else {
          ctx.lineTo(x1, y1);
        }
        if (arrows) { heads.push([fx, fy, b]); }
      }
      ctx.stroke();
      if (heads.length) {
        ctx.setLineDash([]);
        ctx.fillStyle = color;
        ctx.beginPath();
        for (const [fx, fy, b] of heads) {
          const dx = nx[b] - fx; const dy = ny[b] - fy; const len = Math.hypot(dx, dy) || 1;
          const ux = dx / len; const uy = dy / len;
          const r = half(b)[0] + 1;
          const px = nx[b] - ux * r; const py = ny[b] - uy * r;
          ctx.moveTo(px, py);
          ctx.lineTo(px - ux * 7 - uy * 3.5, py - uy * 7 + ux * 3.5);
          ctx.lineTo(px - ux * 7 + uy * 3.5, py - uy * 7 - ux * 3.5);
          ctx.closePath();
        }
        ctx.fill();
      }
    }
    ctx.setLineDash([]);

    const visible = [];
    for (let i = 0; i < nx.length; i++) { if (inView(i)) { visible.push(i); } }
    // halos under the marked nodes (weakest first, so the decisive step's is on top)
    const marks = S.style.marks;
    for (const [flag, mk] of [[F.candidate, marks.candidate], [F.evidence, marks.evidence],
      [F['human-decisive'], marks.human_decisive], [F.decisive, marks.decisive]]) {
      ctx.globalAlpha = mk.opacity;
      ctx.fillStyle = mk.color;
      for (const i of visible) {
        if (g.n.flags[i] & flag) { shape(ctx, i, nx[i], ny[i], mk.padding); ctx.fill(); }
      }
    }
    ctx.globalAlpha = 1;
    // nodes
    for (const i of visible) {
      const f = g.n.flags[i];
      shape(ctx, i, nx[i], ny[i], 0);
      ctx.fillStyle = g.n.fill[i];
      ctx.fill();
      ctx.strokeStyle = f & F.decisive ? '#000000' : g.n.border[i];
      ctx.lineWidth = f & F.decisive ? 4 : (f & F.failed ? 3 : 2);
      if (f & F.group) {  // double outline
        ctx.lineWidth = 1.5;
        ctx.stroke();
        shape(ctx, i, nx[i], ny[i], -3);
      }
      ctx.stroke();
    }
    // the selected step
    const sel = marks.selected;
    ctx.globalAlpha = sel.opacity;
    ctx.fillStyle = sel.color;
    for (const i of visible) {
      if (i === S.selected || (g.n.flags[i] & F['selected-step'])) { shape(ctx, i, nx[i], ny[i], sel.padding); ctx.fill(); }
    }
    ctx.globalAlpha = 1;
    // labels, right of the node, only when legible
    if (FONT_PX * sc >= MIN_FONT_PX) {
      ctx.fillStyle = '#222222';
      ctx.textBaseline = 'middle';
      for (const bold of [false, true]) {
        ctx.font = (bold ? 'bold ' : '') + FONT;
        for (const i of visible) {
          if (!!(g.n.flags[i] & (F.decisive | F['answer-path'])) !== bold) { continue; }
          ctx.fillText(g.n.label[i], nx[i] + half(i)[0] + 6, ny[i]);
        }
      }
    }
    S.drawn = (S.drawn || 0) + 1;
    S.inView = visible.length;
  };

  // -- the canvas: (re)attach, size, events --------------------------------------------------------

  const resize = function () {
    const c = S.canvas;
    const w = c.clientWidth; const h = c.clientHeight;
    const ratio = Math.min(window.devicePixelRatio || 1, 2);
    if (w !== S.w || h !== S.h || ratio !== S.ratio) {
      S.w = w; S.h = h; S.ratio = ratio;
      c.width = Math.round(w * ratio); c.height = Math.round(h * ratio);
    }
  };

  const at = function (ev) {  // the node under a pointer event, or -1
    const r = S.canvas.getBoundingClientRect();
    const x = (ev.clientX - r.left - S.tx) / S.scale; const y = (ev.clientY - r.top - S.ty) / S.scale;
    const g = S.g;
    const tol = 3 / S.scale;
    for (let i = g.n.id.length - 1; i >= 0; i--) {
      const [hw, hh] = half(i);
      if (Math.abs(g.n.x[i] - x) <= hw + tol && Math.abs(g.n.y[i] - y) <= hh + tol) { return i; }
    }
    return -1;
  };

  const tap = function (i) {
    S.selected = i;
    request();
    const g = S.g;
    const dc = window.dash_clientside;
    if (dc && dc.set_props) {
      dc.set_props('dag-tap', {data: {id: g.n.id[i], kind: g.n.kind[i], step: g.n.step[i], agent: g.n.agent[i],
        t: Date.now()}});
    }
  };

  const zoomAt = function (factor, px, py) {
    if (S.minZoom === undefined && S.g.n.id.length) { bounds(30); }
    const next = Math.max(S.minZoom || MIN_ZOOM, Math.min(MAX_ZOOM, S.scale * factor));
    S.tx = px - (px - S.tx) * next / S.scale;
    S.ty = py - (py - S.ty) * next / S.scale;
    S.scale = next;
    request();
  };

  const bind = function (c) {
    c.addEventListener('pointerdown', (ev) => {
      if (ev.button !== 0) { return; }
      S.drag = {x: ev.clientX, y: ev.clientY, tx: S.tx, ty: S.ty, moved: false, id: ev.pointerId};
      c.setPointerCapture(ev.pointerId);
    });
    c.addEventListener('pointermove', (ev) => {
      const d = S.drag;
      if (d) {
        const dx = ev.clientX - d.x; const dy = ev.clientY - d.y;
        if (d.moved || Math.abs(dx) + Math.abs(dy) > 4) {
          d.moved = true;
          S.tx = d.tx + dx; S.ty = d.ty + dy;
          c.style.cursor = 'grabbing';
          request();
        }
        return;
      }
      const i = at(ev);
      if (i !== S.hover) {
        S.hover = i;
        c.style.cursor = i >= 0 ? 'pointer' : 'grab';
        c.title = i >= 0 ? S.g.n.label[i] : '';
      }
    });
    const up = (ev) => {
      const d = S.drag;
      S.drag = null;
      c.style.cursor = 'grab';
      if (d && !d.moved && ev.type === 'pointerup') {
        const i = at(ev);
        if (i >= 0) { tap(i); }
      }
    };
    c.addEventListener('pointerup', up);
    c.addEventListener('pointercancel', up);
    c.addEventListener('wheel', (ev) => {
      ev.preventDefault();
      const r = c.getBoundingClientRect();
      const delta = ev.deltaMode === 1 ? ev.deltaY * 16 : ev.deltaY;
      zoomAt(Math.exp(-Math.max(-300, Math.min(300, delta)) * 0.0015), ev.clientX - r.left, ev.clientY - r.top);
    }, {passive: false});
    c.addEventListener('keydown', (ev) => {
      if (ev.key === '+' || ev.key === '=') { zoomAt(1.25, S.w / 2, S.h / 2); } else if (ev.key === '-') {
        zoomAt(0.8, S.w / 2, S.h / 2);
      } else if (ev.key === '0') { fit(); } else { return; }
      ev.preventDefault();
    });
    c.style.cursor = 'grab';
    c.style.touchAction = 'none';
  };

  // The canvas of the page being shown; a new one (another page, the DAG tab opened again) is bound
  // and sized here, and the drawing goes on it.
  const attach = function () {
    const c = document.getElementById('dag-canvas');
    if (!c) { S.canvas = null; return false; }
    if (c !== S.canvas) {
      S.canvas = c;
      S.ctx = c.getContext('2d');
      S.w = S.h = 0;
      bind(c);
      if (S.observers) { S.observers.resize.disconnect(); S.observers.resize.observe(c); }
    }
    resize();
    return S.w > 0 && S.h > 0;
  };

  if (!S.observers && window.ResizeObserver && window.MutationObserver) {
    S.observers = {
      resize: new ResizeObserver(() => { if (S.canvas) { request(); } }),
      mutation: new MutationObserver(() => {
        const c = document.getElementById('dag-canvas');
        if (c && c !== S.canvas && S.style) { request(); }
      }),
    };
    const watch = () => S.observers.mutation.observe(document.body, {childList: true, subtree: true});
    if (document.body) { watch(); } else { document.addEventListener('DOMContentLoaded', watch); }
  }

  // -- the read API (tests, benchmark) -------------------------------------------------------------

  const node = function (i) {
    const g = S.g;
    return {id: g.n.id[i], label: g.n.label[i], kind: g.n.kind[i], step: g.n.step[i], first: g.n.first[i],
      last: g.n.last[i], count: g.n.count[i], agent: g.n.agent[i], modality: g.n.modality[i],
      status: g.n.status[i], fill: g.n.fill[i], border: g.n.border[i], classes: g.n.classes[i].slice()};
  };
  window.trajlabDag = {
    count: () => S.g.n.id.length,
    edgeCount: () => S.g.e.s.length,
    nodes: (cls) => S.g.n.id.map((_, i) => i).filter((i) => !cls || S.g.n.classes[i].includes(cls)).map(node),
    node: (id) => (S.g.index.has(id) ? node(S.g.index.get(id)) : null),
    edges: () => S.g.e.s.map((s, k) => ({source: S.g.n.id[s], target: S.g.n.id[S.g.e.t[k]],
      type: S.g.e.type[k], count: S.g.e.count[k], bend: S.g.e.bend[k]})),
    edgeTypes: () => S.g.e.type.reduce((o, t) => { o[t] = (o[t] || 0) + 1; return o; }, {}),
    selected: () => (S.selected >= 0 ? S.g.n.id[S.selected] : null),
    view: () => ({zoom: S.scale, pan: {x: S.tx, y: S.ty}, width: S.w, height: S.h, frames: S.drawn || 0,
      inView: S.inView || 0}),
    center: function (id) {
      const i = S.g.index.get(id);
      if (i === undefined) { return false; }
      S.tx = S.w / 2 - S.g.n.x[i] * S.scale; S.ty = S.h / 2 - S.g.n.y[i] * S.scale;
      request();
      return true;
    },
    clientPoint: function (id) {  // where node `id` is on screen (client coordinates)
      const i = S.g.index.get(id);
      if (i === undefined || !S.canvas) { return null; }
      const r = S.canvas.getBoundingClientRect();
      return [r.left + S.tx + S.g.n.x[i] * S.scale, r.top + S.ty + S.g.n.y[i] * S.scale];
    },
    fit: fit,
    zoom: (z) => { zoomAt(z / S.scale, S.w / 2, S.h / 2); },
    drawNow: function () {  // draw synchronously; returns the milliseconds it took (benchmark)
      const t = performance.now();
      draw();
      return performance.now() - t;
    },
  };

  // -- progressive drawing, from the `dag-chunks` store ----------------------------------------------

  window.dash_clientside = Object.assign({}, window.dash_clientside, {
    trajlab: {
      fitDag: function () {
        if (attach()) { fit(); }
        return window.dash_clientside.no_update;
      },
      drawDag: function (data) {
        const dc = window.dash_clientside;
        if (typeof data === 'string') {
          data = JSON.parse(data);  // the server sends the payload as one JSON string (see payload_json)
        }
        if (!data || !data.chunks) {
          return dc.no_update;
        }
        const token = (window.__trajlabDagToken = (window.__trajlabDagToken || 0) + 1);
        window.__trajlabDagStart = performance.now();
        performance.mark('trajlab-dag-data');
        window.__trajlabDagDone = null;
        const chunks = data.chunks;
        const fmt = (k) => k.toLocaleString('en-US');
        const info = (k) => 'drawn ' + fmt(data.counts[k - 1] || 0) + ' of ' + fmt(data.n_visible) +
          ' nodes for ' + fmt(data.n_nodes) + ' steps' + (data.tail || '');
        const done = function () {
          window.__trajlabDagDone = token;
          performance.mark('trajlab-dag-added');
        };
        const later = (fn) => window.requestAnimationFrame(() => setTimeout(fn, 0));
        // After the first chunk is on screen, the others are added in as few frames as a budget of
        // main-thread time allows (at least one chunk per frame): adding is cheap on the canvas, and
        // every frame waited for costs more than the work itself on a busy machine.
        const next = function (i) {
          if (token !== window.__trajlabDagToken) { return; }  // superseded
          if (i >= chunks.length) { done(); return; }
          const t0 = performance.now();
          do {
            performance.mark('trajlab-dag-chunk-' + i);
            addChunk(chunks[i], data);
            i += 1;
          } while (i < chunks.length && performance.now() - t0 < CHUNK_BUDGET_MS);
          request();
          dc.set_props('dag-info', {children: info(i)});
          if (i >= chunks.length) { done(); } else { later(() => next(i)); }
        };
        const first = function () {
          if (token !== window.__trajlabDagToken) { return false; }
          const before = S.canvas;
          if (!attach()) { return false; }
          // a redraw on the same page (folding changed, a run unfolded) keeps the zoom and pan
          const redraw = before === S.canvas && S.g.n.id.length > 0 && S.style &&
            S.style.trajectory_id === data.trajectory_id;
          const keep = redraw && S.selected >= 0 ? S.g.n.id[S.selected] : undefined;  // same trajectory only
          S.g = empty();
          S.style = data;
          if (chunks.length) { addChunk(chunks[0], data); }
          S.selected = keep !== undefined && S.g.index.has(keep) ? S.g.index.get(keep) : -1;
          S.hover = -1;
          if (redraw) {
            // keep the view
          } else if (data.fit) {
            fit();
          } else {
            S.scale = 0.9;
            S.tx = Math.round(S.w * 0.35);
            S.ty = 30;
          }
          request();
          window.__trajlabDagFirst = performance.now();
          performance.mark('trajlab-dag-first');
          if (chunks.length > 1) { later(() => next(1)); } else { done(); }
          return true;
        };
        if (first()) {
          return info(1);
        }
        // The canvas is not on the page yet: draw as soon as it is.
        const wait = function () {
          if (token !== window.__trajlabDagToken) { return; }
          if (first()) { dc.set_props('dag-info', {children: info(1)}); } else { window.requestAnimationFrame(wait); }
        };
        window.requestAnimationFrame(wait);
        return 'drawing…';
      }
    }
  });
})();
