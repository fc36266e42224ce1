// Draws the report from the JSON beside it: plain DOM and SVG, no library, no network.
"use strict";
(function () {
  const D = JSON.parse(document.getElementById("report-data").textContent);
  const $ = (id) => document.getElementById(id);
  const NS = "http://www.w3.org/2000/svg";
  const lanes = D.lanes;
  const chosen = lanes[D.meta.chosen];
  const need = D.need[0];

  function svg(name, attrs, parent, text) {
    const node = document.createElementNS(NS, name);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    if (parent) parent.appendChild(node);
    return node;
  }
  function html(name, attrs, parent, text) {
    const node = document.createElement(name);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    if (parent) parent.appendChild(node);
    return node;
  }
  const num = (n) => Number(n).toLocaleString("en-US");
  // A count short enough for an axis: 2,500 as 2.5k, 200,000 as 200k, 3,000,000 as 3M.
  const compact = (n) => (n >= 1e6 ? `${+(n / 1e6).toFixed(1)}M` : n >= 1e4 ? `${+(n / 1e3).toFixed(1)}k` : num(n));
  // A chart's frame on log axes: the axes, the grid and labels of each power of ten up
  // the side, and both titles; returns where a value (a log) goes across and up.
  function logFrame(box, [L, R, Tp, B], [xmin, xmax], [ymin, ymax], xTitle, yTitle) {
    const X = (v) => L + ((v - xmin) / Math.max(xmax - xmin, 1e-9)) * (R - L);
    const Y = (v) => B - ((v - ymin) / Math.max(ymax - ymin, 1e-9)) * (B - Tp);
    svg("line", { x1: L, x2: R, y1: B, y2: B, class: "axis" }, box);
    svg("line", { x1: L, x2: L, y1: Tp, y2: B, class: "axis" }, box);
    for (let e = Math.ceil(ymin); e <= ymax; e++) {
      svg("line", { x1: L, x2: R, y1: Y(e), y2: Y(e), class: "grid" }, box);
      svg("text", { x: L - 6, y: Y(e) + 4, "text-anchor": "end" }, box, compact(10 ** e));
    }
    svg("text", { x: (L + R) / 2, y: B + 40, "text-anchor": "middle" }, box, xTitle);
    svg("text", { x: 14, y: (Tp + B) / 2, transform: `rotate(-90 14 ${(Tp + B) / 2})`, "text-anchor": "middle" }, box, yTitle);
    return [X, Y];
  }
  const iso = (ms) => new Date(ms).toISOString().replace(".000Z", "Z");
  const ms = (text) => Date.parse(text);
  function span(t) {
    const s = t / 1000;
    if (s < 1) return `${Math.round(t)} ms`;
    if (s < 60) return `${+s.toFixed(1)} s`;
    if (s < 3600) return `${+(s / 60).toFixed(1)} min`;
    if (s < 172800) return `${+(s / 3600).toFixed(1)} h`;
    if (s < 3 * 365 * 86400) return `${+(s / 86400).toFixed(1)} days`;
    return `${+(s / 365.25 / 86400).toFixed(1)} years`;
  }
  const burstOf = (lane) => (lane.burst === null || lane.burst === undefined ? "–" : num(lane.burst));
  const worst = need.worst_key || null;
  const minBucket = need.min_bucket;
  const stretch = need.span;

  // The lede: the answer first.
  document.title = `ratelimit report: ${D.meta.input}`;
  $("title").textContent = `${D.meta.input.split("/").pop()}: ${chosen.algorithm} at ${chosen.rate}`;
  const yours = chosen.burst === null || chosen.burst === undefined ? `your ${chosen.algorithm}` : `yours, ${num(chosen.burst)},`;
  const whose = worst ? `the neediest ${need.keys ? need.keys.column : "key"} (${worst.key}) needs a bucket of` : "a bucket of";
  $("lede").innerHTML = "";
  html("span", {}, $("lede"), `At ${chosen.rate}, ${whose} `);
  html("strong", { id: "answer-min-bucket" }, $("lede"), num(minBucket));
  html("span", {}, $("lede"), worst ? ` to lose nothing; ${yours} drops ` : ` loses nothing; ${yours} drops `);
  html("strong", { id: "answer-dropped" }, $("lede"), num(chosen.dropped));
  html("span", {}, $("lede"), ` of ${num(chosen.events)} events.`);
  // With layers, the headline names what all of them at once let through.
  if (D.layers) html("span", { id: "answer-layers" }, $("lede"), ` All ${D.layers.layers.length} layers at once pass ${num(D.layers.passed)} of ${num(D.layers.events)} events and drop ${num(D.layers.dropped)}.`);

  // 1. The data: a timeline to zoom and pan.
  const T = D.timeline;
  const whole = { from: 0, to: Math.max(1, T.end - T.start + 1) };
  let view = { ...whole };
  const W = 1000, TOP = 20, H = 170, AXIS = 200;
  const events = T.events;
  const levels = T.levels.map((level) => ({ width: level.width, raw: level.bins, idx: null, count: null }));
  function decoded(level) {
    if (level.idx === null) {
      const n = level.raw.length / 2;
      level.idx = new Float64Array(n);
      level.count = new Float64Array(n);
      let at = 0;
      for (let i = 0; i < n; i++) {
        at += level.raw[2 * i];
        level.idx[i] = at;
        level.count[i] = level.raw[2 * i + 1];
      }
    }
    return level;
  }
  function lowerBound(array, value) {
    let lo = 0, hi = array.length;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (array[mid] < value) lo = mid + 1; else hi = mid; }
    return lo;
  }
  const busiest = chosen.demand_busiest_window;
  const busy = busiest && busiest.start ? { from: ms(busiest.start) - T.start, to: ms(busiest.start) - T.start + busiest.length_s * 1000, count: busiest.count } : null;
  const needAt = stretch ? { from: ms(stretch.start) - T.start, to: ms(stretch.end) - T.start + 1, events: stretch.events } : null;
  $("data-summary").textContent = `${num(D.meta.events)} events from ${iso(T.start)} to ${iso(T.end)} (${span(T.end - T.start)}).` +
    (busy ? ` The busiest ${span(busiest.length_s * 1000)} holds ${num(busy.count)} of them, from ${busiest.start}.` : "") +
    (events ? "" : ` There are too many to draw one by one: the chart counts them in bins, finer as you zoom in, down to ${span(levels[levels.length - 1].width)}.`);
  let marks = []; // what the pointer can find: [x, text]
  let cursor = -1; // the mark the keyboard is at
  const chart = $("timeline");
  function drawTimeline() {
    for (const node of [...chart.querySelectorAll("g, .cursor")]) node.remove();
    cursor = -1;
    const g = svg("g", {}, chart);
    const length = view.to - view.from;
    const x = (t) => ((t - view.from) / length) * W;
    marks = [];
    // The marked stretches first, under the events.
    [[busy, "#E69F00", "the busiest window", TOP - 6], [needAt, "#009E73", "the stretch that sets the size", TOP + 8]].forEach(([mark, colour, label, y]) => {
      if (!mark || mark.to < view.from || mark.from > view.to) return;
      const x0 = Math.max(0, x(mark.from)), x1 = Math.min(W, Math.max(x(mark.to), x0 + 2));
      svg("rect", { x: x0, y: TOP - 18, width: x1 - x0, height: H + 18, fill: colour, opacity: 0.3 }, g);
      const right = x0 > W / 2;
      svg("text", { x: right ? x0 - 4 : x1 + 4, y, "text-anchor": right ? "end" : "start" }, g, label);
    });
    const from = view.from, to = view.to;
    const drawEach = events && (lowerBound(events.t, to) - lowerBound(events.t, from)) <= 4000;
    let shown = 0, binned = "";
    if (drawEach) {
      const a = lowerBound(events.t, from), b = lowerBound(events.t, to + 1);
      for (let i = a; i < b; i++) {
        const xi = x(events.t[i]);
        const v = parseFloat(events.v[i]);
        const height = events.v_name === "magnitude" && isFinite(v) ? Math.max(6, Math.min(H, (v - 2) * 22)) : H * 0.6;
        svg("line", { x1: xi, x2: xi, y1: TOP + H, y2: TOP + H - height, stroke: "#0072B2", "stroke-width": 1.2 }, g);
        const key = events.k ? ` · ${events.keys[events.k[i]]}` : "";
        marks.push([xi, `${iso(T.start + events.t[i])}${key} · ${events.v_name} ${events.v[i]}`]);
        shown++;
      }
    } else {
      // The coarsest level whose bins are at most 2 px wide here, else the finest.
      let level = levels[levels.length - 1];
      for (const candidate of levels) { if (candidate.width <= length / 500) { level = candidate; break; } }
      decoded(level);
      const a = lowerBound(level.idx, Math.floor(from / level.width)), b = lowerBound(level.idx, Math.floor(to / level.width) + 1);
      let most = 1;
      for (let i = a; i < b; i++) most = Math.max(most, level.count[i]);
      for (let i = a; i < b; i++) {
        const t0 = level.idx[i] * level.width;
        const x0 = x(t0), x1 = Math.max(x(t0 + level.width), x0 + 1);
        const height = Math.max(1, (level.count[i] / most) * H);
        svg("rect", { x: x0, y: TOP + H - height, width: x1 - x0, height, fill: "#56B4E9" }, g);
        marks.push([(x0 + x1) / 2, `${iso(T.start + t0)} to ${iso(T.start + t0 + level.width)}: ${num(level.count[i])} events`]);
        shown += level.count[i];
      }
      binned = `, in bins of ${span(level.width)} (the tallest ${num(most)})`;
    }
    // The time axis: five labels.
    svg("line", { x1: 0, x2: W, y1: AXIS - 10, y2: AXIS - 10, class: "axis" }, g);
    for (let i = 0; i <= 4; i++) {
      const t = from + (length * i) / 4;
      svg("text", { x: (W * i) / 4, y: AXIS + 8, "text-anchor": i === 0 ? "start" : i === 4 ? "end" : "middle" }, g, iso(T.start + t).slice(0, 19).replace("T", " "));
    }
    $("span").value = `${iso(T.start + from)} to ${iso(T.start + to)} (${span(length)}): ${num(shown)} events${binned}`;
    $("span").textContent = $("span").value;
    $("timeline-desc").textContent = `Events from ${iso(T.start + from)} to ${iso(T.start + to)}: ${num(shown)} shown.`;
  }
  function setView(from, to) {
    const length = Math.max(to - from, 10);
    const whole_length = whole.to - whole.from;
    if (length >= whole_length) { view = { ...whole }; }
    else {
      from = Math.max(whole.from, Math.min(from, whole.to - length));
      view = { from, to: from + length };
    }
    drawTimeline();
  }
  const zoom = (factor, at) => {
    const length = view.to - view.from, centre = at === undefined ? view.from + length / 2 : at;
    const part = (centre - view.from) / length;
    const next = length * factor;
    setView(centre - next * part, centre - next * part + next);
  };
  const pan = (share) => { const length = view.to - view.from; setView(view.from + length * share, view.to + length * share); };
  $("zoom-in").addEventListener("click", () => zoom(0.5));
  $("zoom-out").addEventListener("click", () => zoom(2));
  $("pan-left").addEventListener("click", () => pan(-0.25));
  $("pan-right").addEventListener("click", () => pan(0.25));
  $("zoom-reset").addEventListener("click", () => setView(whole.from, whole.to));
  const around = (mark) => { const pad = Math.max((mark.to - mark.from) * 0.5, 1000); setView(mark.from - pad, mark.to + pad); };
  $("zoom-busiest").addEventListener("click", () => busy && around(busy));
  $("zoom-need").addEventListener("click", () => needAt && around(needAt));
  if (!busy) $("zoom-busiest").hidden = true;
  if (!needAt) $("zoom-need").hidden = true;
  // The keyboard's pointer: `,` and `.` step through what is drawn, and say it.
  function step(by) {
    if (!marks.length) return;
    cursor = Math.max(0, Math.min(marks.length - 1, cursor + by));
    const old = chart.querySelector(".cursor");
    if (old) old.remove();
    svg("line", { class: "cursor", x1: marks[cursor][0], x2: marks[cursor][0], y1: TOP - 18, y2: TOP + H, stroke: "#1b1b1b", "stroke-dasharray": "3 2" }, chart);
    $("hover").textContent = marks[cursor][1];
  }
  chart.addEventListener("keydown", (e) => {
    const act = { "+": () => zoom(0.5), "=": () => zoom(0.5), "-": () => zoom(2), ArrowLeft: () => pan(-0.1), ArrowRight: () => pan(0.1), Home: () => setView(whole.from, whole.to), ".": () => step(1), ",": () => step(-1) }[e.key];
    if (act) { act(); e.preventDefault(); }
  });
  chart.addEventListener("wheel", (e) => {
    const box = chart.getBoundingClientRect();
    const at = view.from + ((e.clientX - box.left) / box.width) * (view.to - view.from);
    zoom(e.deltaY < 0 ? 0.7 : 1 / 0.7, at);
    e.preventDefault();
  }, { passive: false });
  chart.addEventListener("mousemove", (e) => {
    if (!marks.length) return;
    const box = chart.getBoundingClientRect();
    const px = ((e.clientX - box.left) / box.width) * W;
    let best = marks[0];
    for (const mark of marks) if (Math.abs(mark[0] - px) < Math.abs(best[0] - px)) best = mark;
    $("hover").textContent = best[1];
  });
  drawTimeline();

  // 2. The scene: every limiter on the busiest stretch.
  const S = D.scene;
  const sceneLength = Math.max(1, S.end - S.start);
  $("scene-summary").textContent = (S.given ? "The stretch you chose" : `The ${span(sceneLength)} from the start of the busiest ${span(busiest.length_s * 1000)}`) +
    `, ${iso(S.start)} to ${iso(S.end)}: ${num(S.t.length)} events${S.cut ? ` (cut short at ${num(S.t.length)})` : ""}. Each row is one limiter at ${chosen.rate}.`;
  // One limiter's lane over the scene: its decisions as marks, and its busiest window there.
  function drawLane(parent, title, chosenLane, decisions, lane) {
    const row = html("div", { class: chosenLane ? "lane chosen" : "lane" }, parent);
    const head = html("div", {}, row);
    html("h3", {}, head, title);
    let passed = 0;
    for (const d of decisions) passed += d === "1" ? 1 : 0;
    html("div", { class: "figures" }, head, `here: ${num(passed)} passed, ${num(decisions.length - passed)} dropped`);
    const box = svg("svg", { class: "chart", viewBox: "0 0 1000 52", role: "img", "aria-label": `${title}: in this stretch ${passed} of ${decisions.length} events passed, ${decisions.length - passed} dropped` }, row);
    const x = (t) => (t / sceneLength) * 990 + 5;
    for (let i = 0; i < S.t.length; i++) {
      if (decisions[i] === "1") svg("circle", { cx: x(S.t[i]), cy: 26, r: 3, fill: "#0072B2" }, box);
      else {
        const xi = x(S.t[i]);
        svg("path", { d: `M${xi - 3},39 l6,6 m0,-6 l-6,6`, stroke: "#D55E00", "stroke-width": 1.6 }, box);
      }
    }
    // This lane's busiest window among its passed events here.
    const window = lane.busiest_window.length_s * 1000;
    let best = 0, bestAt = -1;
    const passedTimes = S.t.filter((_, i) => decisions[i] === "1");
    for (let i = 0, j = 0; i < passedTimes.length; i++) {
      while (passedTimes[i] - passedTimes[j] >= window) j++;
      if (i - j + 1 > best) { best = i - j + 1; bestAt = passedTimes[j]; }
    }
    if (bestAt >= 0) {
      const x0 = x(bestAt), x1 = Math.max(x(bestAt + window), x0 + 3);
      svg("path", { d: `M${x0},14 v-6 H${x1} v6`, stroke: "#1b1b1b", fill: "none" }, box);
      svg("text", { x: Math.min(x1 + 4, 930), y: 12 }, box, `${best} in ${span(window)}`);
    }
  }
  lanes.forEach((lane, n) => {
    const title = `${lane.algorithm}${lane.burst === null || lane.burst === undefined ? "" : `, burst ${num(lane.burst)}`}${n === D.meta.chosen ? " (yours)" : ""}`;
    drawLane($("lanes"), title, n === D.meta.chosen, S.decisions[n], lane);
  });
  const body = document.querySelector("#scene-table tbody");
  lanes.forEach((lane, n) => {
    const tr = html("tr", {}, body);
    html(n === D.meta.chosen ? "th" : "td", { scope: "row" }, tr, lane.algorithm + (n === D.meta.chosen ? " (yours)" : ""));
    html("td", { class: "n" }, tr, burstOf(lane));
    html("td", { class: "n" }, tr, num(lane.passed));
    html("td", { class: "n" }, tr, num(lane.dropped));
    html("td", {}, tr, `${num(lane.busiest_window.count)} in ${span(lane.busiest_window.length_s * 1000)}`);
    html("td", { class: lane.promise.held ? "held" : "broken" }, tr, `${lane.promise.held ? "held" : "broken"}: ${lane.promise.text}`);
  });

  // 3. The size: the burst–rate curve.
  $("size-answer").innerHTML = "";
  html("span", {}, $("size-answer"), `At ${chosen.rate}, ${whose} `);
  html("strong", {}, $("size-answer"), num(minBucket));
  html("span", {}, $("size-answer"), worst ? ` to lose nothing; ${yours} drops ` : ` loses nothing; ${yours} drops `);
  html("strong", {}, $("size-answer"), num(chosen.dropped));
  html("span", {}, $("size-answer"), ".");
  if (stretch) $("size-stretch").textContent = `The need is set by ${num(stretch.events)} events from ${stretch.start} to ${stretch.end}${worst ? ` (${worst.key})` : ""}: the green stretch on the timeline. The curve gives the smallest lossless bucket at every rate${worst ? ` for ${worst.key}'s events` : ""}.`;
  const curve = D.curve.filter((p) => p.min_bucket > 0);
  // Rates in the unit of the rate given: per minute for 500/m. A period of several units
  // (1/30s) counts in its last unit; one of mixed units, per hour.
  const [unitName, unitAbbr, perHourTo] = (() => {
    const units = { s: ["second", "s", 1 / 3600], ms: ["second", "s", 1 / 3600], m: ["minute", "m", 1 / 60], h: ["hour", "h", 1], d: ["day", "d", 24] };
    const period = (chosen.rate.split("/")[1] || "h").replace(/^\d+/, "");
    return units[period] || units.h;
  })();
  const inUnit = (perHour) => perHour * perHourTo;
  const C = $("curve");
  if (curve.length) {
    const [L, R, Tp, B] = [70, 980, 20, 330];
    const xs = curve.map((p) => Math.log10(inUnit(p.per_hour))), ys = curve.map((p) => Math.log10(p.min_bucket));
    const yours_burst = chosen.burst || null;
    const ymax = Math.max(...ys, yours_burst ? Math.log10(yours_burst) : 0) + 0.1, ymin = Math.min(0, ...ys);
    const [xmin, xmax] = [Math.min(...xs), Math.max(...xs)];
    const [X, Y] = logFrame(C, [L, R, Tp, B], [xmin, xmax], [ymin, ymax], `rate, events per ${unitName} (log)`, "smallest lossless bucket (log)");
    for (let e = Math.ceil(xmin); e <= xmax; e++) svg("text", { x: X(e), y: B + 18, "text-anchor": "middle" }, C, `${compact(10 ** e)}/${unitAbbr}`);
    svg("polyline", { points: curve.map((p, i) => `${X(xs[i])},${Y(ys[i])}`).join(" "), fill: "none", stroke: "#0072B2", "stroke-width": 2 }, C);
    const here = curve.reduce((a, p) => (Math.abs(Math.log10(p.per_hour) - Math.log10(chosen_per_hour())) < Math.abs(Math.log10(a.per_hour) - Math.log10(chosen_per_hour())) ? p : a), curve[0]);
    function chosen_per_hour() { const p = D.curve.find((q) => q.rate === chosen.rate); return p ? p.per_hour : here_default(); }
    function here_default() { return curve[Math.floor(curve.length / 2)].per_hour; }
    const cx = X(Math.log10(inUnit(here.per_hour)));
    svg("circle", { cx, cy: Y(Math.log10(minBucket)), r: 6, fill: "#009E73" }, C);
    svg("text", { x: cx + 10, y: Y(Math.log10(minBucket)) - 8 }, C, `needed: ${num(minBucket)}`);
    if (yours_burst) {
      const yy = Y(Math.log10(yours_burst));
      svg("path", { d: `M${cx},${yy - 7} l7,7 l-7,7 l-7,-7 z`, fill: "#D55E00" }, C);
      svg("text", { x: cx + 10, y: yy + 16 }, C, `yours: ${num(yours_burst)}`);
    }
    $("curve-desc").textContent = `From ${curve[0].rate} to ${curve[curve.length - 1].rate} the smallest lossless bucket falls from ${num(curve[0].min_bucket)} to ${num(curve[curve.length - 1].min_bucket)}; at ${chosen.rate} it is ${num(minBucket)}.`;
  }
  $("curve-per").textContent = `per ${unitName}`;
  const ctb = document.querySelector("#curve-table tbody");
  for (const p of D.curve) {
    const tr = html("tr", {}, ctb);
    html("td", {}, tr, p.rate);
    html("td", { class: "n" }, tr, inUnit(p.per_hour).toFixed(3));
    html("td", { class: "n" }, tr, num(p.min_bucket));
  }

  // 4. The clients: the frontier, a contour for each share of clients untouched (rate
  // against burst, both on log axes), as `recommend` finds it.
  function drawFrontier(contours, column) {
    $("frontier-box").hidden = false;
    const F = $("frontier");
    const [L, R, Tp, B] = [70, 860, 20, 330];
    const all = contours.flatMap((c) => c.points);
    const xs = all.map((p) => Math.log10(p.per_hour)), ys = all.map((p) => Math.log10(p.burst));
    const [xmin, xmax, ymin, ymax] = [Math.min(...xs), Math.max(...xs), 0, Math.max(...ys) + 0.1];
    const [X, Y] = logFrame(F, [L, R, Tp, B], [xmin, xmax], [ymin, ymax], "rate (log)", "burst (log)");
    const first = contours[0].points, last = first[first.length - 1];
    for (const p of [first[0], last]) svg("text", { x: X(Math.log10(p.per_hour)), y: B + 18, "text-anchor": "middle" }, F, p.rate);
    const colours = ["#56B4E9", "#009E73", "#E69F00", "#D55E00", "#CC79A7", "#0072B2"];
    contours.forEach((c, i) => {
      const points = c.points.map((p) => `${X(Math.log10(p.per_hour))},${Y(Math.log10(p.burst))}`).join(" ");
      svg("polyline", { points, fill: "none", stroke: colours[i % colours.length], "stroke-width": 2 }, F);
      const end = c.points[c.points.length - 1];
      svg("text", { x: R + 8, y: Y(Math.log10(end.burst)) + 4 - i * 2, fill: colours[i % colours.length] }, F, `${c.share} untouched`);
    });
    const widest = contours[contours.length - 1];
    $("frontier-desc").textContent = `From ${first[0].rate} to ${last.rate}: to leave ${widest.share} of the ${column} values untouched, a burst of ${num(widest.points[0].burst)} at ${widest.points[0].rate} and of ${num(widest.points[widest.points.length - 1].burst)} at ${widest.points[widest.points.length - 1].rate}.`;
  }

  // 4. The clients, with --key.
  function quantileBars(box, quantiles, colour) {
    const names = Object.keys(quantiles);
    const most = Math.max(1, ...names.map((k) => quantiles[k]));
    names.forEach((k, i) => {
      const y = 10 + i * 36, w = Math.max(1, (Math.log10(1 + quantiles[k]) / Math.log10(1 + most)) * 330);
      svg("text", { x: 50, y: y + 18, "text-anchor": "end" }, box, k);
      svg("rect", { x: 56, y, width: w, height: 26, fill: colour }, box);
      svg("text", { x: 62 + w, y: y + 18 }, box, num(quantiles[k]));
    });
  }
  if (chosen.keys) {
    $("clients").hidden = false;
    $("nav-clients").hidden = false;
    const column = chosen.keys.column;
    if (need.cover) {
      const c = need.cover;
      $("cover-answer").textContent = `A burst of ${num(c.min_bucket)} keeps ${c.share} of the ${column} values whole: ${num(c.keys_covered)} of ${num(chosen.keys.count)}, with ${num(c.events_covered)} of ${num(c.events)} events; ${num(c.left_out.count)} need more${c.left_out.top.length ? `, the neediest ${c.left_out.top[0].key} (${num(c.left_out.top[0].min_bucket)})` : ""}.`;
    }
    const q = chosen.keys.quantiles || {};
    if (q.min_bucket) quantileBars($("needs"), q.min_bucket, "#009E73");
    if (q.dropped) quantileBars($("drops"), q.dropped, "#D55E00");
    if (D.frontier && D.frontier.length && D.frontier[0].points.length) drawFrontier(D.frontier, column);
    const tb = document.querySelector("#top-keys tbody");
    // Only the clients that lost something: a client with no drops is no answer to "who
    // lost most", and padding the list with them (in name order) reads as if they had.
    const dropping = (chosen.keys.top || []).filter((k) => k.dropped > 0);
    const caption = document.querySelector("#top-keys caption");
    if (!dropping.length) caption.textContent = `No client lost a request, of ${num(chosen.keys.count)}`;
    else if (chosen.keys.count > dropping.length) {
      caption.textContent = `The ${num(dropping.length)} clients with the most drops, of ${num(chosen.keys.count)}`;
    }
    for (const k of dropping) {
      const tr = html("tr", {}, tb);
      html("td", {}, tr, k.key);
      html("td", { class: "n" }, tr, num(k.events));
      html("td", { class: "n" }, tr, num(k.passed));
      html("td", { class: "n" }, tr, num(k.dropped));
    }
  }

  // 5. The fleet and the layers.
  if (D.fleet) {
    $("fleet").hidden = false;
    $("nav-fleet").hidden = false;
    const tb = document.querySelector("#fleet-table tbody");
    for (const lane of D.fleet) {
      const f = lane.fleet || {};
      const tr = html("tr", {}, tb);
      html("td", {}, tr, f.share || "one");
      html("td", { class: "n" }, tr, num(f.servers || 1));
      html("td", { class: "n" }, tr, num(lane.passed));
      html("td", { class: "n" }, tr, num(lane.dropped));
      html("td", { class: lane.promise.held ? "held" : "broken" }, tr, `${lane.promise.held ? "held" : "broken"}: ${lane.promise.text}`);
    }
    $("fleet-summary").textContent = `${chosen.algorithm} at ${chosen.rate} on a fleet, each way of sharing the limit side by side.`;
  }
  if (D.layers) {
    $("layers").hidden = false;
    $("nav-layers").hidden = false;
    $("layers-summary").textContent = `Every layer at once: ${num(D.layers.passed)} of ${num(D.layers.events)} events passed, ${num(D.layers.dropped)} dropped.`;
    const tb = document.querySelector("#layers-table tbody");
    for (const layer of D.layers.layers) {
      const tr = html("tr", {}, tb);
      html("td", {}, tr, layer.spec);
      html("td", { class: "n" }, tr, num(layer.refused));
      html("td", { class: "n" }, tr, num(layer.only));
      html("td", { class: "n" }, tr, num(layer.alone));
      const w = layer.busiest_window;
      html("td", {}, tr, `${num(w.count)} in ${span(w.length_s * 1000)}`);
    }
  }

  // Whole configurations side by side (--side-by-side): each over the scene, and what
  // changes from the first to the second.
  if (D.configurations) {
    const C2 = D.configurations;
    $("configurations").hidden = false;
    $("nav-configurations").hidden = false;
    $("configurations-summary").textContent = `${C2.configurations.length} configurations, each deciding all ${num(C2.events)} events on its own; each row below is one over the scene above.`;
    C2.configurations.forEach((c, n) => {
      if (D.configuration_scene && D.configuration_scene[n].length === S.t.length) drawLane($("configuration-lanes"), c.spec, n === 0, D.configuration_scene[n], c);
      const tr = html("tr", {}, document.querySelector("#configurations-table tbody"));
      html("td", {}, tr, c.spec);
      html("td", { class: "n" }, tr, num(c.passed));
      html("td", { class: "n" }, tr, num(c.dropped));
      html("td", {}, tr, `${num(c.busiest_window.count)} in ${span(c.busiest_window.length_s * 1000)}`);
      html("td", { class: "n" }, tr, num(c.min_bucket));
      html("td", { class: c.promise.held ? "held" : "broken" }, tr, `${c.promise.held ? "held" : "broken"}: ${c.promise.text}`);
    });
    const ch = C2.changes;
    // Two configurations: the answer first, as a single limit's page gives its own. The
    // title is the move, and the lede what it changes, for whom, and what each drops.
    if (ch && C2.configurations.length === 2) {
      const [first, second] = C2.configurations;
      $("title").textContent = `${D.meta.input.split("/").pop()}: from ${first.spec} to ${second.spec}`;
      $("lede").innerHTML = "";
      html("span", {}, $("lede"), "Moving from the first configuration to the second newly refuses ");
      html("strong", { id: "answer-newly-refused" }, $("lede"), num(ch.newly_refused));
      html("span", {}, $("lede"), ` events and newly passes ${num(ch.newly_passed)}`);
      const most = ch.keys && ch.keys.top.length ? ch.keys.top[0] : null;
      html("span", {}, $("lede"), ch.keys ? `; ${num(ch.keys.changed)} values of ${ch.keys.column} change${most ? `, ${most.key} most (${num(most.first_passed)} passed, then ${num(most.second_passed)})` : ""}.` : ".");
      html("span", {}, $("lede"), ` The first drops ${num(first.dropped)} of ${num(C2.events)} events, the second ${num(second.dropped)}.`);
    }
    if (ch) {
      $("changes-summary").textContent = `From the first to the second: ${num(ch.newly_refused)} events newly refused, ${num(ch.newly_passed)} newly passed.` + (ch.keys ? ` ${num(ch.keys.changed)} values of ${ch.keys.column} change; those that change most:` : "");
      if (ch.keys && ch.keys.top.length) {
        $("changes-table").hidden = false;
        const tb = document.querySelector("#changes-table tbody");
        for (const k of ch.keys.top) {
          const tr = html("tr", {}, tb);
          html("td", {}, tr, k.key);
          for (const v of [k.events, k.first_passed, k.second_passed, k.changed]) html("td", { class: "n" }, tr, num(v));
        }
      }
    }
  }

  // The sections shown are numbered in sequence, whichever are hidden.
  let shown = 0;
  for (const section of document.querySelectorAll("section")) {
    const h = section.querySelector("h2");
    if (section.hidden || !h || !/^\d+\. /.test(h.textContent)) continue;
    h.textContent = `${++shown}. ${h.textContent.replace(/^\d+\. /, "")}`;
  }

  // How it was made.
  const meta = [["command", D.meta.command], ["input", D.meta.input], ["size", D.meta.bytes === null ? "standard input" : `${num(D.meta.bytes)} bytes`], ["events", num(D.meta.events)], ["version", `ratelimit ${D.meta.version}`], ["time taken", `${D.meta.seconds.toFixed(2)} s`]];
  for (const [k, v] of meta) { html("dt", {}, $("meta"), k); html("dd", {}, $("meta"), v); }
  const report = { lanes: D.lanes, need: D.need, fleet: D.fleet, layers: D.layers, configurations: D.configurations };
  const text = JSON.stringify(report, null, 2);
  $("json").textContent = text;
  $("copy-json").addEventListener("click", () => {
    const done = () => { $("copied").textContent = "copied"; };
    if (navigator.clipboard) navigator.clipboard.writeText(text).then(done, () => { $("copied").textContent = "select the text below and copy it"; });
  });
  document.body.dataset.ready = "true";
})();
