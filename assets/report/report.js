// report.html's charts: every run's timelines on one zoomable time axis, drawn with
// uPlot from the JSON each run's section embeds (src/report/charts.rs writes it).
//
// - Each `<script type="application/json" class="run-charts">` holds one run's charts;
//   its section's `.charts` box receives them, grouped under their owner's heading
//   (jobs, device, blk-iocost…), then the run's clat percentiles.
// - Every time chart shares one time axis: a drag selects a range on any of them and
//   all follow; a double click (or "whole run") shows everything again. The address
//   follows the zoom (`#t=A..B`), and a page opened at such an address starts there. The cursor
//   moves on all of them together and each legend reads its lines at that instant.
// - Scheduled events (interface writes, device removal) are dashed lines on the axis.
// - With several runs, "overlay" draws each chart of a kind with every run's lines.
// - A chart with `x` (sweep, tune) is over values instead: its own axis, its measured
//   points marked, sets of points alone (a front's members, a chosen point) unjoined.
// - The body's data attributes say what was drawn (`data-charts`, `data-errors`), the
//   time range shown (`data-range`, once zoomed) and
//   when (`data-ready-ms`: scripts done; `data-drawn-ms`: the last chart drawn), for
//   the browser test and scripts/report-bench; `#selftest` in the address also zooms and hovers the first chart
//   and records what it saw (`data-zoom`, `data-hover`).
(function () {
  "use strict";
  var errors = [];
  window.addEventListener("error", function (e) {
    errors.push(String(e.message));
    document.body.dataset.errors = errors.join(" | ");
  });
  var PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
    "#e377c2", "#17becf", "#bcbd22", "#7f7f7f", "#393b79", "#ad494a", "#637939",
    "#e7ba52", "#843c39", "#7b4173"];
  var timeCharts = [];
  var syncing = false;
  var all = [];
  var boxes = 0;
  // the time range every chart shows (null: the whole run)
  var zoom = null;
  // a chart is drawn when it comes near the window (a run of 1,000 cgroups has dozens
  // of charts of 100 lines); `#selftest` draws them all at once
  var eager = location.hash === "#selftest";
  var observer = !eager && "IntersectionObserver" in window ?
    new IntersectionObserver(function (entries) {
      entries.forEach(function (e) {
        if (e.isIntersecting) {
          observer.unobserve(e.target);
          e.target.style.minHeight = "";
          e.target.blkcgDraw();
        }
      });
    }, { rootMargin: "400px" }) : null;

  function later(fig, draw) {
    // those in the window, or near it, at once: the first view needs no frame's wait
    if (!observer || fig.getBoundingClientRect().top < window.innerHeight + 400) return draw();
    fig.style.minHeight = "300px";
    fig.blkcgDraw = draw;
    observer.observe(fig);
  }

  function fmt(v) {
    if (v == null || !isFinite(v)) return "–";
    var a = Math.abs(v);
    if (a >= 1000) return v.toFixed(0);
    if (a >= 10) return v.toFixed(1);
    if (a >= 0.1 || a === 0) return v.toFixed(2);
    return v.toPrecision(3);
  }

  function eventsPlugin(events) {
    return {
      hooks: {
        draw: function (u) {
          if (!events.length) return;
          var ctx = u.ctx, top = u.bbox.top, h = u.bbox.height;
          ctx.save();
          ctx.strokeStyle = "#a0a";
          ctx.fillStyle = "#a0a";
          ctx.setLineDash([4, 4]);
          ctx.font = 10 * devicePixelRatio + "px sans-serif";
          events.forEach(function (e) {
            var x = Math.round(u.valToPos(e.t, "x", true));
            if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) return;
            ctx.beginPath();
            ctx.moveTo(x, top);
            ctx.lineTo(x, top + h);
            ctx.stroke();
            ctx.fillText(e.label, x + 3, top + 10 * devicePixelRatio);
          });
          ctx.restore();
        }
      }
    };
  }

  // a log axis cannot show 0 or less: those samples are gaps there
  function positive(data) {
    return data.map(function (col, i) {
      return i === 0 ? col : col.map(function (v) { return v != null && v > 0 ? v : null; });
    });
  }

  function box(parent, title, note) {
    var fig = document.createElement("figure");
    fig.className = "chart";
    var cap = document.createElement("figcaption");
    cap.textContent = title;
    if (note) {
      var n = document.createElement("span");
      n.className = "note";
      n.textContent = " — " + note;
      cap.appendChild(n);
    }
    fig.appendChild(cap);
    parent.appendChild(fig);
    boxes++;
    return fig;
  }

  function width(el) {
    return Math.max(300, Math.min(1200, el.clientWidth || 900));
  }

  // a chart of the page's document: over time (a run's timelines, sharing the time
  // axis) or, with `c.x`, over values (a sweep's or tune's figures, on their own)
  function chart(parent, c, events, names) {
    var x = c.x;
    var notes = [];
    if (c.columns) notes.push("min and max per column (zoom for more; the CSV has every sample)");
    if (c.dropped) notes.push(c.dropped + (c.dropped > 100 ? "+" : "") + " more lines in the CSV");
    var head = (c.grouped ? "" : c.group + ": ") + c.title + (c.unit ? " (" + c.unit + ")" : "");
    if (c.zero) {
      box(parent, head, "0 throughout, every line (" + c.names.length + ")");
      return;
    }
    var fig = box(parent, head, notes.join("; "));
    var series = [x ? { label: x.label, value: function (u, v) { return fmt(v); } } :
      { label: "t (s)", value: function (u, v) { return v == null ? "–" : v.toFixed(3); } }];
    (names || c.names).forEach(function (n, i) {
      var s = {
        label: n,
        stroke: PALETTE[i % PALETTE.length],
        width: 1.25,
        spanGaps: c.columns || !!x,
        value: function (u, v) { return fmt(v); }
      };
      if (x && !x.lines[i]) s.paths = function () { return null; };
      if (x && (x.points || !x.lines[i])) s.points = { show: true, size: x.lines[i] ? 6 : 10 };
      series.push(s);
    });
    var opts = {
      width: width(parent),
      height: 220,
      series: series,
      scales: { x: x && x.log ? { time: false, distr: 3 } : { time: false }, y: c.log ? { distr: 3 } : {} },
      axes: [{ label: x ? x.label : "time (s)" }, { label: c.unit, size: 60 }],
      cursor: x ? { drag: { x: true, y: false } } :
        { sync: { key: "blkcg-time", setSeries: false }, drag: { x: true, y: false } },
      legend: { live: true },
      plugins: [eventsPlugin((c.vlines || []).concat(events))],
      hooks: {
        setScale: [function (u, key) {
          if (x || key !== "x" || syncing) return;
          syncing = true;
          var min = u.scales.x.min, max = u.scales.x.max;
          zoom = { min: min, max: max };
          document.body.dataset.range = fmt(min) + ".." + fmt(max);
          if (!eager) history.replaceState(null, "", "#t=" + min.toFixed(3) + ".." + max.toFixed(3));
          timeCharts.forEach(function (o) {
            if (o !== u) o.setScale("x", { min: min, max: max });
          });
          syncing = false;
        }]
      }
    };
    later(fig, function () {
      var u = new uPlot(opts, c.log ? positive(c.data) : c.data, fig);
      u.blkcgTitle = c.group + ": " + c.title;
      u.blkcgParent = parent;
      if (!x) {
        if (zoom) {
          syncing = true;
          u.setScale("x", zoom);
          syncing = false;
          // what the chart shows once uPlot has applied it
          setTimeout(function () {
            document.body.dataset.range = fmt(u.scales.x.min) + ".." + fmt(u.scales.x.max);
          }, 0);
        }
        timeCharts.push(u);
      }
      all.push(u);
      document.body.dataset.drawnMs = Math.round(performance.now());
    });
  }

  // x: -log10(1 - p/100), so 99.99 is as far from 99.9 as 99.9 from 99
  function pctX(p) { return -Math.log10(1 - p / 100); }
  function pct(x) { return (100 * (1 - Math.pow(10, -x))).toPrecision(6).replace(/\.?0+$/, ""); }

  function clatChart(parent, clat) {
    if (!clat.names.length || !clat.data[0].length) return;
    var fig = box(parent, "completion latency percentiles (ms, log)",
      clat.dropped ? clat.dropped + " more jobs in fio.json" : "");
    var data = positive([clat.data[0].map(pctX)].concat(clat.data.slice(1)));
    var series = [{ label: "percentile", value: function (u, v) { return v == null ? "–" : pct(v); } }];
    clat.names.forEach(function (n, i) {
      series.push({ label: n, stroke: PALETTE[i % PALETTE.length], width: 1.5,
        value: function (u, v) { return fmt(v); } });
    });
    later(fig, function () { clatDraw(fig, parent, data, series); });
  }

  function clatDraw(fig, parent, data, series) {
    var u = new uPlot({
      width: width(parent),
      height: 260,
      series: series,
      scales: { x: { time: false }, y: { distr: 3 } },
      axes: [{
        label: "percentile (log scale of 1 − p)",
        splits: function (u) {
          return [10, 50, 90, 99, 99.9, 99.99, 99.999].map(pctX).filter(function (x) {
            return x >= u.scales.x.min && x <= u.scales.x.max;
          });
        },
        values: function (u, splits) { return splits.map(pct); }
      }, { label: "ms", size: 60 }],
      legend: { live: true }
    }, data, fig);
    u.blkcgTitle = "clat";
    u.blkcgParent = parent;
    all.push(u);
  }

  function runCharts(el, run) {
    var groups = {};
    run.charts.forEach(function (c) {
      if (!groups[c.group]) {
        var h = document.createElement("h3");
        h.textContent = c.group;
        el.appendChild(h);
        var g = document.createElement("div");
        el.appendChild(g);
        groups[c.group] = g;
      }
      c.grouped = true;
      chart(groups[c.group], c, run.events);
    });
    if (run.clat) clatChart(el, run.clat);
  }

  // every run's lines of one chart kind on one chart, joined on their times
  function overlay(el, runs) {
    var kinds = {};
    var order = [];
    // every run's scheduled events, each once
    var seen = {};
    var events = [];
    runs.forEach(function (r) {
      r.run.events.forEach(function (e) {
        var k = e.t + "\u0000" + e.label;
        if (!seen[k]) { seen[k] = true; events.push(e); }
      });
    });
    runs.forEach(function (r) {
      r.run.charts.forEach(function (c) {
        if (c.zero) return;
        var k = c.group + "\u0000" + c.title;
        if (!kinds[k]) { kinds[k] = []; order.push(k); }
        kinds[k].push({ label: r.label, c: c });
      });
    });
    order.forEach(function (k) {
      var list = kinds[k];
      if (list.length < 2) return;
      var names = [];
      list.forEach(function (e) { e.c.names.forEach(function (n) { names.push(e.label + ": " + n); }); });
      var first = list[0].c;
      var joined = uPlot.join(list.map(function (e) { return e.c.data; }));
      chart(el, {
        group: first.group, title: first.title, unit: first.unit, log: first.log,
        columns: list.some(function (e) { return e.c.columns; }),
        dropped: 0, data: joined
      }, events, names);
    });
  }

  // zoom and hover the first time chart as a person would (a drag across its middle
  // half, then the pointer at its middle), one step per frame as uPlot draws them
  function selftest() {
    var u = timeCharts[0] || all[0];
    if (!u) return;
    var other = timeCharts[1] || u;
    var range = function () { return fmt(other.scales.x.min) + ".." + fmt(other.scales.x.max); };
    var r, y;
    var at = function (type, f, target) {
      (target || u.over).dispatchEvent(new MouseEvent(type,
        { clientX: r.left + r.width * f, clientY: y, movementX: 1, movementY: 1, bubbles: true, view: window }));
    };
    var before;
    var steps = [
      function () {
        // uPlot lays its plot out after the first frame: measure it now
        r = u.over.getBoundingClientRect();
        y = r.top + r.height / 2;
        before = range();
        at("mouseenter", 0.25);
      },
      function () { at("mousemove", 0.25); },
      function () { at("mousedown", 0.25); },
      function () { at("mousemove", 0.75); },
      function () { at("mouseup", 0.75, document); },
      function () {
        document.body.dataset.zoom = before + " -> " + range();
        at("mousemove", 0.5);
      },
      function () {
        var vals = Array.prototype.map.call(u.root.querySelectorAll(".u-legend .u-value"),
          function (v) { return v.textContent; });
        document.body.dataset.hover = vals.join(" | ");
      }
    ];
    var next = function () {
      var s = steps.shift();
      if (s) { s(); setTimeout(next, 50); }
    };
    setTimeout(next, 50);
  }

  function whole() {
    zoom = null;
    if (!eager) history.replaceState(null, "", location.pathname);
    timeCharts.forEach(function (u) {
      var xs = u.data[0];
      if (xs.length) u.setScale("x", { min: xs[0], max: xs[xs.length - 1] });
    });
  }

  // the charts follow the window's width
  var resizing = null;
  window.addEventListener("resize", function () {
    clearTimeout(resizing);
    resizing = setTimeout(function () {
      all.forEach(function (u) {
        u.setSize({ width: width(u.blkcgParent), height: u.height });
      });
    }, 150);
  });

  window.addEventListener("load", function () {
    // `#t=A..B` opens the page zoomed to that time (the address follows each zoom, so
    // a view can be sent to someone as its link)
    var t = /^#t=([0-9.]+)\.\.([0-9.]+)$/.exec(location.hash);
    if (t && +t[1] < +t[2]) zoom = { min: +t[1], max: +t[2] };
    var runs = [];
    document.querySelectorAll("script.run-charts").forEach(function (s) {
      var run = JSON.parse(s.textContent);
      var el = document.getElementById(s.dataset.target);
      runs.push({ label: s.dataset.label, run: run });
      runCharts(el, run);
    });
    var ov = document.getElementById("overlay-charts");
    if (ov) overlay(ov, runs);
    document.querySelectorAll("button.whole-run").forEach(function (b) {
      b.addEventListener("click", whole);
    });
    document.body.dataset.charts = boxes;
    document.body.dataset.series = all.map(function (u) {
      return u.blkcgTitle + ": " + u.series.slice(1).map(function (s) { return s.label; }).join(", ");
    }).join("\n");
    // when the page was ready, charts in view drawn (ms since navigation): the
    // benchmark's figure (scripts/report-bench)
    document.body.dataset.readyMs = Math.round(performance.now());
    if (location.hash === "#selftest") selftest();
  });
})();
