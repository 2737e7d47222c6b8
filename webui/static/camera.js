/* The camera page: /api/camera.jpg again every two seconds (slower while there is none),
 * each frame loaded off screen first so the picture never flickers to blank.
 */
(function () {
  "use strict";
  const A = window.App;
  const { t } = A;
  const $ = (id) => document.getElementById(id);

  const EVERY_MS = 2000;
  const NONE_MS = 5000; // no camera (404) or no answer: ask less often
  let paused = false;
  let timer = null;
  let status = "loading";
  let shownAt = null;

  function renderStatus() {
    const el = $("camera-state");
    el.dataset.state = status;
    el.textContent = t("camera." + status);
    $("camera-pause").textContent = paused ? t("camera.resume") : t("camera.pause");
    $("camera-time").textContent = shownAt
      ? t("status.updated", { time: shownAt.toLocaleTimeString(A.lang === "zh" ? "zh-CN" : "en-GB") })
      : "";
  }

  function next(ms) {
    clearTimeout(timer);
    if (!paused) timer = setTimeout(fetchFrame, ms);
  }

  function fetchFrame() {
    // a hidden page (a phone in a pocket) asks for nothing
    if (document.visibilityState === "hidden") return next(EVERY_MS);
    const img = new Image();
    img.onload = () => {
      const shown = $("camera-img");
      shown.src = img.src;
      shown.alt = t("camera.alt");
      shown.hidden = false;
      status = "live";
      shownAt = new Date();
      renderStatus();
      next(EVERY_MS);
    };
    img.onerror = () => {
      $("camera-img").hidden = true;
      status = "none";
      renderStatus();
      next(NONE_MS);
    };
    img.src = "/api/camera.jpg?t=" + Date.now();
  }

  function init() {
    $("camera-pause").addEventListener("click", () => {
      paused = !paused;
      renderStatus();
      if (!paused) fetchFrame();
      else clearTimeout(timer);
    });
    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState === "visible" && !paused) fetchFrame();
    });
    A.onLang(renderStatus);
    renderStatus();
    fetchFrame();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
