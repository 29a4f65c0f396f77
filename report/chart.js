// edr-lite report: the interactive charts. Every plotted field is drawn
// with uPlot (inlined above) from the data in #edr-chart-data, replacing
// its SVG chart: one time axis for all of them (zoom or pan one, all
// follow), one cursor read by all of them at the same instant, the
// triggers and their windows marked, and the gaps (no sample for longer
// than a few intervals) left as breaks in the line, shaded.
//
// Zoom: drag across a chart, or the wheel over it; pan: shift+drag or
// shift+wheel; the toolbar has the same, "around the trigger" and "whole
// dump". window.edrCharts exposes the charts (the page's browser test
// drives them).
(function () {
  "use strict";
  var dataEl = document.getElementById("edr-chart-data");
  if (!dataEl || typeof uPlot === "undefined") return;
  var D = JSON.parse(dataEl.textContent);
  var charts = [];
  var full = [D.start, D.end];
  var view = full.slice();
  var syncing = false;
  var prefix = D.live ? "" : "T";

  function fmtNum(v) {
    var a = Math.abs(v);
    var s = a >= 100 ? a.toFixed(0) : a >= 10 ? a.toFixed(1) : a >= 1 ? a.toFixed(2) : a.toFixed(3);
    return s.indexOf(".") < 0 ? s : s.replace(/\.?0+$/, "");
  }
  function rel(v) {
    if (v === 0 || Math.abs(v) < 1e-12) return D.live ? "now" : "T";
    return prefix + (v > 0 ? "+" : "\u2212") + fmtNum(v) + "s";
  }

  function setView(min, max, src) {
    if (!(max > min)) return;
    view = [min, max];
    if (syncing) return;
    syncing = true;
    for (var i = 0; i < charts.length; i++) {
      if (charts[i] !== src) charts[i].setScale("x", { min: min, max: max });
    }
    syncing = false;
    var lab = document.getElementById("edr-view");
    if (lab) lab.textContent = rel(min) + " \u2026 " + rel(max) + " (" + fmtNum(max - min) + " s)";
  }
  function zoom(factor, at) {
    var c = at == null ? (view[0] + view[1]) / 2 : at;
    var min = c - (c - view[0]) * factor, max = c + (view[1] - c) * factor;
    setView(min, max, null);
  }
  function pan(frac) {
    var d = (view[1] - view[0]) * frac;
    setView(view[0] + d, view[1] + d, null);
  }

  // draw: the triggers' windows (light), the trigger lines, the gaps
  function marks(sig) {
    return function (u) {
      var ctx = u.ctx, top = u.bbox.top, h = u.bbox.height;
      ctx.save();
      ctx.beginPath();
      ctx.rect(u.bbox.left, top, u.bbox.width, h);
      ctx.clip();
      D.triggers.forEach(function (t) {
        if (t.from != null && t.to != null) {
          var x0 = u.valToPos(t.from, "x", true), x1 = u.valToPos(t.to, "x", true);
          ctx.fillStyle = "rgba(215,38,61,0.05)";
          ctx.fillRect(x0, top, x1 - x0, h);
        }
      });
      sig.gaps.forEach(function (g) {
        var x0 = u.valToPos(g[0], "x", true), x1 = u.valToPos(g[1], "x", true);
        ctx.fillStyle = "rgba(229,62,62,0.13)";
        ctx.fillRect(x0, top, Math.max(x1 - x0, 1), h);
      });
      ctx.strokeStyle = "#d7263d";
      ctx.lineWidth = 1.5 * devicePixelRatio;
      ctx.setLineDash([5 * devicePixelRatio, 3 * devicePixelRatio]);
      D.triggers.forEach(function (t) {
        var x = u.valToPos(t.at, "x", true);
        ctx.beginPath();
        ctx.moveTo(x, top);
        ctx.lineTo(x, top + h);
        ctx.stroke();
      });
      ctx.restore();
    };
  }

  // wheel: zoom around the cursor; shift+wheel: pan. shift+drag: pan.
  function interactions(u) {
    var over = u.over;
    over.addEventListener("wheel", function (e) {
      e.preventDefault();
      if (e.shiftKey) {
        pan((e.deltaY || e.deltaX) > 0 ? 0.1 : -0.1);
        return;
      }
      var at = u.posToVal(e.offsetX, "x");
      zoom(e.deltaY > 0 ? 1.25 : 0.8, at);
    }, { passive: false });
    over.addEventListener("mousedown", function (e) {
      if (!e.shiftKey || e.button !== 0) return;
      e.stopPropagation();
      e.preventDefault();
      var x0 = e.clientX, v0 = view.slice(), w = u.bbox.width / devicePixelRatio;
      function move(ev) {
        var d = (ev.clientX - x0) / w * (v0[1] - v0[0]);
        setView(v0[0] - d, v0[1] - d, null);
      }
      function up() {
        document.removeEventListener("mousemove", move);
        document.removeEventListener("mouseup", up);
      }
      document.addEventListener("mousemove", move);
      document.addEventListener("mouseup", up);
    }, true);
    over.addEventListener("dblclick", function () { setView(full[0], full[1], null); });
  }

  var boxes = document.querySelectorAll(".uchart[data-signal]");
  boxes.forEach(function (box) {
    var sig = D.signals[+box.getAttribute("data-signal")];
    if (!sig) return;
    var width = Math.max(box.clientWidth || 0, 600);
    var label = sig.field + (sig.unit ? " (" + sig.unit + ")" : "");
    var opts = {
      width: width,
      height: 150,
      legend: { show: true, live: true },
      scales: { x: { time: false, min: view[0], max: view[1] } },
      cursor: {
        sync: { key: "edr-report", setSeries: false, scales: ["x", null] },
        drag: { x: true, y: false, setScale: true },
        points: { size: 6 },
      },
      series: [
        { label: "time", value: function (u, v) { return v == null ? "-" : rel(v); } },
        {
          label: label, stroke: "#1f5fa8", width: 1.3, spanGaps: false, points: { show: false },
          value: function (u, v) { return v == null ? "-" : String(+v.toPrecision(6)); },
        },
      ],
      axes: [
        { values: function (u, splits) { return splits.map(rel); } },
        { size: 60 },
      ],
      hooks: {
        setScale: [function (u, key) {
          if (key === "x" && !syncing) setView(u.scales.x.min, u.scales.x.max, u);
        }],
        draw: [marks(sig)],
        ready: [interactions],
      },
    };
    var holder = document.createElement("div");
    holder.className = "uplot-holder";
    var u = new uPlot(opts, [sig.x, sig.y], holder);
    u.edrSignal = sig.topic + " " + sig.field;
    box.replaceChildren(holder);
    charts.push(u);
  });
  window.edrCharts = charts;
  var bar = document.getElementById("edr-toolbar");
  if (!bar || charts.length === 0) return;
  bar.hidden = false;
  function button(text, title, fn) {
    var b = document.createElement("button");
    b.type = "button";
    b.textContent = text;
    b.title = title;
    b.addEventListener("click", fn);
    bar.appendChild(b);
    return b;
  }
  button("zoom in", "zoom in around the middle (or drag across a chart, or the wheel)", function () { zoom(0.5); }).id = "edr-zoom-in";
  button("zoom out", "zoom out", function () { zoom(2); }).id = "edr-zoom-out";
  button("\u25c0 pan", "move the view back in time (or shift+drag, shift+wheel)", function () { pan(-0.25); }).id = "edr-pan-left";
  button("pan \u25b6", "move the view on in time", function () { pan(0.25); }).id = "edr-pan-right";
  D.triggers.forEach(function (t, i) {
    var post = t.to != null ? Math.max(t.to - t.at, 0.5) : 1;
    button("around " + (D.triggers.length > 1 ? "trigger " + (i + 1) : "the trigger"), t.reason + ": from " + rel(t.at - post) +
      " to " + rel(t.at + post), function () { setView(t.at - post, t.at + post, null); });
  });
  button("whole dump", "the whole time axis (or double-click a chart)", function () { setView(full[0], full[1], null); }).id = "edr-reset";
  var lab = document.createElement("span");
  lab.id = "edr-view";
  bar.appendChild(lab);
  setView(view[0], view[1], null);
})();
