// Croupier pit pages: live updates by Server-Sent Events, and the console's forms through the command API.
// Hand-written, no dependencies. Every element the server pushes ("frag" events) replaces the element of the
// same id (or is appended to its parent); "status" says whether the projection is ready.
(function () {
  "use strict";
  var banner = document.getElementById("live-banner");
  var stream = document.body.dataset.stream;
  var lost = false, ended = false, notReady = document.body.dataset.ready === "false";
  var es = null;

  function showBanner() {
    if (ended) {
      var back = "/login?next=" + encodeURIComponent(location.pathname + location.search);
      banner.textContent = "Your session has ended (the server restarted, or you logged out): ";
      var a = document.createElement("a");
      a.href = back;
      a.id = "login-again";
      a.textContent = "log in again";
      banner.appendChild(a);
    } else if (lost) {
      banner.textContent = "Live updates lost: the server cannot be reached. Reconnecting by itself...";
    } else if (notReady) {
      banner.textContent = "The projection is not ready (restoring, or the broker cannot be reached): " +
        "what you see may be out of date. The page recovers by itself.";
    }
    banner.hidden = !(ended || lost || notReady);
    document.body.dataset.live = ended ? "ended" : lost ? "lost" : (notReady ? "not-ready" : "ok");
  }

  // The stream refused (not a network error: EventSource gives up then): is the session gone, or the
  // server back? Ask for the page itself, without following a redirect to the login page.
  function probe() {
    fetch(location.pathname + location.search, {redirect: "manual", credentials: "same-origin", cache: "no-store"})
      .then(function (r) {
        if (r.type === "opaqueredirect" || r.status === 401 || r.status === 403) {
          ended = true;
          showBanner();
        } else {
          connect();
        }
      })
      .catch(function () { setTimeout(probe, 2000); });
  }

  function autofill() {
    var round = document.querySelector("[data-round-id]");
    if (!round) return;
    var d = round.dataset;
    var values = {shoe: d.shoeId, round: d.roundId, card_number: d.nextCard,
                  // chemin de fer and a curator table (frag_round_game_attrs.html): who a command is sent as
                  banker: d.banker, curator: d.curator, due: d.due, pass_order: d.passOrder,
                  option_hand: d.optionHand, option_seat: d.optionSeat, option_player: d.optionPlayer};
    document.querySelectorAll("[data-auto]").forEach(function (input) {
      if (input.dataset.edited !== "1") input.value = values[input.dataset.auto] || "";
    });
  }

  function apply(f) {
    var t = document.createElement("template");
    t.innerHTML = f.html.trim();
    var node = t.content.firstElementChild;
    if (!node) return;
    var el = document.getElementById(f.id);
    if (el) {
      el.replaceWith(node);
    } else if (f.parent) {
      var parent = document.getElementById(f.parent);
      if (parent) parent.appendChild(node);
      var empty = document.getElementById("no-tables");
      if (empty) empty.remove();
    }
  }

  // ---- surveillance: the alerts 20 at a time, newest first, filtered by table and player -------------
  // The rows are pushed whole by the live feed; the filter and the page stay as the watcher set them.
  var ALERTS_PER_PAGE = 20, alertsPage = 0;
  var alertsFilter = document.getElementById("alerts-filter");
  // What the watcher typed picks one table (or player) when it names one of the rows' exactly, so "T1" is
  // T1 and not T10 too; else every row whose id starts with it (a table) or holds it (a player).
  function alertMatcher(rows, key, typed, prefix) {
    if (!typed) return function () { return true; };
    var exact = rows.some(function (r) { return r.dataset[key].toLowerCase() === typed; });
    return function (r) {
      var v = r.dataset[key].toLowerCase();
      return exact ? v === typed : (prefix ? v.indexOf(typed) === 0 : v.indexOf(typed) >= 0);
    };
  }
  function pageAlerts() {
    if (!alertsFilter) return;
    var table = document.getElementById("alerts-filter-table").value.trim().toLowerCase();
    var player = document.getElementById("alerts-filter-player").value.trim().toLowerCase();
    var rows = Array.prototype.slice.call(document.querySelectorAll("#alerts-list tr.alert"));
    var byTable = alertMatcher(rows, "table", table, true), byPlayer = alertMatcher(rows, "player", player, false);
    var match = rows.filter(function (r) { return byTable(r) && byPlayer(r); });
    var pages = Math.max(1, Math.ceil(match.length / ALERTS_PER_PAGE));
    alertsPage = Math.min(alertsPage, pages - 1);
    var from = alertsPage * ALERTS_PER_PAGE, to = Math.min(from + ALERTS_PER_PAGE, match.length);
    rows.forEach(function (r) { r.hidden = true; });
    match.slice(from, to).forEach(function (r) { r.hidden = false; });
    var filtered = table || player;
    document.getElementById("alerts-page").textContent = match.length
      ? "alerts " + (from + 1) + "-" + to + " of " + match.length + (filtered ? " matching" : "") +
        " (page " + (alertsPage + 1) + " of " + pages + ")"
      : (rows.length ? "no alert matches" : "no alert");
    document.getElementById("alerts-newer").disabled = alertsPage === 0;
    document.getElementById("alerts-older").disabled = alertsPage >= pages - 1;
  }
  if (alertsFilter) {
    alertsFilter.addEventListener("submit", function (ev) { ev.preventDefault(); });
    alertsFilter.addEventListener("input", function () { alertsPage = 0; pageAlerts(); });
    document.getElementById("alerts-newer").addEventListener("click", function () { alertsPage -= 1; pageAlerts(); });
    document.getElementById("alerts-older").addEventListener("click", function () { alertsPage += 1; pageAlerts(); });
    pageAlerts();
  }

  function connect() {
    es = new EventSource(stream);
    es.addEventListener("open", function () { lost = false; showBanner(); });
    es.addEventListener("error", function () {
      lost = true;
      showBanner();
      if (es.readyState === EventSource.CLOSED) {  // refused (401, 403...): it will not retry by itself
        es.close();
        setTimeout(probe, 1000);
      }
    });
    es.addEventListener("status", function (e) {
      lost = false;
      notReady = !JSON.parse(e.data).ready;
      showBanner();
    });
    es.addEventListener("frag", function (e) {
      apply(JSON.parse(e.data));
      pageAlerts();
      autofill();
      steps();
      document.body.dataset.frames = String(Number(document.body.dataset.frames || 0) + 1);
    });
  }
  if (stream) connect();

  // ---- the console's forms -------------------------------------------------------------------------
  // how long the console waits for the command API's answer (its own wait, 10 s by default, and a margin)
  var actionsPanel = document.getElementById("actions");
  var ANSWER_WITHIN_MS = Number(actionsPanel && actionsPanel.dataset.answerWithinMs) || 15000;
  function requestId() {
    if (window.crypto && crypto.getRandomValues) {
      var b = new Uint8Array(12);
      crypto.getRandomValues(b);
      return "web-" + Array.prototype.map.call(b, function (x) { return ("0" + x.toString(16)).slice(-2); }).join("");
    }
    return "web-" + Date.now().toString(16) + "-" + Math.floor(Math.random() * 1e9).toString(16);
  }

  // Only the forms valid now (the round panel's data-valid, from the server), the next step's focused
  // unless the dealer is typing in a field of a form still shown.
  function visible(el) { return el && !el.closest("form.act[hidden]"); }
  function typing() {
    var a = document.activeElement;
    return a && /^(INPUT|SELECT|TEXTAREA)$/.test(a.tagName) && visible(a) && a.type !== "hidden";
  }
  // a field the dealer fills: not hidden, not in a part hidden for this game (the chemin de fer bank fields)
  function fillable(el) { return el.type !== "hidden" && el.type !== "checkbox" && !el.closest("[hidden]"); }
  function focusForm(form) {
    var field = Array.prototype.find.call(form.querySelectorAll("input:not([type=hidden]), select"),
      function (el) { return fillable(el) && !el.value && !el.dataset.auto; });
    (field || form.querySelector("button[type=submit]")).focus();
  }
  var shownNext = null, shownRound = null;
  // A form's answer is about the step it was sent at: once the table has moved on it is stale, so it is
  // emptied when its form is offered again (the Open round form between the rounds) or, for a form offered
  // all along (the seating), when another round or shoe comes up. A request still waiting keeps its line;
  // "Last:" above the forms keeps the last answer whatever the form.
  function clearAnswer(f) {
    var out = f.querySelector("output.answer");
    if (out && !/\bpending\b/.test(out.className)) { out.className = "answer"; out.textContent = ""; }
  }
  function steps() {
    var round = document.querySelector("[data-valid]");
    var forms = document.querySelectorAll("form.act");
    if (!round || !forms.length) return;
    var valid = round.dataset.valid.split(" ").filter(Boolean), next = round.dataset.next;
    var myPlayers = ((document.getElementById("my-bets") || {dataset: {}}).dataset.players || "").split(" ");
    var where = (round.dataset.shoeId || "") + "/" + (round.dataset.roundId || "");
    var movedOn = shownRound !== null && where !== shownRound;
    shownRound = where;
    forms.forEach(function (f) {
      var on = valid.indexOf(f.dataset.action) >= 0;
      // a terminal decides an option only for a player of its own (the Dominant Player, or the Banker)
      if (f.dataset.action === "decide_option" && myPlayers.indexOf(round.dataset.optionPlayer) < 0) on = false;
      if (on && (f.hidden || movedOn)) clearAnswer(f);
      f.hidden = !on;
      f.classList.toggle("next", f.dataset.action === next);
    });
    document.querySelectorAll(".chem-only").forEach(function (el) {
      el.hidden = round.dataset.game !== "chemin_de_fer";
    });
    var phase = document.getElementById("phase");
    if (phase) phase.textContent = "Now: " + round.dataset.phase + (next ? "" : " (nothing to do: wait)");
    var nf = next && document.getElementById("form-" + next);
    if (nf && !nf.hidden && next !== shownNext && !typing()) focusForm(nf);
    shownNext = next;
  }

  // Keyboard shortcuts of the dealer's steps (a key pressed outside a field): the form's data-key.
  document.addEventListener("keydown", function (ev) {
    if (ev.key === "Escape" && typing()) { document.activeElement.blur(); return; }  // out of a field: keys again
    if (ev.ctrlKey || ev.metaKey || ev.altKey || typing()) return;
    var form = document.querySelector('form.act[data-key="' + (ev.key || "").toLowerCase() + '"]');
    if (!form || form.hidden) return;
    ev.preventDefault();
    var needs = Array.prototype.some.call(form.querySelectorAll("input:not([type=hidden])"),
      function (el) { return fillable(el) && !el.dataset.auto && !el.value; });
    if (needs) focusForm(form);  // a card to enter: the field, then Enter sends it
    else if (form.requestSubmit) form.requestSubmit();
    else form.querySelector("button[type=submit]").click();
  });

  // The dealer is remembered for the browser session (this tab and those it opens).
  var actorField = document.getElementById("actor");
  if (actorField) {
    try { actorField.value = sessionStorage.getItem("croupier.actor") || ""; } catch (e) { /* storage off */ }
    actorField.addEventListener("change", function () {
      try { sessionStorage.setItem("croupier.actor", actorField.value.trim()); } catch (e) { /* storage off */ }
    });
    // Enter in the dealer's field: on to the next step (the keyboard alone runs the console)
    actorField.addEventListener("keydown", function (ev) {
      if (ev.key !== "Enter" || !actorField.value.trim()) return;
      ev.preventDefault();
      actorField.blur();  // its change event stores it
      var round = document.querySelector("[data-valid]");
      var nf = round && round.dataset.next && document.getElementById("form-" + round.dataset.next);
      if (nf && !nf.hidden) focusForm(nf);
    });
    // not known yet: the dealer says who acts before anything else (the first step's focus waits for it)
    if (!actorField.value) actorField.focus();
  }

  function body(form) {
    var out = {};
    if (form.dataset.console === "true") {
      var actor = document.getElementById("actor");
      if (actor && actor.value.trim()) out.actor = actor.value.trim();
    }
    form.querySelectorAll("input[name], select[name]").forEach(function (el) {
      var kind = el.dataset.type;
      if (kind === "bool") { out[el.name] = el.checked; return; }
      if (kind === "yes") { out[el.name] = el.value === "true"; return; }
      var v = el.value.trim();
      if (v === "") return; // left out: the server says whether it is required
      var dot = el.name.indexOf(".");  // "chemin.option_seconds": a field of a nested object
      if (dot > 0) {
        var outer = el.name.slice(0, dot);
        out[outer] = out[outer] || {};
        out[outer][el.name.slice(dot + 1)] = kind === "int" && /^\d+$/.test(v) ? Number(v) : v;
        return;
      }
      if (kind === "int") { out[el.name] = /^-?\d+$/.test(v) ? Number(v) : v; return; }
      if (kind === "list") { out[el.name] = v.split(/[\s,]+/).filter(Boolean); return; }
      out[el.name] = v;
    });
    return out;
  }

  // Cents as the pages show them: 123456 -> "$1,234.56".
  function dollars(cents) {
    var sign = cents < 0 ? "-" : "", c = Math.abs(cents);
    var whole = String(Math.floor(c / 100)).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
    return sign + "$" + whole + "." + ("0" + (c % 100)).slice(-2);
  }

  // One event in a person's words where it carries money (a bet, a refusal), else its kind.
  function said(e) {
    var p = e.payload;
    if (p.type === "bet_placed") return "bet placed: " + dollars(p.amount_cents) + " on " + p.wager;
    if (p.type === "bet_withdrawn") return "bet withdrawn";
    return p.type;
  }

  function words(status, data) {
    if (status === 200 && data && data.status === "accepted") {
      var kinds = (data.events || []).map(said).join(", ");
      var ids = ["shoe_id", "round_id", "bet_id"].filter(function (k) { return data[k]; })
        .map(function (k) { return k + " " + data[k]; }).join(", ");
      return ["ok", "accepted: " + kinds + (ids ? " (" + ids + ")" : "")];
    }
    if (data && data.status === "rejected") {
      return ["bad", "rejected: " + data.reason + " - " + data.detail];
    }
    var d = data && data.detail;
    if (Array.isArray(d)) { // 422 from request validation: one line per field
      return ["bad", "invalid input: " + d.map(function (x) {
        var loc = (x.loc || []).filter(function (p) { return p !== "body"; }).join(".");
        return (loc || "body") + ": " + x.msg;
      }).join("; ")];
    }
    if (d && typeof d === "object" && d.reason === "broker_unavailable") {
      return ["bad", "Not sent: the broker cannot be reached. Nothing will be sent later; press again to " +
        "retry once it is back (the same request: it cannot be recorded twice)."];
    }
    if (d && typeof d === "object" && (status === 504 || d.reason === "reader_failed")) {
      return ["bad", "No answer in time: the command may still be decided. Look at the round above, or press " +
        "again to ask (the same request: it cannot be recorded twice)."];
    }
    if (d && typeof d === "object") {
      return ["bad", (status === 422 ? "invalid input: " : "refused (" + status + "): ") + (d.reason || "") +
        (d.field ? " [" + d.field + "]" : "") + (d.detail ? " - " + d.detail : "")];
    }
    return ["bad", "refused (" + status + "): " + (d || "no answer")];
  }

  document.querySelectorAll("form.act").forEach(function (form) {
    form.querySelectorAll("[data-auto]").forEach(function (el) {
      el.addEventListener("input", function () { el.dataset.edited = "1"; });
    });
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      var out = form.querySelector("output.answer");
      if (form.dataset.console === "true" && actorField && !actorField.value.trim()) {
        out.className = "answer bad";
        out.textContent = "Who is acting? Enter your employee id (Dealer) first.";
        actorField.focus();
        return;
      }
      var missing = form.querySelector("input[data-required]");
      if (missing && !missing.value.trim()) {
        out.className = "answer bad";
        out.textContent = "Give a reason: it is recorded with the action.";
        missing.focus();
        return;
      }
      if (form.dataset.confirm && !window.confirm(form.dataset.confirm + "\nReason: " + missing.value.trim())) {
        out.className = "answer";
        out.textContent = "Not sent.";
        return;
      }
      var sent = JSON.stringify(body(form));
      // a retry of an unanswered request (503, 504, no answer) repeats its request id: never a second command
      var key = (form.dataset.retryBody === sent && form.dataset.retryKey) || requestId();
      form.dataset.retryBody = sent;
      form.dataset.retryKey = key;
      out.className = "answer pending";
      out.textContent = "sending...";
      var ctl = window.AbortController ? new AbortController() : null;
      var timer = ctl && setTimeout(function () { ctl.abort(); }, ANSWER_WITHIN_MS);
      var retry = false;
      fetch(form.dataset.path, {
        method: "POST", credentials: "same-origin", signal: ctl ? ctl.signal : undefined,
        headers: {"Content-Type": "application/json", "Idempotency-Key": key},
        body: sent
      }).then(function (r) {
        retry = r.status === 503 || r.status === 504 || r.status === 500;
        return r.text().then(function (t) {
          var data = null;
          try { data = JSON.parse(t); } catch (e) { data = {detail: t.slice(0, 300)}; }
          return words(r.status, data);
        });
      }).catch(function (e) {
        retry = true;
        if (e && e.name === "AbortError") {
          return ["bad", "No answer from the pit server within " + ANSWER_WITHIN_MS / 1000 + " s: the command " +
            "may still be decided. Press again to ask (the same request: it cannot be recorded twice)."];
        }
        return ["bad", "The pit server cannot be reached (" + e + "): press again to retry."];
      }).then(function (w) {
        if (timer) clearTimeout(timer);
        if (!retry) delete form.dataset.retryKey;
        out.className = "answer " + w[0];
        out.textContent = w[1];
        var last = document.getElementById("last-answer");  // still shown when the form is gone (table moved on)
        if (last) {
          last.className = "answer " + w[0];
          last.textContent = form.querySelector("legend").firstChild.textContent.trim() + ": " + w[1];
        }
        if (w[0] === "ok") form.querySelectorAll("[data-auto]").forEach(function (el) { delete el.dataset.edited; });
        autofill();
        if (w[0] === "ok") {  // the answer's events may already have moved the table on: the next step
          form.querySelectorAll("input[name]:not([type=hidden]):not([data-auto])").forEach(function (el) {
            if (el.name === "card" || el.name === "reason" || el.name === "burned" || el.name === "exposed") el.value = "";
          });
          // done with this form: on to the next step (a field left focused would keep the shortcuts off)
          if (form.contains(document.activeElement)) document.activeElement.blur();
          shownNext = null;
          steps();
          if (form.dataset.action === "place_bet") { myBusy = true; refreshMine(); }
        }
      });
    });
  });
  autofill();
  steps();

  // A chemin de fer option's countdown to its deadline (the log's time; this browser's clock). Whole seconds
  // rounded up: "deadline passed" only once it has (rounded, it showed up to half a second early, and the
  // dealer's expiry sent then was refused option_not_expired).
  setInterval(function () {
    document.querySelectorAll(".countdown[data-deadline]").forEach(function (el) {
      var left = Math.ceil((Date.parse(el.dataset.deadline) - Date.now()) / 1000);
      el.textContent = left > 0 ? "(" + left + " s left)" : "(deadline passed)";
    });
  }, 500);

  // ---- a betting terminal: its players' bets this round, their results, a withdraw button per bet ----------
  var mine = document.getElementById("my-bets");
  var myRound = "", myStatus = "", myBusy = false;
  function cell(row, text, cls) {
    var td = document.createElement("td");
    td.textContent = text;
    if (cls) td.className = cls;
    row.appendChild(td);
    return td;
  }
  function showMine(data, betting) {
    var table = document.getElementById("my-bets-table"), body = table.querySelector("tbody");
    body.textContent = "";
    (data.bets || []).forEach(function (b) {
      var tr = document.createElement("tr");
      tr.className = "my-bet";
      tr.dataset.betId = b.bet_id;
      cell(tr, b.player_id); cell(tr, String(b.seat)); cell(tr, b.wager); cell(tr, dollars(b.amount_cents));
      if (b.status === "settled") {
        cell(tr, b.result + (b.category && b.category !== b.result ? " (" + b.category.replace(/_/g, " ") + ")" : ""),
             "settled-" + b.result);
        cell(tr, dollars(b.payout));
      } else {
        cell(tr, b.status === "withdrawn" ? "withdrawn" : "in play"); cell(tr, "");
      }
      var act = cell(tr, "");
      if (b.status === "placed" && betting) {
        var btn = document.createElement("button");
        btn.type = "button";
        btn.className = "withdraw";
        btn.textContent = "Withdraw";
        btn.addEventListener("click", function () { withdraw(b, btn); });
        act.appendChild(btn);
      }
      body.appendChild(tr);
    });
    table.hidden = !(data.bets || []).length;
    document.getElementById("my-bets-none").hidden = !table.hidden;
  }
  function refreshMine() {
    var round = document.querySelector("[data-round-id]");
    if (!mine || !round || !round.dataset.roundId) return;
    var rid = round.dataset.roundId, status = round.dataset.status;
    if (rid === myRound && status === myStatus && !myBusy) return;
    myRound = rid; myStatus = status; myBusy = false;
    fetch(mine.dataset.base + "/rounds/" + encodeURIComponent(rid) + "/mine",
          {credentials: "same-origin", cache: "no-store"})
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (data) { if (data && rid === myRound) showMine(data, status === "betting"); })
      .catch(function () { myStatus = ""; });  // asked again at the next live frame
  }
  function withdraw(b, btn) {
    var out = document.getElementById("my-bets-answer");
    btn.disabled = true;
    out.className = "answer pending";
    out.textContent = "withdrawing...";
    var key = btn.dataset.key || (btn.dataset.key = requestId());
    fetch(mine.dataset.base + "/bets/withdraw", {
      method: "POST", credentials: "same-origin",
      headers: {"Content-Type": "application/json", "Idempotency-Key": key},
      body: JSON.stringify({round_id: myRound, bet_id: b.bet_id, player_id: b.player_id})
    }).then(function (r) {
      return r.text().then(function (t) {
        var data = null;
        try { data = JSON.parse(t); } catch (e) { data = {detail: t.slice(0, 300)}; }
        return words(r.status, data);
      });
    }).catch(function (e) { return ["bad", "The pit server cannot be reached (" + e + "): press again to retry."]; })
      .then(function (w) {
        out.className = "answer " + w[0];
        out.textContent = w[0] === "ok" ? "Withdrawn: " + dollars(b.amount_cents) + " on " + b.wager : w[1];
        btn.disabled = false;
        myBusy = true;
        refreshMine();
      });
  }
  if (mine) {
    refreshMine();
    setInterval(refreshMine, 1000);  // cheap: asks only when the round or its status changed
  }
})();
