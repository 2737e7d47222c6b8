/* The board: the four seats around the table as the display sees it, the centre (phase,
 * dice, wall break, 荒番, 开宝, the machine's state), and, once someone wins, the hand as
 * read, the questions, the proposed settlement and the ways to correct it.
 *
 * Everything is drawn again from each snapshot: the server's state is the only truth, and a
 * snapshot is small. The dialogs keep what a player is typing: they are not redrawn.
 */
(function () {
  "use strict";
  const A = window.App;
  const { t, h } = A;

  const WIN_PHASES = ["win_declared", "reading", "confirming"];
  const HOWS = ["self_draw", "discard", "robbing_kong", "eight_flowers"];

  let state = null;
  let lastProposal = null; // {hand, time} of the proposal shown, to mark a recomputed one
  let recomputedAt = 0;
  let editing = null; // the seat editor's purpose: {seat, question}

  const $ = (id) => document.getElementById(id);

  /** The seat drawn at the bottom: this device's choice (Settings, ?seat=N, the rotate
   * button), seat 0 by default. */
  function bottomSeat() {
    const n = Number(A.prefs.get("seat", "0"));
    return Number.isInteger(n) && n >= 0 && n < 4 ? n : 0;
  }

  function names() {
    return (state && state.seat_names) || [];
  }

  /** The seats that declared a win and did not take it back. */
  function winners() {
    const out = {};
    for (const [seat, w] of Object.entries((state && state.winners) || {})) {
      if (w.how !== "withdrawn") out[seat] = w;
    }
    return out;
  }

  // -- the seats --------------------------------------------------------------------------

  function renderSeat(seat) {
    const sec = $("seat-" + seat);
    const view = (state.seats && state.seats[seat]) || {};
    const won = winners();
    const isDealer = seat === state.dealer;
    const wind = A.seatWind(seat, state.dealer);
    const total = (state.totals || [])[seat];
    sec.dataset.pos = A.seatPosition(seat, bottomSeat());
    sec.classList.toggle("dealer", isDealer);
    sec.classList.toggle("winner", String(seat) in won);
    sec.classList.toggle("flagged", (view.flags || []).length > 0);

    const head = h("header", { class: "seat-head" },
      h("span", { class: "wind", testid: "wind-" + seat, title: t("wind.title") }, t("wind." + wind)),
      h("span", { class: "name", testid: "name-" + seat }, A.seatName(names(), seat)),
      isDealer ? h("span", { class: "dealer-mark", testid: "dealer-" + seat, title: t("seat.dealer_title") }, t("seat.dealer")) : null,
      String(seat) in won ? h("span", { class: "hu-mark", testid: "winner-" + seat }, t("seat.hu")) : null,
      h("span", {
        class: "total " + (A.toNumber(total) > 0 ? "pos" : A.toNumber(total) < 0 ? "neg" : "zero"),
        testid: "total-" + seat, title: t("seat.total"),
      }, A.fmtAmount(total === undefined ? 0 : total, true)));

    let flowers = [];
    try {
      flowers = A.expandTiles(view.flowers || "");
    } catch (_) {
      /* drawn as the raw text below */
    }
    const meta = h("div", { class: "seat-meta" },
      h("span", { class: "hua-count", testid: "hua-" + seat }, t("seat.flowers", { n: flowers.length })));
    if (view.last_change) {
      meta.append(h("span", { class: "last-change" }, A.tOr("change." + view.last_change, view.last_change)));
    }

    const unsure = A.unsureCodes(view.flags);
    const open = h("div", { class: "open-melds" });
    if (view.flowers) open.append(h("span", { class: "flowers", testid: "flowers-" + seat }, A.tilesEl(view.flowers)));
    const melds = h("span", { class: "melds", testid: "melds-" + seat });
    for (const m of view.melds || []) melds.append(A.meldEl(m, seat, { unsure }));
    open.append(melds);

    sec.replaceChildren(head, meta, open);
    // the concealed hand is never shown: only tiles a player laid open after the hand ended
    if (WIN_PHASES.includes(state.phase) && view.open_tiles) {
      sec.append(h("div", { class: "laid-open", testid: "hand-" + seat },
        h("span", { class: "label" }, t("seat.laid_open")), A.tilesEl(view.open_tiles, { unsure })));
    }
    if ((view.flags || []).length) {
      const ul = h("ul", { class: "flags", testid: "flags-" + seat });
      for (const f of view.flags) ul.append(h("li", {}, f));
      sec.append(ul);
    }
  }

  // -- the centre -------------------------------------------------------------------------

  // pips of a die on a 3x3 grid, numbered 0-8 row by row
  const PIPS = { 1: [4], 2: [0, 8], 3: [0, 4, 8], 4: [0, 2, 6, 8], 5: [0, 2, 4, 6, 8], 6: [0, 2, 3, 5, 6, 8] };

  function dieEl(value) {
    const die = h("span", { class: "die", role: "img", "aria-label": String(value), dataset: { value: String(value) } });
    for (let i = 0; i < 9; i++) {
      die.append(h("span", { class: (PIPS[value] || []).includes(i) ? "pip on" : "pip" }));
    }
    if (value === 1 || value === 4) die.classList.add("red"); // red pips, as on real dice
    return die;
  }

  function renderCentre() {
    const phase = $("phase");
    phase.dataset.phase = state.phase;
    phase.textContent = A.tOr("phase." + state.phase, state.phase);
    $("phase-reason").textContent = A.serverSays("reason", state.phase_key, state.phase_args, state.phase_reason, names());
    $("hand-no").textContent = state.session ? t("centre.hand", { n: state.hand, session: state.session }) : t("centre.no_session");
    $("profile").textContent = t("centre.profile", { name: state.profile });
    $("stake").textContent = t("centre.stake", { n: A.fmtAmount(state.stake) });

    const dice = $("dice");
    dice.replaceChildren();
    if (state.dice) dice.append(dieEl(state.dice[0]), dieEl(state.dice[1]));
    const wall = $("wall-break");
    wall.textContent = state.wall !== null && state.wall !== undefined
      ? t("centre.wall", { seat: A.seatName(names(), state.wall), stacks: state.stacks })
      : "";
    $("huangfan").textContent = t("centre.huangfan", { n: state.huangfan || 0 });
    $("huangfan").classList.toggle("hot", (state.huangfan || 0) > 0);
    const kaibao = $("kaibao");
    kaibao.hidden = !state.kaibao;
    kaibao.textContent = t("centre.kaibao");

    const faults = state.faults || {};
    const link = $("link-status");
    link.dataset.state = "link_lost" in faults ? "bad" : "mcu_reset" in faults ? "warn" : "ok";
    link.textContent = "link_lost" in faults ? t("status.link_lost")
      : "mcu_reset" in faults ? t("status.mcu_reset") : t("status.link_ok");
    const cam = $("camera-status");
    cam.dataset.state = "camera_lost" in faults ? "bad" : "ok";
    cam.textContent = "camera_lost" in faults ? t("status.camera_lost") : t("status.camera_ok");
  }

  function renderFaults() {
    const box = $("faults");
    box.replaceChildren();
    for (const [name, message] of Object.entries(state.faults || {})) {
      box.append(h("div", { class: "banner fault", role: "alert", testid: "fault-" + name },
        h("strong", {}, A.tOr("fault." + name, name)),
        h("span", { class: "fault-help" }, A.tOr("faulthelp." + name, "")),
        message ? h("span", { class: "fault-message" }, message) : null));
    }
  }

  function button(testid, key, onclick, cls) {
    return h("button", { type: "button", class: "btn " + (cls || ""), testid, id: testid, onclick }, t(key));
  }

  function renderActions() {
    const box = $("actions");
    box.replaceChildren();
    const phase = state.phase;
    if (!state.session) {
      box.append(h("a", { class: "btn", href: "/settings", testid: "goto-settings" }, t("centre.start_session")));
      return;
    }
    if (phase === "idle") box.append(button("start-hand", "action.start_hand", () => A.action("start_hand", {}), "primary big"));
    if (phase === "playing") {
      box.append(button("declare-win", "action.declare_win", () => openDeclare(null), "primary"));
      box.append(button("declare-drawn", "action.declare_drawn", async () => {
        if (await A.askConfirm(t("confirm.drawn"))) A.action("declare_drawn", {});
      }));
    }
    if (phase === "win_declared") {
      const seats = Object.keys(winners()).map(Number);
      box.append(button("declare-how", "action.declare_how", () => openDeclare(seats.length ? seats[0] : null), "primary"));
      box.append(button("declare-win", "action.declare_second", () => openDeclare(null)));
    }
    if (phase === "shuffling" || phase === "dice" || Object.keys(state.faults || {}).length) {
      box.append(button("clear-fault", "action.clear_fault", () => A.action("clear_fault", {})));
    }
  }

  // -- the win ----------------------------------------------------------------------------

  function optionLabel(q, opt) {
    if (opt === true) return t("answer.yes");
    if (opt === false) return t("answer.no");
    if (q.kind === "winning_tile" && typeof opt === "string") {
      const parsed = A.parseTiles(opt);
      if (!parsed.error && parsed.tiles.length === 1) {
        return h("span", { class: "opt-tile" }, A.tileEl(parsed.tiles[0]), " ", A.tileName(opt, A.lang));
      }
    }
    return A.tOr("answer." + opt, String(opt));
  }

  /** A question's words in this device's language (the server's English for an old one). */
  function questionText(q) {
    return A.serverSays("question", q.key, q.args, q.text, names());
  }

  function questionEl(q) {
    const about = q.seat === null || q.seat === undefined ? "" : A.seatName(names(), q.seat);
    const box = h("div", { class: "question", testid: "question-" + q.id, dataset: { kind: q.kind, id: String(q.id) } },
      h("p", { class: "q-kind" }, A.tOr("q." + q.kind, q.kind, { seat: about })),
      h("p", { class: "q-text" }, questionText(q)));
    const buttons = h("div", { class: "q-options" });
    const answer = (value) => A.action("answer", { question: q.id, value });
    if ((q.options || []).length) {
      for (const opt of q.options) {
        buttons.append(h("button", {
          type: "button", class: "btn answer", testid: "answer-" + q.id + "-" + String(opt),
          onclick: () => answer(opt),
        }, optionLabel(q, opt)));
      }
    } else if (q.kind === "seat") {
      buttons.append(
        h("button", { type: "button", class: "btn answer primary", testid: "answer-" + q.id + "-ok", onclick: () => answer("ok") }, t("answer.ok")),
        h("button", { type: "button", class: "btn answer", testid: "answer-" + q.id + "-correct", onclick: () => openSeatEditor(q.seat, q) }, t("answer.correct")));
    } else {
      // a free answer in the notation
      const input = h("input", { class: "q-input", testid: "answer-" + q.id + "-text", autocomplete: "off", "aria-label": t("answer.free") });
      buttons.append(input, h("button", {
        type: "button", class: "btn answer", testid: "answer-" + q.id + "-send",
        onclick: () => answer(input.value.trim()),
      }, t("answer.send")));
    }
    box.append(buttons);
    return box;
  }

  /** What lies open at a winner's seat, as the camera read it, unsure tiles marked. */
  function winnerEl(seat, w, inProposal) {
    const view = state.seats[seat] || {};
    const unsure = A.unsureCodes(view.flags);
    // once proposed, the proposal draws the hand (the winning tile apart): not twice
    if (inProposal && !(view.flags || []).length) return null;
    const box = h("div", { class: "winner-read", testid: "read-" + seat },
      h("h3", {}, t("win.title", { seat: A.seatName(names(), seat) }), " · ", A.howText(w.how, w.discarder, names())));
    const row = h("div", { class: "hand" });
    if (view.open_tiles) row.append(A.tilesEl(view.open_tiles, { unsure }));
    for (const m of view.melds || []) row.append(A.meldEl(m, seat, { unsure }));
    if (view.flowers) row.append(h("span", { class: "flowers" }, A.tilesEl(view.flowers)));
    if (!row.childNodes.length) row.append(h("span", { class: "hint" }, t("win.not_laid")));
    box.append(row);
    if ((view.flags || []).length) {
      const ul = h("ul", { class: "flags", testid: "read-flags-" + seat });
      for (const f of view.flags) ul.append(h("li", {}, t("win.unsure"), " ", f));
      box.append(ul);
    }
    return box;
  }

  function renderWin() {
    const panel = $("win-panel");
    const active = WIN_PHASES.includes(state.phase);
    // a proposal still there between hands is the settlement just confirmed: it stays in
    // view until the next hand starts, marked settled, with nothing left to press
    const settled = !active && Boolean(state.proposal);
    const show = active || settled;
    panel.hidden = !show;
    panel.dataset.settled = settled ? "true" : "false";
    document.body.classList.toggle("has-win", show);
    if (!show) {
      lastProposal = null;
      return;
    }
    const won = winners();
    const box = $("winners");
    box.replaceChildren();
    const proposed = new Set(((state.proposal && state.proposal.wins) || []).map((w) => w.winner));
    for (const [seat, w] of Object.entries(won)) {
      const el = winnerEl(Number(seat), w, proposed.has(Number(seat)));
      if (el) box.append(el);
    }

    const qs = $("questions");
    qs.replaceChildren();
    for (const q of state.questions || []) qs.append(questionEl(q));

    const pbox = $("proposal-box");
    pbox.replaceChildren();
    const p = state.proposal;
    if (p) {
      // a proposal that replaced another of the same hand was recomputed after a correction
      // (compared whole: a correction on the table's clock may carry the same time)
      const key = { hand: p.hand, body: JSON.stringify([p.wins, p.settlement]) };
      if (lastProposal && lastProposal.hand === key.hand && lastProposal.body !== key.body) recomputedAt = Date.now();
      lastProposal = key;
      const div = h("div", {
        class: "proposal", testid: "proposal",
        dataset: { hand: String(p.hand), settled: settled ? "true" : "false" },
      }, h("h3", {}, t(settled ? "proposal.settled_heading" : "proposal.heading", { n: p.hand })));
      if (Date.now() - recomputedAt < 8000) {
        div.classList.add("recomputed");
        div.append(h("p", { class: "recomputed-note", testid: "recomputed", role: "status" }, t("proposal.recomputed")));
      }
      div.append(A.settlementEl(p.settlement, names(), { wins: p.wins }));
      pbox.append(div);
    } else {
      pbox.append(h("p", { class: "hint", testid: "proposal-waiting" }, t("proposal.waiting")));
    }

    document.querySelector(".win-actions").hidden = settled;
    const canConfirm = state.phase === "confirming" && Boolean(p) && !(state.questions || []).length;
    $("confirm").disabled = !canConfirm;
    const canCorrect = state.phase === "reading" || state.phase === "confirming";
    $("correct-seat").disabled = !canCorrect;
    $("correct-how").disabled = !canCorrect;
  }

  // -- the dialogs ------------------------------------------------------------------------

  function fillSeats(select, withNone) {
    const keep = select.value;
    select.replaceChildren();
    if (withNone) select.append(h("option", { value: "" }, t("howedit.none")));
    for (let seat = 0; seat < 4; seat++) select.append(h("option", { value: String(seat) }, A.seatName(names(), seat)));
    if (keep !== "") select.value = keep;
  }

  function fillHows(select, withUnknown) {
    const keep = select.value;
    select.replaceChildren();
    if (withUnknown) select.append(h("option", { value: "" }, t("how.ask_panel")));
    for (const how of HOWS) select.append(h("option", { value: how }, t("howname." + how)));
    if (keep !== "") select.value = keep;
  }

  /** The seat editor, filled with what the table shows at `seat`; `question` when it
   * answers a "seat" question rather than correcting on its own. */
  function openSeatEditor(seat, question) {
    if (!state) return;
    const won = Object.keys(winners()).map(Number);
    if (seat === null || seat === undefined) seat = won.length ? won[0] : bottomSeat();
    editing = { seat, question: question || null };
    fillSeats($("edit-seat"), false);
    $("edit-seat").value = String(seat);
    $("edit-seat").disabled = Boolean(question);
    const note = $("edit-question");
    note.hidden = !question;
    note.textContent = question ? questionText(question) : "";
    loadSeat(seat);
    $("seat-editor").showModal();
    $("edit-open").focus();
  }

  function loadSeat(seat) {
    const view = state.seats[seat] || {};
    $("edit-flowers").value = view.flowers || "";
    let melds = "";
    try {
      melds = (view.melds || []).map(A.formatMeld).join(" ");
    } catch (_) {
      melds = (view.melds || []).map((m) => "[" + m.tiles + "]").join(" ");
    }
    $("edit-melds").value = melds;
    $("edit-open").value = view.open_tiles || "";
    previewSeat();
  }

  /** Read the editor: {value, error, warning}. Checked lightly here; the server decides. */
  function readSeatForm() {
    const fail = (field, err) => ({
      value: null, warning: "",
      error: t("edit.error_in", { field: t("edit." + field) }) + " " + t(err.key, { x: err.detail }),
    });
    let flowers;
    let melds;
    let open;
    try {
      flowers = A.expandTiles($("edit-flowers").value);
    } catch (err) {
      return fail("flowers", err);
    }
    if (flowers.some((c) => !c.endsWith("f"))) return fail("flowers", { key: "notation.only_flowers", detail: "" });
    if (new Set(flowers).size !== flowers.length) return fail("flowers", { key: "notation.flower_twice", detail: "" });
    try {
      melds = A.parseMelds($("edit-melds").value);
    } catch (err) {
      return fail("melds", err);
    }
    try {
      open = A.expandTiles($("edit-open").value);
    } catch (err) {
      return fail("open", err);
    }
    if (open.some((c) => c.endsWith("f"))) return fail("open", { key: "notation.no_flowers", detail: "" });
    // more than four of a tile cannot be
    const count = {};
    for (const m of melds) for (const c of A.expandTiles(m.tiles)) count[c] = (count[c] || 0) + 1;
    for (const c of open) count[c] = (count[c] || 0) + 1;
    const five = Object.keys(count).find((c) => count[c] > 4);
    if (five) return fail("open", { key: "notation.fifth", detail: five });
    let warning = "";
    const seat = Number($("edit-seat").value);
    const w = winners()[String(seat)];
    if (w && w.how !== "eight_flowers") {
      const want = 14 - 3 * melds.length;
      if (open.length !== want) warning = t("edit.count", { have: open.length, want });
    }
    return {
      value: { flowers: flowers.join(" "), melds, open_tiles: A.compressTiles(open) },
      error: "",
      warning,
    };
  }

  function previewSeat() {
    const r = readSeatForm();
    $("edit-error").textContent = r.error;
    $("edit-warning").textContent = r.warning;
    const pre = $("edit-preview");
    pre.replaceChildren();
    if (!r.value) return;
    const seat = Number($("edit-seat").value);
    if (r.value.open_tiles) pre.append(A.tilesEl(r.value.open_tiles));
    for (const m of r.value.melds) pre.append(A.meldEl(m, seat));
    if (r.value.flowers) pre.append(h("span", { class: "flowers" }, A.tilesEl(r.value.flowers)));
  }

  async function submitSeat(e) {
    e.preventDefault();
    const r = readSeatForm();
    if (!r.value) {
      previewSeat();
      return;
    }
    const seat = Number($("edit-seat").value);
    const q = editing && editing.question;
    const done = q
      ? await A.action("answer", { question: q.id, value: r.value })
      : await A.action("correct", { field: "seat", seat, value: r.value });
    if (done) $("seat-editor").close();
  }

  function syncDiscarder(howSel, discSel) {
    const needs = howSel.value === "discard" || howSel.value === "robbing_kong";
    discSel.disabled = !needs;
    discSel.closest("label").classList.toggle("muted", !needs);
  }

  function openHowEditor() {
    if (!state) return;
    const won = Object.values(winners());
    fillHows($("how-select"), false);
    fillSeats($("discarder-select"), false);
    const first = won[0] || {};
    $("how-select").value = HOWS.includes(first.how) ? first.how : "self_draw";
    if (first.discarder !== null && first.discarder !== undefined) $("discarder-select").value = String(first.discarder);
    syncDiscarder($("how-select"), $("discarder-select"));
    $("how-editor").showModal();
  }

  async function submitHow(e) {
    e.preventDefault();
    const how = $("how-select").value;
    const body = { field: "how", how };
    if (how === "discard" || how === "robbing_kong") body.discarder = Number($("discarder-select").value);
    if (await A.action("correct", body)) $("how-editor").close();
  }

  function openDeclare(seat) {
    if (!state) return;
    fillSeats($("declare-seat"), false);
    fillHows($("declare-how"), true);
    fillSeats($("declare-discarder"), false);
    $("declare-seat").value = String(seat === null || seat === undefined ? bottomSeat() : seat);
    $("declare-how").value = seat === null || seat === undefined ? "" : "discard";
    syncDiscarder($("declare-how"), $("declare-discarder"));
    $("declare-dialog").showModal();
  }

  async function submitDeclare(e) {
    e.preventDefault();
    const body = { seat: Number($("declare-seat").value) };
    const how = $("declare-how").value;
    if (how) body.how = how;
    if (how === "discard" || how === "robbing_kong") body.discarder = Number($("declare-discarder").value);
    if (await A.action("declare_win", body)) $("declare-dialog").close();
  }

  // -- wiring -----------------------------------------------------------------------------

  function render() {
    if (!state) return;
    document.body.dataset.phase = state.phase;
    for (let seat = 0; seat < 4; seat++) renderSeat(seat);
    renderCentre();
    renderFaults();
    renderActions();
    renderWin();
  }

  function init() {
    $("confirm").addEventListener("click", () => A.action("confirm", {}));
    $("correct-seat").addEventListener("click", () => openSeatEditor(null, null));
    $("correct-how").addEventListener("click", openHowEditor);
    $("rotate").addEventListener("click", () => {
      A.prefs.set("seat", (bottomSeat() + 1) % 4);
      render();
    });
    $("seat-form").addEventListener("submit", submitSeat);
    $("seat-form").addEventListener("input", previewSeat);
    $("edit-seat").addEventListener("change", () => loadSeat(Number($("edit-seat").value)));
    $("edit-cancel").addEventListener("click", () => $("seat-editor").close());
    $("how-form").addEventListener("submit", submitHow);
    $("how-select").addEventListener("change", () => syncDiscarder($("how-select"), $("discarder-select")));
    $("how-cancel").addEventListener("click", () => $("how-editor").close());
    $("declare-form").addEventListener("submit", submitDeclare);
    $("declare-how").addEventListener("change", () => syncDiscarder($("declare-how"), $("declare-discarder")));
    $("declare-cancel").addEventListener("click", () => $("declare-dialog").close());
    A.onLang(render);
    A.connect((s) => {
      state = s;
      render();
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
