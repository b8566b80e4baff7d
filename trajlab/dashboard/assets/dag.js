/* trajlab dashboard: progressive drawing of a step DAG.
 *
 * The server sends the DAG once (in the trajectory page itself, or from the callback when the folding
 * options change) in a compact column form, split into chunks (top layers first). drawDag expands a
 * chunk into Cytoscape elements and adds it straight to the Cytoscape instance in one batch, one chunk
 * per animation frame, so a long run shows its beginning at once and never blocks the page.
 *
 * The elements deliberately do not go through the component's `elements` property: every change of
 * that property makes dash-cytoscape deep-compare the whole old and new element lists and measure the
 * bounding box of every element (label sizes included), which cost seconds for a 2,000-node DAG. The
 * `elements` property stays [] and is never updated, so React never patches what is drawn here; taps
 * still reach Dash through the instance's own event handlers.
 *
 * A newer drawing (other folding options, another trajectory) stops an older one. Element data are
 * plain values; labels are drawn on a canvas (text only, never HTML).
 */
(function () {
  const expand = function (chunk, data) {
    const out = [];
    const n = chunk.n;
    const len = n.id.length;
    for (let i = 0; i < len; i++) {
      const kind = n.kind[i];
      out.push({
        group: 'nodes',
        data: {
          id: n.id[i],
          label: n.label[i],
          kind: kind,
          node_kind: n.node_kind[i],
          step: kind === 'step' ? n.first[i] : null,
          first: n.first[i],
          last: n.last[i],
          count: n.count[i],
          agent: n.agent[i],
          modality: n.modality[i],
          status: n.status[i],
          fill: kind === 'agent' ? data.agent_fill : (data.modality_colors[n.modality[i]] || '#FFFFFF'),
          border: data.status_colors[n.status[i]] || '#404040',
        },
        position: {x: n.x[i], y: n.y[i]},
        classes: n.classes[i],
      });
    }
    const e = chunk.e;
    for (let i = 0; i < e.source.length; i++) {
      const t = e.type[i];
      out.push({
        group: 'edges',
        data: {
          id: 'e:' + e.source[i] + '>' + e.target[i] + ':' + t,
          source: e.source[i],
          target: e.target[i],
          type: t,
          color: data.edge_colors[t] || '#999999',
          count: e.count[i],
        },
        classes: 'edge-' + t,
      });
    }
    return out;
  };

  // The Cytoscape instance of #dag (cytoscape registers itself on its container).
  const instance = function () {
    const el = document.getElementById('dag');
    const cy = el && el._cyreg && el._cyreg.cy;
    return cy && !cy.destroyed() ? cy : null;
  };

  window.dash_clientside = Object.assign({}, window.dash_clientside, {
    trajlab: {
      expandChunk: expand,
      drawDag: function (data) {
        const dc = window.dash_clientside;
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
        const view = function (cy) {
          if (data.fit) {
            cy.fit(undefined, 30);
          } else {
            const w = cy.container() ? cy.container().clientWidth : 800;
            cy.zoom(0.9);
            cy.pan({x: Math.round(w * 0.35), y: 30});
          }
        };
        const later = (fn) => window.requestAnimationFrame(() => setTimeout(fn, 0));
        const next = function (cy, i) {
          if (token !== window.__trajlabDagToken || cy.destroyed()) { return; }  // superseded
          if (i >= chunks.length) {
            window.__trajlabDagDone = token;
            performance.mark('trajlab-dag-added');
            return;
          }
          cy.add(expand(chunks[i], data));
          dc.set_props('dag-info', {children: info(i + 1)});
          later(() => next(cy, i + 1));
        };
        const first = function () {
          if (token !== window.__trajlabDagToken) { return false; }
          const cy = instance();
          if (!cy) { return false; }
          cy.batch(() => {
            cy.elements().remove();
            if (chunks.length) { cy.add(expand(chunks[0], data)); }
          });
          view(cy);
          window.__trajlabDagFirst = performance.now();
          performance.mark('trajlab-dag-first');
          if (chunks.length > 1) {
            later(() => next(cy, 1));
          } else {
            window.__trajlabDagDone = token;
            performance.mark('trajlab-dag-added');
          }
          return true;
        };
        if (first()) {
          return info(1);
        }
        // The component is not mounted yet: draw as soon as it is.
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
