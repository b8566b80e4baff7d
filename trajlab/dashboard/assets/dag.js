/* trajlab dashboard: progressive drawing of a step DAG.
 *
 * The server sends the DAG once, split into chunks (top layers first). This function hands the first
 * chunk to Cytoscape as the callback's output, then adds one chunk per animation frame with
 * dash_clientside.set_props, so a long run shows its beginning at once and never blocks the page.
 * A newer drawing (other folding options, another trajectory) stops an older one.
 * Element data are plain values; labels are drawn on a canvas (text only, never HTML).
 */
window.dash_clientside = Object.assign({}, window.dash_clientside, {
  trajlab: {
    drawDag: function (data) {
      const dc = window.dash_clientside;
      if (!data || !data.chunks) {
        return [dc.no_update, dc.no_update];
      }
      const token = (window.__trajlabDagToken = (window.__trajlabDagToken || 0) + 1);
      const chunks = data.chunks;
      const fmt = (n) => n.toLocaleString('en-US');
      const info = (k) => 'drawn ' + fmt(data.counts[k - 1] || 0) + ' of ' + fmt(data.n_visible) +
        ' nodes for ' + fmt(data.n_nodes) + ' steps' + (data.tail || '');
      let acc = chunks.length ? chunks[0] : [];
      const view = function () {
        const cy = window.cy;
        if (!cy) { return; }
        if (data.fit) {
          cy.fit(undefined, 30);
        } else {
          const w = cy.container() ? cy.container().clientWidth : 800;
          cy.zoom(0.9);
          cy.pan({x: Math.round(w * 0.35), y: 30});
        }
      };
      const next = function (i) {
        if (token !== window.__trajlabDagToken) { return; }  // superseded
        if (i >= chunks.length) {
          window.__trajlabDagDone = token;
          return;
        }
        acc = acc.concat(chunks[i]);
        dc.set_props('dag', {elements: acc});
        dc.set_props('dag-info', {children: info(i + 1)});
        window.requestAnimationFrame(() => setTimeout(() => next(i + 1), 0));
      };
      window.__trajlabDagStart = performance.now();
      window.requestAnimationFrame(() => setTimeout(() => { view(); next(1); }, 0));
      return [acc, info(1)];
    }
  }
});
