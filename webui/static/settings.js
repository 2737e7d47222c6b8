/* Settings: this device's choices (language, the seat at the bottom, kiosk mode), the admin
 * PIN (set, log in, log out), and a new session (rules, stake, names, first dealer; admin).
 */
(function () {
  "use strict";
  const A = window.App;
  const { t, h } = A;
  const $ = (id) => document.getElementById(id);

  let state = null;
  let adminInfo = { pin_set: false, admin: false };
  let profiles = [];
  let filled = false; // the session form is filled from the table once, then left to the player

  // -- this device ------------------------------------------------------------------------

  function renderDevice() {
    for (const code of ["zh", "en"]) {
      $("lang-" + code).setAttribute("aria-pressed", A.lang === code ? "true" : "false");
    }
    const sel = $("my-seat");
    sel.replaceChildren();
    const names = (state && state.seat_names) || [];
    for (let seat = 0; seat < 4; seat++) {
      sel.append(h("option", { value: String(seat) }, t("settings.seat_option", { n: seat, name: A.seatName(names, seat) })));
    }
    sel.value = A.prefs.get("seat", "0");
    $("kiosk-toggle").checked = A.kioskOn();
  }

  // -- the admin PIN ----------------------------------------------------------------------

  async function loadAdmin() {
    try {
      adminInfo = await A.getJSON("/api/admin");
    } catch (err) {
      A.toast(A.errorText(err));
    }
    renderAdmin();
  }

  function renderAdmin() {
    const { pin_set: pinSet, admin } = adminInfo;
    $("admin-status").dataset.state = admin ? "admin" : pinSet ? "locked" : "no-pin";
    $("admin-status").textContent = admin ? (pinSet ? t("settings.is_admin") : t("settings.no_pin_admin"))
      : pinSet ? t("settings.not_admin") : t("settings.no_pin");
    $("pin-login").hidden = admin || !pinSet;
    // a PIN is set the first time by anyone; changed later only by the admin, with the old one
    $("pin-set").hidden = pinSet && !admin;
    $("pin-current-label").hidden = !pinSet;
    $("set-pin").textContent = pinSet ? t("settings.change_pin") : t("settings.set_pin");
    $("logout").hidden = !(admin && pinSet);
    $("new-session").disabled = !admin;
    $("session-admin-note").textContent = admin ? "" : t("settings.admin_only");
  }

  async function login(e) {
    e.preventDefault();
    try {
      await A.post("/api/admin/login", { pin: $("pin-input").value });
      $("pin-input").value = "";
      A.toast(t("settings.logged_in"), "info");
    } catch (err) {
      A.toast(A.errorText(err));
    }
    loadAdmin();
  }

  async function setPin(e) {
    e.preventDefault();
    const pin = $("pin-new").value;
    if (!/^\d{4,8}$/.test(pin)) {
      A.toast(t("settings.pin_rule"));
      return;
    }
    if (pin !== $("pin-again").value) {
      A.toast(t("settings.pin_mismatch"));
      return;
    }
    const body = { pin };
    if (adminInfo.pin_set) body.current = $("pin-current").value;
    try {
      await A.post("/api/admin/pin", body);
      for (const id of ["pin-new", "pin-again", "pin-current"]) $(id).value = "";
      A.toast(t("settings.pin_saved"), "info");
    } catch (err) {
      A.toast(A.errorText(err));
    }
    loadAdmin();
  }

  async function logout() {
    try {
      await A.post("/api/admin/logout", {});
    } catch (err) {
      A.toast(A.errorText(err));
    }
    loadAdmin();
  }

  // -- a new session ----------------------------------------------------------------------

  /** /api/profiles ({builtin: [{name, title, description}], current: {...}}) as a list; the
   * profile in force joins it when it is not a built-in one. A plain list is taken too. */
  function normaliseProfiles(body) {
    if (body && Array.isArray(body.builtin)) {
      const list = body.builtin.filter((p) => p && p.name);
      const cur = body.current;
      if (cur && cur.name && !list.some((p) => p.name === cur.name)) list.push({ name: cur.name, title: cur.title });
      return list;
    }
    const list = Array.isArray(body) ? body : body && Array.isArray(body.profiles) ? body.profiles : null;
    if (list) return list.map((p) => (typeof p === "string" ? { name: p } : p)).filter((p) => p && p.name);
    if (body && typeof body === "object") {
      return Object.entries(body).map(([name, v]) => (typeof v === "string" ? { name, title: v } : Object.assign({ name }, v)));
    }
    return [];
  }

  async function loadProfiles() {
    try {
      profiles = normaliseProfiles(await A.getJSON("/api/profiles"));
    } catch (err) {
      A.toast(A.errorText(err));
    }
    renderProfiles();
  }

  function renderProfiles() {
    const sel = $("profile-select");
    const keep = sel.value || (state && state.profile) || "";
    sel.replaceChildren();
    for (const p of profiles) sel.append(h("option", { value: p.name }, p.title ? p.title + " (" + p.name + ")" : p.name));
    if (keep) sel.value = keep;
    describeProfile();
  }

  function describeProfile() {
    const p = profiles.find((x) => x.name === $("profile-select").value);
    $("profile-desc").textContent = (p && p.description) || "";
  }

  function renderSession() {
    const names = (state && state.seat_names) || [];
    if (state) {
      $("session-now").textContent = state.session
        ? t("settings.session_now", {
          n: state.session, profile: state.profile, stake: A.fmtAmount(state.stake),
          hands: (state.hands_settled || 0) + (state.hands_drawn || 0),
        })
        : t("centre.no_session");
    }
    const dealer = $("dealer-select");
    const keep = dealer.value;
    dealer.replaceChildren();
    for (let seat = 0; seat < 4; seat++) {
      const typed = $("seat-name-" + seat).value.trim();
      dealer.append(h("option", { value: String(seat) }, typed || A.seatName(names, seat)));
    }
    dealer.value = keep || "0";
    document.querySelectorAll(".seat-label").forEach((el) => {
      el.textContent = t("settings.seat_name", { n: el.dataset.seat });
    });
    if (state && !filled) {
      filled = true;
      for (let seat = 0; seat < 4; seat++) $("seat-name-" + seat).value = names[seat] || "";
      $("stake-input").value = A.fmtAmount(state.stake);
      $("profile-select").value = state.profile;
      dealer.value = "0";
      describeProfile();
    }
  }

  /** The stake as the server takes it: a whole number, or text such as "1/2" or "0.5". */
  function stakeValue(text) {
    const s = text.trim();
    if (/^\d+$/.test(s)) return Number(s);
    if (/^\d+(\.\d+)?$|^\d+\/\d+$/.test(s)) return s;
    return null;
  }

  async function newSession(e) {
    e.preventDefault();
    const err = $("session-error");
    err.textContent = "";
    const seats = [0, 1, 2, 3].map((s) => $("seat-name-" + s).value.trim());
    if (seats.some((n) => !n || n.length > 40)) {
      err.textContent = t("settings.names_rule");
      return;
    }
    const stake = stakeValue($("stake-input").value);
    if (stake === null || A.toNumber(stake) <= 0) {
      err.textContent = t("settings.stake_rule");
      return;
    }
    const played = state ? (state.hands_settled || 0) + (state.hands_drawn || 0) : 0;
    if (played && !(await A.askConfirm(t("confirm.new_session", { n: played })))) return;
    const body = { profile: $("profile-select").value, stake, seats, dealer: Number($("dealer-select").value) };
    if (await A.action("new_session", body)) A.toast(t("settings.session_started"), "info");
  }

  // -- the table's voice (spoken on the table's speaker: one setting for the table) ------

  let announce = null;

  async function loadAnnounce() {
    try {
      announce = await A.getJSON("/api/announce");
    } catch (_) {
      announce = null; // an older server without announcements: the card stays hidden
    }
    renderAnnounce();
  }

  function renderAnnounce() {
    const langs = (announce && announce.languages) || [];
    // a table with no announcer offers only "off": nothing to choose
    $("announce-card").hidden = !announce || langs.filter((l) => l !== "off").length === 0;
    if (!announce) return;
    const sel = $("speech-lang");
    sel.replaceChildren();
    for (const code of langs) sel.append(h("option", { value: code }, A.tOr("speech." + code, code)));
    sel.value = announce.language;
    $("speech-missing").hidden = announce.available !== false;
  }

  async function setAnnounce(e) {
    try {
      announce = await A.post("/api/announce", { language: e.target.value });
    } catch (err) {
      A.toast(A.errorText(err));
    }
    renderAnnounce();
  }

  // -- wiring -----------------------------------------------------------------------------

  function render() {
    renderDevice();
    renderAdmin();
    renderSession();
  }

  function init() {
    $("lang-zh").addEventListener("click", () => A.setLang("zh"));
    $("lang-en").addEventListener("click", () => A.setLang("en"));
    $("my-seat").addEventListener("change", (e) => A.prefs.set("seat", e.target.value));
    $("kiosk-toggle").addEventListener("change", (e) => A.setKiosk(e.target.checked));
    $("pin-login").addEventListener("submit", login);
    $("pin-set").addEventListener("submit", setPin);
    $("logout").addEventListener("click", logout);
    $("session-form").addEventListener("submit", newSession);
    $("profile-select").addEventListener("change", describeProfile);
    for (let seat = 0; seat < 4; seat++) $("seat-name-" + seat).addEventListener("input", renderSession);
    A.onLang(() => {
      render();
      renderProfiles();
      renderAnnounce();
    });
    A.connect((s) => {
      state = s;
      renderDevice();
      renderSession();
    });
    $("speech-lang").addEventListener("change", setAnnounce);
    render();
    loadAdmin();
    loadProfiles();
    // an admin login made (or expired) meanwhile shows when the page is looked at again
    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState === "visible") loadAdmin();
    });
    loadAnnounce();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
