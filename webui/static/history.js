/* The history: every hand of a session with its breakdown (expandable), the totals and
 * their zero-sum check, who pays whom to settle up, a chart of the running scores, the
 * exports, and the undo of the last settlement (admin).
 *
 * The history is loaded again whenever the table settles, draws or undoes a hand.
 */
(function () {
  "use strict";
  const A = window.App;
  const { t, h } = A;
  const $ = (id) => document.getElementById(id);

  let data = { sessions: [], zeroSum: null };
  let chosen = null; // the session number shown; null: the latest
  const open = new Set(); // hands whose breakdown is expanded
  let state = null;
  let admin = false;
  let loadedKey = null;

  /** /api/history as {sessions, zeroSum}: a list of sessions, or {sessions, zero_sum}. */
  function normalise(body) {
    if (Array.isArray(body)) return { sessions: body, zeroSum: null };
    const sessions = (body && (body.sessions || body.history)) || [];
    return { sessions, zeroSum: body ? body.zero_sum : null };
  }

  function current() {
    const list = data.sessions;
    if (!list.length) return null;
    return list.find((s) => s.session === chosen) || list[list.length - 1];
  }

  async function load() {
    try {
      data = normalise(await A.getJSON("/api/history"));
    } catch (err) {
      A.toast(A.errorText(err));
      return;
    }
    render();
  }

  async function loadAdmin() {
    try {
      admin = Boolean((await A.getJSON("/api/admin")).admin);
    } catch (_) {
      admin = false;
    }
    renderUndo();
  }

  function outcomeText(hand) {
    return A.tOr("outcome." + hand.outcome, hand.outcome);
  }

  /** "Bo · 混一色 · 4" for a settled hand's headline. */
  function summary(hand, names) {
    const wins = A.winsOf(hand.settlement);
    if (!wins.length) return "";
    return wins.map((w) => {
      const type = A.lang === "zh" ? w.hand : w.hand_english || w.hand;
      return [A.seatName(names, w.winner), type, w.value !== undefined ? A.fmtAmount(w.value) : ""]
        .filter((x) => x !== undefined && x !== null && x !== "").join(" · ");
    }).join("; ");
  }

  function detailEl(hand, names) {
    const box = h("div", { class: "hand-detail" });
    if (hand.settlement) {
      box.append(A.settlementEl(hand.settlement, names, { wins: hand.wins, prefix: "h" + hand.hand + "-" }));
    } else {
      box.append(h("p", { class: "hint" }, outcomeText(hand)));
    }
    if ((hand.corrected || []).length) {
      box.append(h("p", { class: "corrected" }, t("history.corrected", { what: hand.corrected.join(", ") })));
    }
    if ((hand.history || []).length > 1) {
      const ul = h("ul", { class: "closings" });
      for (const c of hand.history) {
        ul.append(h("li", {}, (c.at || "") + " · " + A.tOr("outcome." + c.outcome, c.outcome) +
          (c.payments ? " · " + c.payments.map((x) => A.fmtAmount(x, true)).join(" / ") : "") +
          (c.reason ? " · " + c.reason : "")));
      }
      box.append(h("h4", {}, t("history.closings")), ul);
    }
    return box;
  }

  function render() {
    const sel = $("session-select");
    sel.replaceChildren();
    for (const s of data.sessions) {
      sel.append(h("option", { value: String(s.session) }, t("history.session_n", { n: s.session, started: s.started || "" })));
    }
    const s = current();
    $("history-empty").hidden = Boolean(s && (s.hands || []).length);
    if (!s) {
      for (const id of ["totals-body", "settle-up", "chart", "hands-head", "hands-body"]) $(id).replaceChildren();
      $("zero-sum").textContent = "";
      for (const id of ["export-csv", "export-json"]) $(id).removeAttribute("href");
      renderUndo();
      return;
    }
    sel.value = String(s.session);
    const names = s.seats || [];
    $("export-csv").href = "/api/history/" + s.session + ".csv";
    $("export-json").href = "/api/history/" + s.session + ".json";

    // totals, and the check that they add up to nothing
    const totals = s.totals || [0, 0, 0, 0];
    const tb = $("totals-body");
    tb.replaceChildren();
    totals.forEach((x, seat) => {
      const v = A.toNumber(x);
      tb.append(h("tr", {}, h("th", { scope: "row" }, A.seatName(names, seat)),
        h("td", { class: "amount " + (v > 0 ? "pos" : v < 0 ? "neg" : "zero"), testid: "total-" + seat }, A.fmtAmount(x, true))));
    });
    let ok = A.isZeroSum(totals);
    const server = data.zeroSum;
    if (server === false || (server && typeof server === "object" && server[String(s.session)] === false) || s.zero_sum === false) ok = false;
    const zs = $("zero-sum");
    zs.dataset.state = ok ? "ok" : "bad";
    zs.textContent = ok ? t("history.zero_sum_ok") : t("history.zero_sum_bad");
    if (s.problem) zs.append(" ", t("history.problem", { problem: s.problem }));

    const su = $("settle-up");
    su.replaceChildren();
    for (const p of s.settle_up || []) {
      su.append(h("li", {}, t("history.pays", {
        payer: A.seatName(names, p.payer), payee: A.seatName(names, p.payee), amount: A.fmtAmount(p.amount),
      })));
    }
    if (!(s.settle_up || []).length) su.append(h("li", { class: "hint" }, t("history.nothing_owed")));

    // the running scores
    const hands = s.hands || [];
    $("chart").innerHTML = A.chartSvg(A.cumulative(hands), names, { label: t("history.chart") });

    // the hands
    const head = h("tr", {}, h("th", { scope: "col" }, "#"), h("th", { scope: "col" }, t("history.col_dealer")),
      h("th", { scope: "col" }, t("history.col_outcome")), h("th", { scope: "col" }, t("history.col_win")),
      ...names.map((n) => h("th", { scope: "col", class: "amount" }, n)), h("th", { scope: "col" }, ""));
    $("hands-head").replaceChildren(head);
    const body = $("hands-body");
    body.replaceChildren();
    for (const hand of hands) {
      const n = hand.hand;
      const pays = A.seatPayments(hand.payments);
      const expanded = open.has(n);
      const toggle = h("button", {
        type: "button", class: "btn small", testid: "expand-" + n, "aria-expanded": expanded ? "true" : "false",
        onclick: () => {
          if (open.has(n)) open.delete(n);
          else open.add(n);
          render();
        },
      }, expanded ? t("history.hide") : t("history.show"));
      body.append(h("tr", { class: "hand-row outcome-" + hand.outcome, testid: "history-row-" + n, dataset: { hand: String(n) } },
        h("td", {}, String(n)), h("td", {}, A.seatName(names, hand.dealer)), h("td", {}, outcomeText(hand)),
        h("td", {}, summary(hand, names)),
        ...pays.map((x, seat) => h("td", { class: "amount", testid: "history-pay-" + n + "-" + seat }, hand.payments ? A.fmtAmount(x, true) : "")),
        h("td", {}, toggle)));
      if (expanded) {
        body.append(h("tr", { class: "detail-row", testid: "history-detail-" + n },
          h("td", { colspan: String(5 + names.length) }, detailEl(hand, names))));
      }
    }
    renderUndo();
  }

  function renderUndo() {
    const btn = $("undo");
    const s = current();
    const live = s && state && s.session === state.session;
    const can = Boolean(live && state.can_undo);
    btn.disabled = !(can && admin);
    $("undo-note").textContent = !can ? t("history.undo_none") : admin ? "" : t("history.undo_admin");
  }

  async function undo() {
    if (!(await A.askConfirm(t("confirm.undo")))) return;
    if (await A.action("undo", {})) load();
  }

  function init() {
    $("session-select").addEventListener("change", (e) => {
      chosen = Number(e.target.value);
      render();
    });
    $("undo").addEventListener("click", undo);
    A.onLang(render);
    A.connect((s) => {
      state = s;
      // the history changes only when a hand closes, reopens, or a session starts
      // (the first snapshot only notes where the table is: the page loaded the history already)
      const key = [s.session, s.hands_settled, s.hands_drawn, s.hand, s.phase === "idle"].join(":");
      if (loadedKey !== null && key !== loadedKey) load();
      loadedKey = key;
      renderUndo();
    });
    loadAdmin();
    load();
    // an admin login made (or expired) meanwhile shows when the page is looked at again
    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState === "visible") loadAdmin();
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
