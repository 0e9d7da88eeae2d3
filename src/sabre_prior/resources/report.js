"use strict";
(function () {
  const D = JSON.parse(document.getElementById("sabre-data").textContent);
  const CLASSES = ["all_correct", "prior_following", "always_yes", "always_no", "other"];
  const CLASS_LABELS = { all_correct: "All correct", prior_following: "Prior-following", always_yes: "Always yes", always_no: "Always no", other: "Other" };
  const COLS = { pred: 0, norm: 1, answer: 2, normAnswer: 3, parsed: 4, missing: 5, correct: 6, outcome: 7 };
  const NON = new Set(D.non_answers || []);
  const fa = (m) => (D.intervals[m] || {}).failure_aware || null;
  // a model's split (or macro) non-answers as Python counted and flagged them (sabre_prior.report.flags)
  const nonans = (m, s) => ((D.nonanswers || {})[m] || {})[s] || null;
  const isFlagged = (m, s) => !!(nonans(m, s) || {}).flagged;
  // beside a flagged row's model: the flag and its count
  const flagMark = (m, s) => isFlagged(m, s) ? el("span", { class: "flag", "data-flag": s }, ` † ${nonans(m, s).text}`) : null;
  const flagRow = (flagged) => flagged ? { class: "flagged", "data-flagged": "true" } : {};
  const $ = (id) => document.getElementById(id);

  // Build an element; children are nodes or strings (always inserted as text, never as HTML).
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") node.className = v; else node.setAttribute(k, v === true ? "" : v);
    }
    for (const c of children.flat()) {
      if (c === null || c === undefined) continue;
      node.appendChild(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
    }
    return node;
  }
  const pct = (x, d = 1) => (x === null || x === undefined || x === "" ? "-" : (100 * Number(x)).toFixed(d));
  const nameOf = (key) => (D.models.find((m) => m.key === key) || { name: key }).name;
  const level = Math.round(D.confidence * 1000) / 10 + "%";

  function table(target, header, rows, numeric, empty) {
    const t = $(target);
    t.replaceChildren();
    if (!rows.length) { t.appendChild(el("tbody", {}, el("tr", {}, el("td", { class: "empty" }, empty || "nothing to show")))); return; }
    t.appendChild(el("thead", {}, el("tr", {}, header.map((h) => el("th", {}, h)))));
    t.appendChild(el("tbody", {}, rows.map((r) => el("tr", r.attrs || {}, r.cells.map((c, i) =>
      c instanceof Node ? el("td", { class: numeric[i] ? "num" : "" }, c) : el("td", { class: (numeric[i] ? "num" : "") + (r.best && r.best[i] ? " best" : "") }, String(c)))))));
  }

  // ---------------------------------------------------------------- overview
  // a model's colour swatch: the colour (and hatch) it has in every figure (sabre_prior.report.style)
  const HATCH_CSS = { "///": "repeating-linear-gradient(45deg, transparent 0 2px, rgba(0,0,0,.55) 2px 3px)",
    "...": "radial-gradient(rgba(0,0,0,.6) 1px, transparent 1.2px) 0 0 / 4px 4px",
    "xxx": "repeating-linear-gradient(45deg, transparent 0 2px, rgba(0,0,0,.55) 2px 3px), repeating-linear-gradient(-45deg, transparent 0 2px, rgba(0,0,0,.55) 2px 3px)" };
  function swatch(key) {
    const m = D.models.find((x) => x.key === key);
    if (!m) return null;
    const s = el("span", { class: "swatch", "data-color": m.color, "aria-hidden": "true" });
    s.style.backgroundColor = m.color;
    if (m.hatch && HATCH_CSS[m.hatch]) s.style.backgroundImage = HATCH_CSS[m.hatch];
    return s;
  }
  const named = (key) => el("span", { class: "model" }, swatch(key), nameOf(key));

  function dataLine() {
    const d = D.data, digests = D.splits.map((s) => `${s} ${(d.splits[s] || {}).sha256 ? d.splits[s].sha256.slice(0, 12) : "?"}`);
    return `Data: ${d.label}` + (d.kind === "demo" ? ` (${d.source})` : "") + (d.revision ? `, revision ${d.revision}` : "") +
      `; SHA-256 of the Parquet splits read: ${digests.join(", ")}.`;
  }

  function overview() {
    $("overview-intro").textContent = `${dataLine()} ${D.models.length} model(s), splits: ${D.splits.join(", ")}. ` +
      `Intervals: ${level} percentile bootstrap, ${D.resamples} resamples (seed ${D.seed}); pairs are resampled for the paired splits, questions otherwise, each split independently for the macro average.`;
    // the cells come as text from Python: the rounding and bold rule of main_results.md
    const T = D.main_table;
    const t = $("main-table");
    t.replaceChildren(
      el("thead", {}, el("tr", {}, el("th", {}, "Model"), T.columns.map((c) => el("th", { "data-col": c.key }, c.title, el("span", { class: "n" }, c.n))))),
      el("tbody", {}, T.rows.map((r) => el("tr", { "data-model": r.key },
        el("td", {}, el("a", { href: "#questions", "data-model": r.key, class: "model-link" }, swatch(r.key), nameOf(r.key)), ((D.serving || {})[r.key] || []).length ? el("span", { class: "flag", "data-serving": "true", title: D.serving[r.key].join("; ") }, " ‡") : null),
        r.cells.map((c) => el("td", { class: "num" + (c.bold ? " best" : "") + (c.flagged ? " flag" : ""), "data-flagged": c.flagged ? "true" : null }, c.text, c.ci ? " " : null, c.ci ? el("span", { class: "ci" }, c.ci) : null))))));
    $("main-note").textContent = `Accuracy in percent with its ${level} interval in brackets; n under each split: the pairs or questions its score counts. Context/texture: strict four-probe pair accuracy. ${T.note}`;
    $("main-table").querySelectorAll("a.model-link").forEach((a) => a.addEventListener("click", () => { $("q-model").value = a.dataset.model; }));

    robustness();
    const figs = $("figures");
    figs.replaceChildren(...D.figures.map((f) => el("figure", { "data-figure": f.name }, el("img", { src: f.src, alt: f.caption }), el("figcaption", {}, f.caption))));

    const pairRows = [], attrRows = [], langRows = [], parseRows = [];
    for (const m of D.models) {
      const dg = D.diagnostics[m.key] || {};
      for (const s of D.splits) {
        const e = dg[s];
        if (!e) continue;
        const p = e.parsing;
        const who = el("span", {}, named(m.key), flagMark(m.key, s));
        parseRows.push({ attrs: flagRow(isFlagged(m.key, s)), cells: [who, s, p.questions, p.missing, p.parse_failures, p.empty_answers, p.wrong_parsed, p.correct] });
        if (e.pair_class_counts) {
          pairRows.push({ attrs: flagRow(isFlagged(m.key, s)), cells: [who.cloneNode(true), s, e.pairs, ...CLASSES.map((c) => pct(e.pair_class_counts[c] / e.pairs)), pct(e.yes_rate), pct(e.no_rate)] });
        }
        if (e.attribute) {
          const a = e.attribute;
          attrRows.push({ attrs: flagRow(isFlagged(m.key, s)), cells: [who.cloneNode(true), a.n, pct(a.exact), pct(a.within_one), a.mae === null ? "-" : a.mae.toFixed(2),
            a.signed_error === null ? "-" : (a.signed_error >= 0 ? "+" : "") + a.signed_error.toFixed(2), `${pct(a.canonical_share)} (n=${a.n_canonical_known})`] });
        }
        if (e.language) {
          const l = e.language;
          langRows.push({ attrs: flagRow(isFlagged(m.key, s)), cells: [who.cloneNode(true), l.n, `${pct(l.suggested_share)} (n=${l.n_suggested_known})`, `${pct(l.unknown_share)} (n=${l.n_unknown_known})`] });
        }
      }
    }
    table("pairs-table", ["Model", "Split", "Pairs", ...CLASSES.map((c) => CLASS_LABELS[c] + " %"), "Yes-rate %", "No-rate %"], pairRows, [false, false, true, true, true, true, true, true, true, true]);
    table("attribute-table", ["Model (attribute)", "n", "Exact %", "Within one %", "MAE", "Signed error", "= canonical count %"], attrRows, [false, true, true, true, true, true, true]);
    table("language-table", ["Model (language)", "n", "Chose suggested option %", "Chose unknown option %"], langRows, [false, true, true, true]);
    table("parse-table", ["Model", "Split", "Questions", "Missing", "Parse failures", "Empty: token budget spent", "Wrong (parsed)", "Correct"], parseRows, [false, false, true, true, true, true, true, true]);

    $("comparison-note").textContent = `A - B in percentage points with a ${level} paired-bootstrap interval; p: exact McNemar per split, paired bootstrap for the macro; Holm-adjusted over the table. Shaded blue: adjusted p < 0.05. Shaded red and marked †: A or B has more than ${pct(D.max_nonanswer_rate)}% non-answers on the split (its difference says little about what the models see; red wins over blue).`;
    table("comparison-table", ["A", "B", "Split", "n", "A %", "B %", "A - B", "Interval", "A-only", "B-only", "p", "p (Holm)"],
      D.comparison.map((r) => ({
        attrs: isFlagged(r.model_a, r.split) || isFlagged(r.model_b, r.split) ? flagRow(true) : Number(r.p_holm) < 0.05 ? { class: "sig" } : {},
        cells: [el("span", {}, named(r.model_a), flagMark(r.model_a, r.split)), el("span", {}, named(r.model_b), flagMark(r.model_b, r.split)), r.split, r.n, r.accuracy_a, r.accuracy_b, (Number(r.difference) >= 0 ? "+" : "") + r.difference,
          `[${r.low}, ${r.high}]`, r.a_only || "-", r.b_only || "-", fmtP(r.p_value), fmtP(r.p_holm)],
      })), [false, false, false, true, true, true, true, true, true, true, true, true], "Fewer than two models: nothing to compare.");
    table("paper-table", ["Model", "Paper model", "Metric", "Reported", "Reproduced", "Interval", "Difference", "Inside"],
      D.paper.map((r) => ({ attrs: flagRow(isFlagged(r.model, r.metric)), cells: [el("span", {}, named(r.model), flagMark(r.model, r.metric)), r.paper_name, r.metric, r.reported, r.reproduced, `[${r.low}, ${r.high}]`, r.difference, r.inside === "true" ? "yes" : "no"] })),
      [false, false, false, true, true, true, true, false], "No configured model has a paper_name (params.yaml): nothing to compare.");
  }
  // ---------------------------------------------------------------- issue 21: flags, bounds, prompts, stability
  function robustness() {
    const flags = [];
    for (const m of D.models) {
      const f = fa(m.key);
      if (!f) continue;
      for (const s of [...D.splits, "macro"]) if (isFlagged(m.key, s)) flags.push(`${m.name} / ${s}: ${nonans(m.key, s).text}`);
    }
    for (const m of D.models) for (const why of (D.serving || {})[m.key] || []) flags.push(`${m.name} ‡: ${why}`);
    for (const r of D.stability) if (r.nonanswer_flag === "true") flags.push(`${nameOf(r.model)} / audit: ${r.nonanswer} of ${r.answers} audited answers are non-answers (every repeat)`);
    for (const r of D.stability) if (r.drift === "true") flags.push(`${nameOf(r.model)}: served by more than one model version (${r.served}): drift`);
    const box = $("flags");
    box.hidden = !flags.length;
    box.replaceChildren(el("b", {}, `Flagged (non-answer rate above ${pct(D.max_nonanswer_rate)}%, version drift, or a score that depends on the backend or the batch size):`), el("ul", {}, flags.map((t) => el("li", {}, t))));
    const bound = (iv) => iv ? `${pct(iv.estimate)} [${pct(iv.low)}, ${pct(iv.high)}]` : "n/a";
    const rows = [];
    for (const m of D.models) {
      const f = fa(m.key);
      if (!f) continue;
      for (const c of [...D.splits, "macro"]) {
        const b = f[c];
        const n = nonans(m.key, c);
        rows.push({ attrs: flagRow(isFlagged(m.key, c)), cells: [m.name, c, bound(b.official), bound(b.excluded), bound(b.chance), n ? n.text + (n.flagged ? " †" : "") : "-"] });
      }
    }
    $("failure-note").textContent = `Official: a non-answer (${[...NON].join(", ")}) counts as wrong, as the contract says. Excluded: units without any non-answer only (n/a: none left). At chance: each non-answer replaced by a uniform guess (expected score). ${level} percentile bootstrap intervals. † non-answer rate above ${pct(D.max_nonanswer_rate)}%.`;
    table("failure-table", ["Model", "Split", "Official %", "Non-answers excluded %", "Non-answers at chance %", "Non-answers"], rows, [false, false, true, true, true, false], "No failure-aware scores (intervals written before outcomes were recorded).");
    $("sensitivity-note").textContent = `Macro accuracy (%) per prompt template (docs/prompts.md) with its interval, and the paired bootstrap interval of its difference from the main template (points). Shaded red: more than ${pct(D.max_nonanswer_rate)}% non-answers.`;
    table("sensitivity-table", ["Model", "Template", "Macro %", "Difference from main", "Non-answers"],
      D.sensitivity.map((r) => ({ attrs: r.nonanswer_flag === "true" ? { class: "flagged" } : {}, cells: [nameOf(r.model), r.template + (r.main === "true" ? " (main)" : ""),
        `${pct(r.macro)} [${pct(r.macro_low)}, ${pct(r.macro_high)}]`, r.main === "true" ? "-" : `${Number(r.difference) >= 0 ? "+" : ""}${pct(r.difference)} [${pct(r.difference_low)}, ${pct(r.difference_high)}]`,
        `${r.nonanswer} of ${r.questions}` + (r.nonanswer_flag === "true" ? " †" : "")] })), [false, false, true, true, false], "No prompt-sensitivity table given.");
    $("stability-note").textContent = `Audited questions asked \`repeats\` times (repeat 0 = the main run). Flip rate: share whose normalized answer changed across repeats. Served: the model version the provider reported. Shaded red: more than ${pct(D.max_nonanswer_rate)}% non-answers, or answers served by more than one version (drift).`;
    table("stability-table", ["Model", "Repeats", "Questions", "Flip rate %", "Accuracy mean % (sd)", "Served", "Drift"],
      D.stability.map((r) => ({ attrs: r.drift === "true" || r.nonanswer_flag === "true" ? { class: "flagged" } : {}, cells: [nameOf(r.model), r.repeats, r.questions,
        r.flip_rate === "" ? "audit off" : `${pct(r.flip_rate)} [${pct(r.flip_low)}, ${pct(r.flip_high)}]` +
          (r.nonanswer_flag === "true" ? ` † ${r.nonanswer} of ${r.answers} answers are non-answers` : ""),
        r.accuracy_mean === "" ? "-" : `${pct(r.accuracy_mean)} (${pct(r.accuracy_sd)})`, r.served, r.drift === "true" ? "drift" : "no"] })),
      [false, true, true, true, true, false, false], "No stability table given.");
  }
  function fmtP(p) { const x = Number(p); return x < 0.001 ? "<0.001" : x.toPrecision(3).replace(/\.?0+$/, ""); }

  // ---------------------------------------------------------------- questions
  function fillSelect(sel, items, value) {
    sel.replaceChildren(...items.map(([v, label]) => el("option", { value: v }, label)));
    if (value !== undefined && items.some(([v]) => v === value)) sel.value = value;
  }
  function thumb(key, alt) { return key ? el("img", { src: D.images[key], alt: alt, loading: "lazy" }) : el("span", { class: "empty" }, "no image"); }
  function verdict(res) {
    const v = el("span", { class: "verdict " + (res[COLS.correct] ? "correct" : "wrong") }, res[COLS.correct] ? "correct" : "wrong");
    const tags = [];
    if (res[COLS.missing]) tags.push(el("span", { class: "tag" }, "missing"));
    else if (!res[COLS.parsed]) tags.push(el("span", { class: "tag" }, "parse failure"));
    return el("span", {}, v, tags);
  }

  function renderQuestions() {
    const model = $("q-model").value, split = $("q-split").value;
    const probes = D.probes[split] || [];
    const probeSel = $("filter-probe");
    const prevProbe = probeSel.value;
    fillSelect(probeSel, [["all", "all"], ...probes.map(([p]) => [p, p])], prevProbe);
    probeSel.disabled = !probes.length;
    const verdictF = $("filter-verdict").value, probeF = probeSel.value, parseF = $("filter-parse").checked;
    const outcomeF = $("filter-outcome").value;
    const text = $("filter-text").value.trim().toLowerCase();
    const qs = D.questions[split], res = D.results[model][split];
    const rows = [];
    qs.forEach((q, i) => {
      const r = res[i];
      if (verdictF === "wrong" && r[COLS.correct]) return;
      if (verdictF === "correct" && !r[COLS.correct]) return;
      if (probeF !== "all" && q.probe !== probeF) return;
      if (outcomeF !== "all" && r[COLS.outcome] !== outcomeF) return;
      if (parseF && (r[COLS.parsed] || r[COLS.missing])) return;
      if (text && ![q.id, q.q, String(r[COLS.pred] ?? ""), String(r[COLS.norm])].some((s) => s.toLowerCase().includes(text))) return;
      const opts = q.options.length ? el("ol", { class: "opts", type: "A" }, q.options.map(([k, v]) => el("li", {}, `${v}`))) : null;
      rows.push(el("tr", { "data-id": q.id, "data-correct": String(r[COLS.correct]), "data-probe": q.probe || "", "data-parsed": String(r[COLS.parsed]), "data-outcome": r[COLS.outcome] },
        el("td", { class: "thumb" }, thumb(q.img, q.id)),
        el("td", { class: "text" }, el("span", { class: "qid" }, q.id + (q.probe ? ` · ${q.probe}` : "")), q.q, opts),
        el("td", { class: "resp" }, r[COLS.missing] ? el("span", { class: "empty" }, "(no prediction)") : String(r[COLS.pred] ?? "")),
        el("td", { class: "resp" }, String(r[COLS.norm])),
        el("td", { class: "resp" }, String(r[COLS.normAnswer])),
        el("td", {}, verdict(r)),
        el("td", {}, el("span", { class: "outcome " + (NON.has(r[COLS.outcome]) ? "non-answer" : r[COLS.outcome]) }, r[COLS.outcome]))));
    });
    $("q-rows").replaceChildren(...rows);
    $("q-count").textContent = `${rows.length} of ${qs.length} questions`;
  }

  // ---------------------------------------------------------------- pairs
  function renderPairs() {
    const model = $("p-model").value, split = $("p-split").value;
    const list = $("pair-list");
    if (!split) { list.replaceChildren(el("p", { class: "empty" }, "No paired split configured.")); $("p-count").textContent = ""; return; }
    const classF = $("p-class").value, failedF = $("p-failed").checked;
    const qs = D.questions[split], res = D.results[model][split];
    const classes = (D.pair_class[model] || {})[split] || {};
    const pairs = new Map();
    qs.forEach((q, i) => { if (!pairs.has(q.pair)) pairs.set(q.pair, {}); pairs.get(q.pair)[q.probe] = i; });
    const cards = [];
    for (const pid of [...pairs.keys()].sort()) {
      const idx = pairs.get(pid);
      const ok = D.probes[split].every(([p]) => res[idx[p]][COLS.correct]);
      const cls = classes[pid] || "other";
      if (failedF && ok) continue;
      if (classF !== "all" && cls !== classF) continue;
      const imgOf = (role) => { const p = D.probes[split].find(([, r]) => r === role)[0]; return qs[idx[p]].img; };
      const probeRows = D.probes[split].map(([p, , expected]) => {
        const q = qs[idx[p]], r = res[idx[p]];
        return el("tr", { "data-probe": p }, el("td", {}, p), el("td", {}, q.q),
          el("td", { class: "resp" }, r[COLS.missing] ? "(no prediction)" : String(r[COLS.pred] ?? "")),
          el("td", {}, String(r[COLS.norm])), el("td", {}, expected), el("td", {}, verdict(r)));
      });
      cards.push(el("div", { class: "pair", "data-pair": pid, "data-class": cls },
        el("h3", {}, pid, el("span", { class: "badge " + cls }, CLASS_LABELS[cls]), el("span", { class: "verdict " + (ok ? "correct" : "wrong") }, ok ? "pair correct" : "pair wrong")),
        el("div", { class: "body" },
          el("div", { class: "images" },
            el("figure", {}, thumb(imgOf("base"), pid + " base"), el("figcaption", {}, "Base image")),
            el("figure", {}, thumb(imgOf("edited"), pid + " edited"), el("figcaption", {}, "Edited image"))),
          el("table", { class: "grid probes" }, el("thead", {}, el("tr", {}, ["Probe", "Question", "Raw response", "Normalized", "Expected", "Verdict"].map((h) => el("th", {}, h)))),
            el("tbody", {}, probeRows)))));
    }
    list.replaceChildren(...(cards.length ? cards : [el("p", { class: "empty" }, "No pair matches the filters.")]));
    $("p-count").textContent = `${cards.length} of ${pairs.size} pairs`;
  }

  // ---------------------------------------------------------------- wiring
  function show(view) {
    for (const v of ["overview", "questions", "pairs"]) $("view-" + v).hidden = v !== view;
    document.querySelectorAll("#tabs a").forEach((a) => a.classList.toggle("active", a.dataset.view === view));
    if (view === "questions") renderQuestions();
    if (view === "pairs") renderPairs();
  }
  function route() { const v = (location.hash || "#overview").slice(1); show(["overview", "questions", "pairs"].includes(v) ? v : "overview"); }

  const modelItems = D.models.map((m) => [m.key, m.name]);
  fillSelect($("q-model"), modelItems);
  fillSelect($("q-split"), D.splits.map((s) => [s, s]));
  fillSelect($("p-model"), modelItems);
  fillSelect($("p-split"), D.paired.map((s) => [s, s]));
  fillSelect($("p-class"), [["all", "all"], ...CLASSES.map((c) => [c, CLASS_LABELS[c]])]);
  fillSelect($("filter-outcome"), [["all", "all"], ...(D.outcomes || []).map((o) => [o, o])]);
  for (const id of ["q-model", "q-split", "filter-verdict", "filter-outcome", "filter-probe", "filter-parse"]) $(id).addEventListener("change", renderQuestions);
  $("filter-text").addEventListener("input", renderQuestions);
  for (const id of ["p-model", "p-split", "p-class", "p-failed"]) $(id).addEventListener("change", renderPairs);
  window.addEventListener("hashchange", route);
  overview();
  route();
  document.body.dataset.ready = "true";
})();
