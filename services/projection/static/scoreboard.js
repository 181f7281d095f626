// The table-side scoreboard: its board asked again every second (public, no session), replaced when it changed.
(function () {
  "use strict";
  var box = document.getElementById("scoreboard");
  if (!box) return;
  var last = box.innerHTML;
  function tick() {
    fetch(box.dataset.src, {cache: "no-store"}).then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) { if (html && html !== last) { box.innerHTML = html; last = html; } })
      .catch(function () { /* the next tick tries again */ })
      .then(function () { setTimeout(tick, 1000); });
  }
  setTimeout(tick, 1000);
})();
