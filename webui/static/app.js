/* The table dashboard's shared code: tile notation, drawing tiles, the language, talking to
 * the server (JSON, CSRF, the event stream), toasts and per-device preferences.
 *
 * Plain browser JavaScript, no build step and nothing fetched from outside: the table's
 * network has no internet. The pure functions (notation, layout, amounts, the chart) take no
 * DOM, so `node` can load this file and test them (see tests/test_pages.py).
 */
(function (root) {
  "use strict";

  // ---------------------------------------------------------------------------------------
  // Tiles and the notation (docs/notation.md)
  // ---------------------------------------------------------------------------------------

  const HONOURS = "ESWNCFP";
  const CN_DIGIT = ["", "一", "二", "三", "四", "五", "六", "七", "八", "九"];
  const CIRCLED = ["", "①", "②", "③", "④", "⑤", "⑥", "⑦", "⑧", "⑨"];
  const CN_HONOUR = { E: "东", S: "南", W: "西", N: "北", C: "中", F: "发", P: "白" };
  const EN_HONOUR = {
    E: "East", S: "South", W: "West", N: "North",
    C: "Red dragon", F: "Green dragon", P: "White dragon",
  };
  const CN_FLOWER = ["", "春", "夏", "秋", "冬", "梅", "兰", "竹", "菊"];
  const EN_FLOWER = ["", "Spring", "Summer", "Autumn", "Winter", "Plum", "Orchid", "Bamboo", "Chrysanthemum"];
  // Tenhou-style honours, which the notation also reads: 1z-4z winds, 5z 白, 6z 发, 7z 中.
  const Z_HONOUR = ["", "E", "S", "W", "N", "P", "F", "C"];
  // Single Chinese characters the server writes (a hand's notation writes flowers in Chinese;
  // a corrected seat may carry "春梅").
  const FROM_CHINESE = {
    "东": "E", "東": "E", "南": "S", "西": "W", "北": "N",
    "中": "C", "紅": "C", "发": "F", "發": "F", "白": "P",
    "春": "1f", "夏": "2f", "秋": "3f", "冬": "4f",
    "梅": "5f", "兰": "6f", "蘭": "6f", "竹": "7f", "菊": "8f",
  };

  /** An error in a tile text; `key` names it for the dictionary, `detail` what was wrong. */
  class NotationError extends Error {
    constructor(key, detail) {
      super(key + ": " + detail);
      this.key = key;
      this.detail = detail;
    }
  }

  /**
   * The tiles a text in the notation names, one code each:
   * expandTiles("123m EE 5p") is ["1m", "2m", "3m", "E", "E", "5p"].
   * Digits share the suit letter after them; spaces and commas are ignored; honours are
   * upper-case letters. Throws NotationError for anything that is not a tile.
   */
  function expandTiles(text) {
    const out = [];
    let digits = "";
    for (const ch of String(text == null ? "" : text)) {
      if (ch === " " || ch === "," || ch === "\t" || ch === "\n" || ch === "，" || ch === "　") {
        if (digits) throw new NotationError("notation.no_suit", digits);
        continue;
      }
      if (ch >= "0" && ch <= "9") {
        digits += ch;
        continue;
      }
      if (ch === "m" || ch === "p" || ch === "s" || ch === "f" || ch === "z") {
        if (!digits) throw new NotationError("notation.no_digits", ch);
        for (const d of digits) {
          const n = Number(d);
          const top = ch === "f" ? 8 : ch === "z" ? 7 : 9;
          if (n < 1 || n > top) throw new NotationError("notation.bad_tile", d + ch);
          out.push(ch === "z" ? Z_HONOUR[n] : d + ch);
        }
        digits = "";
        continue;
      }
      if (digits) throw new NotationError("notation.no_suit", digits);
      if (HONOURS.includes(ch)) out.push(ch);
      else if (FROM_CHINESE[ch]) out.push(FROM_CHINESE[ch]);
      else throw new NotationError("notation.bad_char", ch);
    }
    if (digits) throw new NotationError("notation.no_suit", digits);
    return out;
  }

  /** expandTiles without throwing: {tiles, error}; error is null or a NotationError. */
  function parseTiles(text) {
    try {
      return { tiles: expandTiles(text), error: null };
    } catch (err) {
      if (err instanceof NotationError) return { tiles: [], error: err };
      throw err;
    }
  }

  /** Tile codes back in the compact notation, the way the server writes them:
   * runs of one suit share their letter, identical honours stay together ("123m EE 5p"). */
  function compressTiles(codes) {
    const parts = [];
    let run = "";
    let runSuit = "";
    let lastHonour = "";
    for (const code of codes) {
      if (code.length === 1) {
        if (run) {
          parts.push(run + runSuit);
          run = "";
          runSuit = "";
        }
        if (code === lastHonour) parts[parts.length - 1] += code;
        else parts.push(code);
        lastHonour = code;
        continue;
      }
      lastHonour = "";
      const suit = code[1];
      if (run && suit !== runSuit) {
        parts.push(run + runSuit);
        run = "";
      }
      run += code[0];
      runSuit = suit;
    }
    if (run) parts.push(run + runSuit);
    return parts.join(" ");
  }

  /** What a tile code is: {code, kind: "m"|"p"|"s"|"wind"|"dragon"|"flower"|"back", n}. */
  function tileInfo(code) {
    if (code === "back") return { code, kind: "back", n: 0 };
    if (code.length === 2) {
      const kind = code[1];
      return { code, kind, n: Number(code[0]) };
    }
    return { code, kind: "ESWN".includes(code) ? "wind" : "dragon", n: 0 };
  }

  /** A tile's name in a language: tileName("5m", "zh") is "五万". */
  function tileName(code, lang) {
    const info = tileInfo(code);
    const zh = lang === "zh";
    switch (info.kind) {
      case "m": return zh ? CN_DIGIT[info.n] + "万" : info.n + " characters";
      case "p": return zh ? CN_DIGIT[info.n] + "筒" : info.n + " dots";
      case "s": return zh ? CN_DIGIT[info.n] + "条" : info.n + " bamboo";
      case "f": return zh ? CN_FLOWER[info.n] : EN_FLOWER[info.n];
      case "back": return zh ? "暗牌" : "face down";
      default: return zh ? CN_HONOUR[code] : EN_HONOUR[code];
    }
  }

  // The meld notation of docs/notation.md: [123m<3] chow, [EEE<1] pung, [EEEE<2] kong,
  // [5555p+<2] added kong, [FFFF] concealed kong, <? a claimed meld from an unknown seat.
  const MELD_RE = /^([^<+]+)(\+)?(?:<([0-3?]))?$/;

  /** A meld's kind from its tiles and marks, or null where the shape is impossible. */
  function meldKind(codes, added, source) {
    const same = codes.every((c) => c === codes[0]);
    if (codes.length === 4 && same) {
      if (added) return source === undefined ? null : "added_kong";
      return source === undefined ? "concealed_kong" : "kong";
    }
    if (codes.length !== 3 || added) return null;
    if (same) return "pung";
    const info = codes.map(tileInfo);
    const suit = info[0].kind;
    if (!["m", "p", "s"].includes(suit)) return null;
    if (!info.every((i) => i.kind === suit)) return null;
    const ns = info.map((i) => i.n).sort((a, b) => a - b);
    return ns[1] === ns[0] + 1 && ns[2] === ns[1] + 1 ? "chow" : null;
  }

  /**
   * Melds written in the notation, as the server takes them:
   * parseMelds("[EEE<2] [FFFF]") is
   * [{kind: "pung", tiles: "EEE", from: 2}, {kind: "concealed_kong", tiles: "FFFF", from: null}].
   * Throws NotationError naming the first meld that is wrong.
   */
  function parseMelds(text) {
    const melds = [];
    const src = String(text == null ? "" : text);
    const re = /\[([^\]]*)\]/g;
    let last = 0;
    let m;
    while ((m = re.exec(src)) !== null) {
      if (src.slice(last, m.index).replace(/[\s,，]/g, "")) {
        throw new NotationError("notation.meld_brackets", src.slice(last, m.index).trim());
      }
      last = re.lastIndex;
      const body = m[1].replace(/\s/g, "");
      const parts = MELD_RE.exec(body);
      if (!parts) throw new NotationError("notation.bad_meld", m[0]);
      const codes = expandTiles(parts[1]);
      if (codes.some((c) => c.endsWith("f"))) throw new NotationError("notation.bad_meld", m[0]);
      const mark = parts[3];
      const source = mark === undefined ? undefined : mark === "?" ? null : Number(mark);
      const kind = meldKind(codes, Boolean(parts[2]), source);
      if (!kind) throw new NotationError("notation.bad_meld", m[0]);
      melds.push({ kind, tiles: compressTiles(codes), from: source === undefined ? null : source });
    }
    if (src.slice(last).replace(/[\s,，]/g, "")) {
      throw new NotationError("notation.meld_brackets", src.slice(last).trim());
    }
    if (melds.length > 4) throw new NotationError("notation.too_many_melds", String(melds.length));
    return melds;
  }

  /** A meld ({kind, tiles, from}) back in the notation, for the correction form. */
  function formatMeld(meld) {
    const tiles = compressTiles(expandTiles(meld.tiles));
    if (meld.kind === "concealed_kong") return "[" + tiles + "]";
    const source = meld.from === null || meld.from === undefined ? "?" : String(meld.from);
    return "[" + tiles + (meld.kind === "added_kong" ? "+" : "") + "<" + source + "]";
  }

  /**
   * How a meld lies in front of `seat`: one item per tile drawn, {code, sideways, back,
   * stacked}. The claimed tile is turned sideways on the side of the seat it came from
   * (the previous seat, on the left: the first tile; the seat across: the second; the next
   * seat, on the right: the last). A concealed kong shows its two end tiles face down; an
   * added kong lays its fourth tile across the claimed one (`stacked`).
   */
  function meldLayout(meld, seat) {
    const items = expandTiles(meld.tiles).map((code) => ({
      code, sideways: false, back: false, stacked: false,
    }));
    if (!items.length) return items;
    if (meld.kind === "concealed_kong") {
      items[0].back = true;
      items[items.length - 1].back = true;
      return items;
    }
    const from = meld.from;
    if (from === null || from === undefined || seat === null || seat === undefined) return items;
    const rel = (((from - seat) % 4) + 4) % 4; // 1: the next seat, 2: across, 3: the previous
    if (rel === 0) return items;
    let added = null;
    if (meld.kind === "added_kong" && items.length === 4) added = items.pop();
    const at = rel === 3 ? 0 : rel === 2 ? 1 : items.length - 1;
    items[at].sideways = true;
    if (added) items[at].stacked = true;
    return items;
  }

  /** The codes of the tiles a camera note says it is unsure of ("5m (0.41, or 6m 0.33)"):
   * the tile named just before a confidence in brackets. */
  function unsureCodes(flags) {
    const found = new Set();
    const re = /(?:^|[^0-9A-Za-z])([1-9][mpsf]|[ESWNCFP])\s*\(\s*\d/g;
    for (const flag of flags || []) {
      let m;
      while ((m = re.exec(String(flag))) !== null) found.add(m[1]);
    }
    return found;
  }

  // ---------------------------------------------------------------------------------------
  // Seats, amounts, settlements (pure)
  // ---------------------------------------------------------------------------------------

  /** A seat's wind relative to the dealer: 0 东 (the dealer), 1 南, 2 西, 3 北. */
  function seatWind(seat, dealer) {
    return (((seat - dealer) % 4) + 4) % 4;
  }

  /** Where a seat sits on the display when `bottom` sits at the bottom: the next seat in
   * play order sits on its right, as at the table seen from above. */
  function seatPosition(seat, bottom) {
    return ["bottom", "right", "top", "left"][(((seat - bottom) % 4) + 4) % 4];
  }

  /** An amount as the server writes it (an int, a float, or a fraction "3/2") as a number. */
  function toNumber(value) {
    if (typeof value === "number") return value;
    if (value === null || value === undefined || value === "") return 0;
    const text = String(value);
    const slash = text.indexOf("/");
    if (slash >= 0) return Number(text.slice(0, slash)) / Number(text.slice(slash + 1));
    return Number(text);
  }

  /** An amount for people: whole numbers as they are, others to two places; `signed` adds
   * the "+" a winner's payment carries. */
  function fmtAmount(value, signed) {
    const n = toNumber(value);
    if (!Number.isFinite(n)) return String(value);
    let text = Number.isInteger(n) ? String(n) : String(Math.round(n * 100) / 100);
    if (text === "-0") text = "0";
    return signed && n > 0 ? "+" + text : text;
  }

  /** A seat's payment in each of the four seats' order, from the server's {"0": n, ...}
   * (a settlement) or [n, n, n, n] (a hand in the history); zeros where none. */
  function seatPayments(payments) {
    const out = [0, 0, 0, 0];
    if (!payments) return out;
    for (let seat = 0; seat < 4; seat++) {
      const v = Array.isArray(payments) ? payments[seat] : payments[String(seat)];
      if (v !== undefined && v !== null) out[seat] = v;
    }
    return out;
  }

  /** The wins of a settlement, each with its breakdown and `transfers`: a settlement of one
   * win carries that win's fields at the top level, one of several lists them in `wins`. */
  function winsOf(settlement) {
    if (!settlement) return [];
    if (Array.isArray(settlement.wins)) {
      return settlement.wins.map((w) => Object.assign({}, w, { transfers: w.payments || [] }));
    }
    if (settlement.winner === undefined) return [];
    return [Object.assign({}, settlement, { transfers: settlement.transfers || [] })];
  }

  /** Each seat's running total after every hand, from zero: [[0,0,0,0], after hand 1, ...]. */
  function cumulative(hands) {
    const rows = [[0, 0, 0, 0]];
    for (const hand of hands || []) {
      const prev = rows[rows.length - 1];
      const pay = seatPayments(hand.payments);
      rows.push(prev.map((x, seat) => x + toNumber(pay[seat])));
    }
    return rows;
  }

  /** Whether amounts add up to zero (to the cent: fractions such as 1/3 come as floats). */
  function isZeroSum(amounts) {
    const sum = (amounts || []).reduce((a, x) => a + toNumber(x), 0);
    return Math.abs(sum) < 0.005;
  }

  /** Text made safe to put inside markup. */
  function esc(text) {
    return String(text).replace(/[&<>"']/g, (c) => ({
      "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;",
    })[c]);
  }

  const SEAT_COLOURS = ["#d1495b", "#2e86ab", "#3c9d4e", "#e09f3e"];

  /**
   * The running scores as an inline SVG line chart (markup text): one line per seat over
   * `rows` (from cumulative()), a zero line, the scale on the left, a legend of `names`.
   * Drawn here rather than by a library: nothing may be fetched from outside.
   */
  function chartSvg(rows, names, opts) {
    const o = Object.assign({ width: 640, height: 280, label: "" }, opts || {});
    const pad = { left: 44, right: 12, top: 12, bottom: 40 };
    const w = o.width - pad.left - pad.right;
    const hgt = o.height - pad.top - pad.bottom;
    const values = rows.flat().map(toNumber);
    let lo = Math.min(0, ...values);
    let hi = Math.max(0, ...values);
    if (hi === lo) {
      hi += 1;
      lo -= 1;
    }
    const steps = Math.max(rows.length - 1, 1);
    const x = (i) => pad.left + (w * i) / steps;
    const y = (v) => pad.top + (hgt * (hi - v)) / (hi - lo);
    const r = (v) => Math.round(v * 10) / 10;
    const parts = [];
    parts.push(
      '<svg class="chart" viewBox="0 0 ' + o.width + " " + o.height + '" role="img" ' +
        'aria-label="' + esc(o.label) + '" preserveAspectRatio="xMidYMid meet">'
    );
    // the scale: the top, zero and the bottom
    for (const v of new Set([hi, 0, lo])) {
      parts.push(
        '<line class="grid' + (v === 0 ? " zero" : "") + '" x1="' + pad.left + '" x2="' +
          (pad.left + w) + '" y1="' + r(y(v)) + '" y2="' + r(y(v)) + '"></line>'
      );
      parts.push(
        '<text class="axis" x="' + (pad.left - 6) + '" y="' + r(y(v) + 4) +
          '" text-anchor="end">' + esc(fmtAmount(v)) + "</text>"
      );
    }
    // the hands along the bottom (every one while they fit, else every few)
    const every = Math.max(1, Math.ceil(steps / 12));
    for (let i = 0; i < rows.length; i += every) {
      parts.push(
        '<text class="axis" x="' + r(x(i)) + '" y="' + (pad.top + hgt + 16) +
          '" text-anchor="middle">' + i + "</text>"
      );
    }
    for (let seat = 0; seat < 4; seat++) {
      const pts = rows.map((row, i) => r(x(i)) + "," + r(y(toNumber(row[seat])))).join(" ");
      parts.push(
        '<polyline class="line seat-line-' + seat + '" data-seat="' + seat + '" fill="none" ' +
          'stroke="' + SEAT_COLOURS[seat] + '" stroke-width="2.5" points="' + pts + '"></polyline>'
      );
      const lx = pad.left + (seat * w) / 4;
      parts.push(
        '<rect x="' + r(lx) + '" y="' + (o.height - 14) + '" width="12" height="4" fill="' +
          SEAT_COLOURS[seat] + '"></rect>' +
          '<text class="legend" x="' + r(lx + 16) + '" y="' + (o.height - 9) + '">' +
          esc((names && names[seat]) || "#" + seat) + "</text>"
      );
    }
    parts.push("</svg>");
    return parts.join("");
  }

  // ---------------------------------------------------------------------------------------
  // The server's words (pure): controller/table/messages.py
  // ---------------------------------------------------------------------------------------

  /** The arguments of a server message that name a seat (0-3): said as the seat's name. */
  const SEAT_ARGS = ["seat", "discarder"];
  /** The arguments whose values are words of the dictionary: by.dashboard, failure.jam. */
  const ARG_WORDS = { by: "by.", failure: "failure." };

  /** `template` with each {name} filled from `vars`; null when one is missing. */
  function fillIn(template, vars) {
    let missing = false;
    const text = String(template).replace(/\{(\w+)\}/g, (m, k) => {
      if (vars[k] === undefined || vars[k] === null) {
        missing = true;
        return m;
      }
      return String(vars[k]);
    });
    return missing ? null : text;
  }

  /**
   * A message of the server's (a phase's reason, a question) in the page's language.
   * `word(key)` gives a dictionary entry (undefined where there is none); `prefix` is
   * "reason" or "question"; `key` and `args` are the message's key and arguments as the
   * server sent them; `english` the text it wrote, said instead where the key is empty or
   * unknown (an event older than the keys, a newer server) or an argument is missing;
   * `seatName(seat)` names a seat. A failure the dictionary has no word for is said as the
   * hardware said it (its `message`).
   */
  function serverText(word, prefix, key, args, english, seatName) {
    const fallback = english === null || english === undefined ? "" : String(english);
    const template = key ? word(prefix + "." + key) : undefined;
    if (template === undefined || template === null) return fallback;
    const a = args && typeof args === "object" ? args : {};
    const vars = {};
    for (const [name, value] of Object.entries(a)) {
      const family = ARG_WORDS[name];
      const said = family && typeof value === "string" ? word(family + value) : undefined;
      if (SEAT_ARGS.includes(name) && Number.isInteger(value)) vars[name] = seatName(value);
      else if (said !== undefined) vars[name] = said;
      else if (name === "failure" && a.message) vars[name] = a.message;
      else vars[name] = value;
    }
    const text = fillIn(template, vars);
    return text === null ? fallback : text;
  }

  const pure = {
    NotationError, expandTiles, parseTiles, compressTiles, tileInfo, tileName, meldKind,
    parseMelds, formatMeld, meldLayout, unsureCodes, seatWind, seatPosition, toNumber,
    fmtAmount, seatPayments, winsOf, cumulative, isZeroSum, esc, chartSvg, serverText,
    SEAT_ARGS,
  };

  // Under node (the tests) there is no document: hand over the pure functions and stop.
  if (typeof module === "object" && module.exports) {
    module.exports = pure;
  }
  if (typeof document === "undefined") return;

  // ---------------------------------------------------------------------------------------
  // Per-device preferences (localStorage; a phone in private mode simply forgets them)
  // ---------------------------------------------------------------------------------------

  const prefs = {
    get(key, fallback) {
      try {
        const v = root.localStorage.getItem("mjt." + key);
        return v === null ? fallback : v;
      } catch (_) {
        return fallback;
      }
    },
    set(key, value) {
      try {
        if (value === null || value === undefined) root.localStorage.removeItem("mjt." + key);
        else root.localStorage.setItem("mjt." + key, String(value));
      } catch (_) {
        /* private mode: the choice lasts for this page only */
      }
    },
  };

  const params = new URLSearchParams(root.location.search);

  // ---------------------------------------------------------------------------------------
  // Language
  // ---------------------------------------------------------------------------------------

  const DICT = root.I18N || { en: {}, zh: {} };

  function defaultLang() {
    const nav = (root.navigator && (root.navigator.language || "")) || "";
    return nav.toLowerCase().startsWith("zh") ? "zh" : "en";
  }

  let lang = params.get("lang") || prefs.get("lang", defaultLang());
  if (!DICT[lang]) lang = "en";
  const langListeners = [];

  /** The text for `key` in this device's language, with {name} filled from `vars`. */
  function t(key, vars) {
    let text = DICT[lang][key];
    if (text === undefined) text = DICT.en[key];
    if (text === undefined) return key;
    if (vars) text = text.replace(/\{(\w+)\}/g, (m, k) => (vars[k] === undefined ? m : vars[k]));
    return text;
  }

  /** Like t, but an unknown key gives `fallback` (server words without a translation). */
  function tOr(key, fallback, vars) {
    const known = DICT[lang][key] !== undefined || DICT.en[key] !== undefined;
    return known ? t(key, vars) : fallback;
  }

  /** Fill every element marked data-i18n (text) or data-i18n-placeholder/-title/-label. */
  function applyI18n(scope) {
    const base = scope || document;
    base.querySelectorAll("[data-i18n]").forEach((el) => {
      el.textContent = t(el.dataset.i18n);
    });
    base.querySelectorAll("[data-i18n-placeholder]").forEach((el) => {
      el.placeholder = t(el.dataset.i18nPlaceholder);
    });
    base.querySelectorAll("[data-i18n-title]").forEach((el) => {
      el.title = t(el.dataset.i18nTitle);
    });
    base.querySelectorAll("[data-i18n-label]").forEach((el) => {
      el.setAttribute("aria-label", t(el.dataset.i18nLabel));
    });
  }

  function setLang(next) {
    if (!DICT[next]) return;
    lang = next;
    prefs.set("lang", next);
    document.documentElement.lang = next === "zh" ? "zh-CN" : "en";
    applyI18n();
    const page = document.body.dataset.page;
    document.title = t("title." + page) + " · " + t("app.name");
    const toggle = document.getElementById("lang-toggle");
    // the button names the language it switches to, in that language
    if (toggle) toggle.textContent = next === "zh" ? "English" : "中文";
    renderStamp();
    langListeners.forEach((fn) => fn(next));
  }

  function onLang(fn) {
    langListeners.push(fn);
  }

  // ---------------------------------------------------------------------------------------
  // Building the page
  // ---------------------------------------------------------------------------------------

  /** An element: h("button", {class: "x", onclick: fn, dataset: {testid: "y"}}, "text", el). */
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") el.className = v;
      else if (k === "dataset") Object.assign(el.dataset, v);
      else if (k === "testid") el.dataset.testid = v;
      else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
      else if (k === "text") el.textContent = v;
      else if (v === true) el.setAttribute(k, "");
      else el.setAttribute(k, v);
    }
    for (const c of children.flat()) {
      if (c === null || c === undefined || c === false) continue;
      el.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return el;
  }

  /** One tile drawn with CSS: an ivory block, the number or character, the suit mark. */
  function tileEl(code, opts) {
    const o = opts || {};
    const info = tileInfo(o.back ? "back" : code);
    const name = tileName(info.code, lang);
    const cls = ["tile", "t-" + info.kind];
    if (o.sideways) cls.push("sideways");
    if (o.unsure) cls.push("unsure");
    if (o.winning) cls.push("winning");
    if (info.code === "C") cls.push("t-red");
    if (info.code === "F") cls.push("t-green");
    if (info.code === "P") cls.push("t-white");
    const face = h("span", { class: "tile-face", "aria-hidden": "true" });
    switch (info.kind) {
      case "m":
        face.append(h("span", { class: "tile-num" }, CN_DIGIT[info.n]), h("span", { class: "tile-suit" }, "万"));
        break;
      case "p":
        face.append(h("span", { class: "tile-num" }, CIRCLED[info.n]), h("span", { class: "tile-suit" }, "筒"));
        break;
      case "s":
        face.append(h("span", { class: "tile-num" }, String(info.n)), h("span", { class: "tile-suit" }, "条"));
        break;
      case "f":
        face.append(h("span", { class: "tile-big" }, CN_FLOWER[info.n]), h("span", { class: "tile-corner" }, String(((info.n - 1) % 4) + 1)));
        break;
      case "back":
        break;
      default:
        // 白 is an empty frame on real tiles; the character is kept for readers
        face.append(h("span", { class: "tile-big" }, CN_HONOUR[info.code]));
    }
    const el = h("span", {
      class: cls.join(" "),
      role: "img",
      "aria-label": name + (o.unsure ? " (" + t("tile.unsure") + ")" : ""),
      title: name,
      dataset: { tile: o.back ? "back" : code },
    }, face);
    return el;
  }

  /** A row of tiles from a text in the notation; an unreadable text is shown as it is. */
  function tilesEl(text, opts) {
    const o = opts || {};
    const row = h("span", { class: "tiles" });
    const parsed = parseTiles(text);
    if (parsed.error) {
      row.append(h("span", { class: "raw" }, String(text)));
      return row;
    }
    const unsure = o.unsure || new Set();
    parsed.tiles.forEach((code, i) => {
      const winning = o.winningIndex === i;
      row.append(tileEl(code, { unsure: unsure.has(code), winning }));
    });
    return row;
  }

  /** A meld as it lies in front of `seat` (see meldLayout). */
  function meldEl(meld, seat, opts) {
    const o = opts || {};
    const unsure = o.unsure || new Set();
    const box = h("span", {
      class: "meld meld-" + meld.kind,
      dataset: { kind: meld.kind, from: meld.from === null || meld.from === undefined ? "" : String(meld.from) },
      title: t("meld." + meld.kind),
    });
    let items;
    try {
      items = meldLayout(meld, seat);
    } catch (_) {
      box.append(h("span", { class: "raw" }, "[" + meld.tiles + "]"));
      return box;
    }
    for (const it of items) {
      const tile = tileEl(it.code, { sideways: it.sideways, back: it.back, unsure: unsure.has(it.code) });
      if (it.stacked) {
        // an added kong: the fourth tile lies across the claimed one
        box.append(h("span", { class: "tile-stack" }, tileEl(it.code, { sideways: true }), tile));
      } else {
        box.append(tile);
      }
    }
    return box;
  }

  /** Translate one of the server's 花 sources ("wind pung", "suit concealed kong"). */
  function huaSource(source) {
    const known = tOr("hua." + source, null);
    if (known !== null) return known;
    if (lang !== "zh") return source;
    const words = {
      flowers: "花牌", suit: "数牌", wind: "风", dragon: "箭牌", pung: "碰", kong: "明杠",
      added: "加", concealed: "暗", exposed: "明", held: "张", x1: "×1", x2: "×2", x3: "×3", x4: "×4",
    };
    return String(source).split(" ").map((w) => words[w] || w).join("");
  }

  /** How a seat won, in words: "self-draw", "on Bo's discard". */
  function howText(how, discarder, names) {
    if (!how) return t("how.unknown");
    const name = discarder === null || discarder === undefined ? "?" : seatName(names, discarder);
    return t("how." + how, { seat: name });
  }

  function seatName(names, seat) {
    const n = names && names[seat];
    return n ? n : t("seat.n", { n: seat });
  }

  /** A message of the server's in this device's language, seats by their `names`, the
   * server's English where the dictionary has no words for it (see serverText). */
  function serverSays(prefix, key, args, english, names) {
    const word = (k) => (DICT[lang][k] !== undefined ? DICT[lang][k] : DICT.en[k]);
    return serverText(word, prefix, key, args, english, (seat) => seatName(names, seat));
  }

  /**
   * A settlement drawn for checking: for each win the hand as read, the hand type, each 花
   * and its source, the steps of the working, the cap, the value and the transfers; then
   * each seat's payment (data-testid payment-<seat>), the next dealer and 荒番.
   * `wins` are the wins as Win.to_json writes them (to draw the winning tile), if known.
   */
  function settlementEl(settlement, names, opts) {
    const o = opts || {};
    const box = h("div", { class: "settlement" });
    const list = winsOf(settlement);
    const winJson = {};
    for (const w of o.wins || []) winJson[w.winner] = w;
    for (const win of list) box.append(winEl(win, names, winJson[win.winner]));
    const pays = seatPayments(settlement && settlement.payments);
    const table = h("table", { class: "payments", testid: o.prefix ? o.prefix + "payments" : "payments" },
      h("caption", {}, t("proposal.payments")));
    const tbody = h("tbody");
    for (let seat = 0; seat < 4; seat++) {
      const v = toNumber(pays[seat]);
      tbody.append(h("tr", {},
        h("th", { scope: "row" }, seatName(names, seat)),
        h("td", {
          class: "amount " + (v > 0 ? "pos" : v < 0 ? "neg" : "zero"),
          testid: (o.prefix || "") + "payment-" + seat,
        }, fmtAmount(pays[seat], true))));
    }
    table.append(tbody);
    box.append(table);
    const notes = h("p", { class: "settle-notes" });
    if (settlement && settlement.next_dealer !== null && settlement.next_dealer !== undefined) {
      notes.append(h("span", {}, t("proposal.next_dealer", { seat: seatName(names, settlement.next_dealer) })));
    }
    if (settlement && settlement.huangfan_next !== undefined) {
      notes.append(" ", h("span", {}, t("proposal.huangfan_next", { n: settlement.huangfan_next })));
    }
    if (settlement && settlement.payer_cap) notes.append(" ", h("span", {}, t("proposal.payer_cap", { note: settlement.payer_cap })));
    box.append(notes);
    return box;
  }

  /** One win of a settlement, with its full breakdown. */
  function winEl(win, names, json) {
    const box = h("section", { class: "win", testid: "win-" + win.winner });
    const how = win.win || {};
    box.append(h("h3", {},
      t("win.title", { seat: seatName(names, win.winner) }), " · ",
      howText(how.type, how.from, names)));
    // the hand as the rules read it: concealed tiles, melds, flowers, the winning tile
    if (json) box.append(handEl(json, win.winner));
    else if (win.hand_notation) box.append(h("p", { class: "notation" }, win.hand_notation));
    if (win.valid === false) {
      box.append(h("p", { class: "refusal", testid: "refusal" }, t("win.not_a_win"), " ", win.reason || ""));
      return box;
    }
    const bd = win.breakdown;
    const handType = lang === "zh" ? win.hand : (win.hand_english || win.hand) + (win.hand ? " · " + win.hand : "");
    box.append(h("p", { class: "hand-type", testid: "hand-type" }, handType || ""));
    if (!bd) return box;
    if (bd.reading && bd.reading.length) {
      const reading = h("div", { class: "reading", testid: "reading" }, h("span", { class: "label" }, t("bd.reading")));
      for (const group of bd.reading) reading.append(readingGroupEl(group, win.winner));
      box.append(reading);
    }
    const dl = h("dl", { class: "breakdown", testid: "breakdown" });
    const hua = h("ul", { class: "hua" });
    for (const item of bd.hua || []) {
      hua.append(h("li", {}, h("span", { class: "hua-n" }, "+" + item.hua), " ",
        huaSource(item.source), " ", h("span", { class: "hua-tiles" }, item.tiles)));
    }
    if (!(bd.hua || []).length) hua.append(h("li", {}, t("bd.no_hua")));
    dl.append(h("dt", {}, t("bd.hua", { n: bd.hua_total })), h("dd", {}, hua));
    dl.append(h("dt", {}, t("bd.base")), h("dd", {}, String(bd.base)));
    const steps = h("ol", { class: "steps" });
    for (const st of bd.steps || []) {
      steps.append(h("li", {}, h("b", {}, st.rule), ": ", st.effect, " → ", h("b", {}, fmtAmount(st.value))));
    }
    dl.append(h("dt", {}, t("bd.steps")), h("dd", {}, steps));
    if (bd.doublers && bd.doublers.length) dl.append(h("dt", {}, t("bd.doublers")), h("dd", {}, bd.doublers.join(", ")));
    dl.append(h("dt", {}, t("bd.cap")), h("dd", {}, String(bd.cap)));
    if (bd.partners && bd.partners.length) {
      dl.append(h("dt", {}, t("bd.partners")), h("dd", {}, bd.partners.map((s) => seatName(names, s)).join(", ")));
    }
    dl.append(h("dt", {}, t("bd.value")), h("dd", { class: "value", testid: "value" }, fmtAmount(win.value)));
    box.append(dl);
    if (win.transfers && win.transfers.length) {
      const ul = h("ul", { class: "transfers" });
      for (const p of win.transfers) {
        ul.append(h("li", {}, t("bd.transfer", {
          payer: seatName(names, p.payer), payee: seatName(names, p.payee),
          amount: fmtAmount(p.amount), shares: p.shares,
        }), p.reason ? " · " + p.reason : ""));
      }
      box.append(ul);
    }
    return box;
  }

  /** A group of the rules' reading ("123m", "SS", "[EEE<2]") as tiles. */
  function readingGroupEl(group, seat) {
    const text = String(group);
    if (text.startsWith("[")) {
      try {
        const melds = parseMelds(text);
        if (melds.length === 1) return meldEl(melds[0], seat);
      } catch (_) {
        /* shown as text below */
      }
      return h("span", { class: "raw" }, text);
    }
    return h("span", { class: "group" }, tilesEl(text));
  }

  /** A win's hand (Win.to_json): the concealed tiles, the winning tile apart, the melds,
   * the flowers. */
  function handEl(json, seat, opts) {
    const o = opts || {};
    const box = h("div", { class: "hand", testid: "hand-read-" + seat });
    if (json.concealed) box.append(tilesEl(json.concealed, { unsure: o.unsure }));
    if (json.winning_tile) {
      box.append(h("span", { class: "winning-tile", title: t("win.winning_tile") },
        tileEl(json.winning_tile, { winning: true })));
    }
    for (const m of json.melds || []) box.append(meldEl(m, seat, { unsure: o.unsure }));
    const flowers = Array.isArray(json.flowers) ? json.flowers.join(" ") : "";
    if (flowers) box.append(h("span", { class: "flowers" }, tilesEl(flowers)));
    return box;
  }

  // ---------------------------------------------------------------------------------------
  // Toasts: what the server refused, in the player's language
  // ---------------------------------------------------------------------------------------

  function toast(text, kind) {
    const box = document.getElementById("toasts");
    if (!box) return;
    const el = h("div", {
      class: "toast " + (kind || "error"), role: kind === "info" ? "status" : "alert",
      testid: "toast", dataset: { kind: kind || "error" },
    }, h("span", {}, text), h("button", {
      type: "button", class: "toast-close", "aria-label": t("action.dismiss"),
      onclick: () => el.remove(),
    }, "×"));
    box.append(el);
    setTimeout(() => el.remove(), kind === "info" ? 4000 : 9000);
  }

  // ---------------------------------------------------------------------------------------
  // The server
  // ---------------------------------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  }

  let csrfToken = null;

  async function csrf(fresh) {
    if (!csrfToken || fresh) {
      const data = await getJSON("/api/csrf");
      csrfToken = data.token;
    }
    return csrfToken;
  }

  async function readBody(res) {
    const type = res.headers.get("Content-Type") || "";
    if (type.includes("json")) {
      try {
        return await res.json();
      } catch (_) {
        return null;
      }
    }
    const text = await res.text();
    return { error: text.slice(0, 300) };
  }

  async function getJSON(path) {
    let res;
    try {
      res = await fetch(path, { headers: { Accept: "application/json" }, cache: "no-store" });
    } catch (_) {
      throw new ApiError(0, t("error.network"));
    }
    const body = await readBody(res);
    if (!res.ok) throw new ApiError(res.status, (body && body.error) || res.statusText);
    return body;
  }

  /** POST JSON with the CSRF header. A token the server no longer knows (it restarted) is
   * fetched again once. Throws ApiError with the server's message. */
  async function post(path, body) {
    for (let attempt = 0; attempt < 2; attempt++) {
      let res;
      try {
        const token = await csrf(attempt > 0);
        res = await fetch(path, {
          method: "POST",
          headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRF-Token": token },
          body: JSON.stringify(body || {}),
          cache: "no-store",
        });
      } catch (err) {
        if (err instanceof ApiError) throw err;
        throw new ApiError(0, t("error.network"));
      }
      const data = await readBody(res);
      if (res.ok) return data || {};
      const message = (data && data.error) || res.statusText;
      if (res.status === 403 && attempt === 0 && /csrf|token/i.test(message)) continue;
      throw new ApiError(res.status, message);
    }
    throw new ApiError(403, "CSRF");
  }

  /** The words for a refusal: what kind of refusal in the player's language, then the
   * server's own message. */
  function errorText(err) {
    if (!(err instanceof ApiError)) return t("error.unexpected") + " " + (err && err.message ? err.message : "");
    if (err.status === 0) return t("error.network");
    const kind = {
      400: "error.bad_request", 403: "error.forbidden", 404: "error.not_found",
      409: "error.conflict", 429: "error.too_many",
    }[err.status] || "error.server";
    return t(kind) + (err.message ? " " + err.message : "");
  }

  /** Run a table action (POST /api/actions/<action>); a refusal becomes a toast. Returns
   * the server's answer ({events, state}) or null. */
  async function action(name, body) {
    try {
      const data = await post("/api/actions/" + name, body || {});
      if (data && data.state) App.emitState(data.state);
      return data;
    } catch (err) {
      toast(errorText(err));
      return null;
    }
  }

  // ---------------------------------------------------------------------------------------
  // The live connection: the event stream, with a snapshot on every (re)connect
  // ---------------------------------------------------------------------------------------

  // The controller's event types the stream names (EventSource only reports named events
  // that have a listener).
  const EVENT_TYPES = [
    "phase", "fault", "question", "answer", "proposed", "settled", "drawn", "undone",
    "seat_seen", "win_declared", "hand_started", "learnt", "session_started", "command",
    "announce", "message",
  ];

  const stateListeners = [];
  let lastSeq = -1;
  let freshConnection = true;
  let lastUpdate = null;

  function emitState(state) {
    if (!state || typeof state !== "object") return;
    // an older snapshot arriving late is dropped; after a reconnect any is taken (a server
    // restarted on another log may count from lower)
    if (!freshConnection && typeof state.seq === "number" && state.seq < lastSeq) return;
    freshConnection = false;
    if (typeof state.seq === "number") lastSeq = state.seq;
    lastUpdate = new Date();
    renderStamp();
    stateListeners.forEach((fn) => fn(state));
  }

  /** "Updated 12:03:45": when this device last heard from the table. */
  function renderStamp() {
    const stamp = document.getElementById("last-update");
    if (!stamp || !lastUpdate) return;
    stamp.textContent = t("status.updated", {
      time: lastUpdate.toLocaleTimeString(lang === "zh" ? "zh-CN" : "en-GB"),
    });
    stamp.dateTime = lastUpdate.toISOString();
  }

  function setConn(status) {
    const el = document.getElementById("conn-status");
    document.body.classList.toggle("offline", status !== "live");
    if (!el) return;
    el.dataset.state = status;
    el.dataset.i18n = "conn." + status;
    el.textContent = t("conn." + status);
  }

  async function refresh() {
    try {
      emitState(await getJSON("/api/state"));
      return true;
    } catch (_) {
      return false;
    }
  }

  /**
   * Follow the table: `onState(snapshot)` for every snapshot (from the stream, a refresh or
   * an action's answer), `onEvent(type, data)` for the controller's events. EventSource
   * reconnects by itself after a dropped connection; one the server refused outright (it
   * was restarting) is opened again here, backing off. A poll now and then catches a stream
   * that went quiet without an error (a phone that slept, a proxy).
   */
  function connect(onState, onEvent) {
    if (onState) stateListeners.push(onState);
    if (typeof root.EventSource !== "function") {
      setConn("reconnecting");
      setInterval(refresh, 3000);
      refresh();
      return;
    }
    let es = null;
    let backoff = 1000;
    let pending = null;
    setConn("connecting");

    function open() {
      es = new root.EventSource("/api/events");
      es.addEventListener("open", () => {
        backoff = 1000;
        freshConnection = true;
        setConn("live");
        refresh();
      });
      es.addEventListener("snapshot", (e) => {
        clearTimeout(pending);
        pending = null;
        try {
          emitState(JSON.parse(e.data));
        } catch (_) {
          /* a broken message: the next refresh repairs it */
        }
      });
      for (const type of EVENT_TYPES) {
        es.addEventListener(type, (e) => {
          let data = null;
          try {
            data = JSON.parse(e.data);
          } catch (_) {
            data = e.data;
          }
          if (onEvent) onEvent(type, data);
          // the server follows events with a snapshot; if it does not come soon, ask
          clearTimeout(pending);
          pending = setTimeout(refresh, 400);
        });
      }
      es.addEventListener("error", () => {
        setConn("reconnecting");
        if (es.readyState === 2) {
          // CLOSED: the browser gave up (an error status); open a new one ourselves
          es.close();
          setTimeout(open, backoff);
          backoff = Math.min(backoff * 2, 15000);
        }
      });
    }

    open();
    // a safety net: a snapshot every 30 s while live, and a check every 5 s while not
    setInterval(async () => {
      const live = es && es.readyState === 1;
      if (!live || !lastUpdate || Date.now() - lastUpdate.getTime() > 30000) {
        const ok = await refresh();
        if (!ok) setConn("reconnecting");
        if (es && es.readyState === 2) open();
      }
    }, 5000);
    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState === "visible") refresh();
    });
  }

  // ---------------------------------------------------------------------------------------
  // Confirmation dialog (never window.confirm: it blocks the page and the test browser)
  // ---------------------------------------------------------------------------------------

  function askConfirm(text) {
    const dlg = document.getElementById("confirm-dialog");
    if (!dlg || typeof dlg.showModal !== "function") return Promise.resolve(true);
    document.getElementById("confirm-text").textContent = text;
    return new Promise((resolve) => {
      const done = (ok) => {
        dlg.close();
        yes.removeEventListener("click", onYes);
        no.removeEventListener("click", onNo);
        dlg.removeEventListener("cancel", onNo);
        resolve(ok);
      };
      const yes = document.getElementById("confirm-yes");
      const no = document.getElementById("confirm-no");
      const onYes = () => done(true);
      const onNo = (e) => {
        if (e) e.preventDefault();
        done(false);
      };
      yes.addEventListener("click", onYes);
      no.addEventListener("click", onNo);
      dlg.addEventListener("cancel", onNo);
      dlg.showModal();
    });
  }

  // ---------------------------------------------------------------------------------------
  // Kiosk mode: the table's own display, full screen, large type, dark, kept awake
  // ---------------------------------------------------------------------------------------

  function kioskOn() {
    return prefs.get("kiosk", "0") === "1";
  }

  let wakeLock = null;

  async function keepAwake() {
    try {
      if (navigator.wakeLock && !wakeLock) {
        wakeLock = await navigator.wakeLock.request("screen");
        wakeLock.addEventListener("release", () => {
          wakeLock = null;
        });
      }
    } catch (_) {
      /* not offered (plain http on a phone): the screen's own settings decide */
    }
  }

  function enterFullscreen() {
    const el = document.documentElement;
    if (!document.fullscreenElement && el.requestFullscreen) {
      el.requestFullscreen().catch(() => {});
    }
  }

  function setKiosk(on) {
    prefs.set("kiosk", on ? "1" : "0");
    document.body.classList.toggle("kiosk", on);
    const btn = document.getElementById("fullscreen");
    if (btn) btn.hidden = !on;
    if (on) keepAwake();
  }

  // ---------------------------------------------------------------------------------------
  // Start
  // ---------------------------------------------------------------------------------------

  function init() {
    if (params.has("kiosk")) prefs.set("kiosk", params.get("kiosk") === "1" ? "1" : "0");
    if (params.has("seat") && /^[0-3]$/.test(params.get("seat"))) prefs.set("seat", params.get("seat"));
    setKiosk(kioskOn());
    const toggle = document.getElementById("lang-toggle");
    if (toggle) toggle.addEventListener("click", () => setLang(lang === "zh" ? "en" : "zh"));
    const fs = document.getElementById("fullscreen");
    if (fs) fs.addEventListener("click", enterFullscreen);
    // the browser allows full screen only on a gesture: the first touch in kiosk mode
    document.addEventListener("pointerdown", () => {
      if (kioskOn()) {
        enterFullscreen();
        keepAwake();
      }
    }, { once: true });
    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState === "visible" && kioskOn()) keepAwake();
    });
    const nav = document.querySelector(`.topbar nav a[data-page="${document.body.dataset.page}"]`);
    if (nav) nav.setAttribute("aria-current", "page");
    setLang(lang);
  }

  const App = Object.assign({}, pure, {
    prefs, params, t, tOr, applyI18n, setLang, onLang, h, tileEl, tilesEl, meldEl, handEl,
    settlementEl, winEl, huaSource, howText, seatName, serverSays, toast, ApiError, getJSON, post,
    errorText, action, connect, refresh, emitState, askConfirm, setKiosk, kioskOn,
    get lang() {
      return lang;
    },
    get lastUpdate() {
      return lastUpdate;
    },
    SEAT_COLOURS,
  });
  root.App = App;

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})(typeof window !== "undefined" ? window : globalThis);
