    // The built-in queue pages' script, shared by every language: page_templates puts it in place
    // of their `include queue-page.js` comment. Without it the page still works: the Refresh
    // header reloads it. With it, the page asks for itself in the background instead and updates
    // in place, so that the tab can show the visitor's turn (title, notification, sound) while it
    // is hidden, and a screen reader hears the position without a reload.
    (function () {
      "use strict";
      var main = document.getElementById("queue");
      var countdown = document.getElementById("countdown");
      if (!main || !countdown || !window.fetch || !window.DOMParser) { return; }
      var text = main.dataset;
      var state = document.getElementById("state");
      var announcer = document.getElementById("announce");
      var alerter = document.getElementById("alert");
      var turn = document.getElementById("turn");
      var notify = document.getElementById("notify");
      var updated = document.getElementById("updated");
      var bar = document.querySelector(".countdown-bar");
      // A screen reader hears a changed position or wait at most this often.
      var ANNOUNCE_EVERY_MS = 60000;
      var NOTIFY_KEY = "waitroom-notify";
      var interval = Math.max(1, parseInt(countdown.textContent, 10) || 20);
      var deadline = 0;
      var timer = 0;  // the countdown's display
      var next = 0;   // the next check-in
      var said = summary(document);
      var saidAt = Date.now();
      var pending = 0;

      // The position and the wait in words, as the stats show them.
      function summary(doc) {
        var parts = [];
        var stats = doc.querySelectorAll("#status .stat");
        for (var i = 0; i < stats.length; i++) {
          var dt = stats[i].querySelector("dt");
          var dd = stats[i].querySelector("dd");
          if (dt && dd) { parts.push(dt.textContent.trim() + ": " + dd.textContent.trim() + "."); }
        }
        return parts.join(" ");
      }

      function say() {
        pending = 0;
        var now = summary(document);
        if (now === said) { return; }
        said = now;
        saidAt = Date.now();
        announcer.textContent = now;
      }

      // Throttled: a change within ANNOUNCE_EVERY_MS of the last announcement waits for its end,
      // and only the newest values are said then.
      function announceLater() {
        if (pending) { return; }
        var wait = saidAt + ANNOUNCE_EVERY_MS - Date.now();
        if (wait <= 0) { say(); return; }
        pending = setTimeout(say, wait);
      }

      function restartBar(seconds) {
        if (!bar) { return; }
        var fresh = bar.cloneNode(false);
        fresh.style.animationDuration = seconds + "s";
        bar.parentNode.replaceChild(fresh, bar);
        bar = fresh;
      }

      function show() {
        countdown.textContent = String(Math.max(0, Math.ceil((deadline - Date.now()) / 1000)));
      }

      // The next check-in after `seconds`, as the Refresh header asked. Set from the answer's
      // callback, not from a timer's: a chain of timers in a hidden tab is throttled to about one
      // a minute, which would stretch the refresh past the visitor's place in the queue. The
      // countdown on display only follows the deadline.
      function schedule(seconds) {
        interval = Math.max(1, seconds);
        deadline = Date.now() + interval * 1000;
        show();
        restartBar(interval);
        clearInterval(timer);
        timer = setInterval(show, 1000);
        clearTimeout(next);
        next = setTimeout(poll, interval * 1000);
      }

      function update(doc, refresh) {
        var next = doc.getElementById("state");
        if (next && next.innerHTML !== state.innerHTML) { state.innerHTML = next.innerHTML; }
        var nextUpdated = doc.getElementById("updated");
        if (nextUpdated && updated) { updated.innerHTML = nextUpdated.innerHTML; }
        if (doc.title) { document.title = doc.title; }
        announceLater();
        schedule(refresh > 0 ? refresh : interval);
      }

      function beep() {
        var Ctx = window.AudioContext || window.webkitAudioContext;
        if (!Ctx) { return; }
        try {
          var ctx = new Ctx();
          var gain = ctx.createGain();
          gain.gain.setValueAtTime(0.0001, ctx.currentTime);
          gain.gain.exponentialRampToValueAtTime(0.2, ctx.currentTime + 0.02);
          gain.gain.exponentialRampToValueAtTime(0.0001, ctx.currentTime + 0.6);
          gain.connect(ctx.destination);
          [660, 880].forEach(function (hz, i) {
            var tone = ctx.createOscillator();
            tone.frequency.value = hz;
            tone.connect(gain);
            tone.start(ctx.currentTime + i * 0.18);
            tone.stop(ctx.currentTime + i * 0.18 + 0.3);
          });
        } catch (e) { /* a browser that will not play without a gesture stays silent */ }
      }

      // The page the visitor asked for, as a GET (never a resubmitted form).
      function enter() { window.location.replace(window.location.href); }

      // The visitor asked, in this tab, to be told of their turn.
      function askedForNotice() {
        try { return sessionStorage.getItem(NOTIFY_KEY) === "1"; } catch (e) { return false; }
      }

      // The check-in of the queue page's script: the gateway answers an admission itself (204 and
      // the cookie), so the origin sees only the page load that follows.
      function checkIn() {
        return fetch(window.location.href, {
          cache: "no-store", credentials: "same-origin",
          headers: { Accept: "text/html", "Waitroom-Check-In": "1" }
        });
      }

      // Admitted while the tab is hidden: check in again every interval (each one renews the
      // session, as a page view would) until the visitor looks at the tab, for ten minutes at
      // most: a tab left alone then lets its place go, as a visitor who left would.
      var keepUntil = 0;
      function keepSession() {
        if (!keepUntil) { keepUntil = Date.now() + 600000; }
        if (Date.now() > keepUntil) { return; }
        next = setTimeout(function () {
          checkIn().then(function (res) {
            if (res.status === 204) { keepSession(); } else { enter(); }
          }).catch(keepSession);
        }, interval * 1000);
      }

      // The visitor's turn: the check-in just made let them in (the gateway set the cookie). The
      // tab says so at once; the origin's page is loaded when the visitor looks at the tab.
      function admitted() {
        clearInterval(timer);
        clearTimeout(next);
        clearTimeout(pending);
        document.title = text.titleTurn;
        alerter.textContent = text.turn;
        turn.hidden = false;
        document.querySelector(".refresh").hidden = true;
        if (notify) { notify.hidden = true; }
        if (askedForNotice() && window.Notification && Notification.permission === "granted") {
          try {
            var n = new Notification(text.titleTurn, { body: text.turn, tag: "waitroom-turn" });
            n.onclick = function () { window.focus(); enter(); };
          } catch (e) { /* e.g. a browser that allows notifications only from a service worker */ }
        }
        if (text.sound === "on") { beep(); }
        if (document.visibilityState === "visible") { enter(); return; }
        keepSession();
        document.addEventListener("visibilitychange", function () {
          if (document.visibilityState === "visible") { clearTimeout(next); enter(); }
        });
      }

      function poll() {
        checkIn().then(function (res) {
          if (res.status === 204) { return { res: res, doc: null, refresh: 0, turn: true }; }
          var refresh = parseInt(res.headers.get("Refresh") || "", 10);
          var type = res.headers.get("Content-Type") || "";
          if (type.indexOf("text/html") !== 0) { return { res: res, doc: null, refresh: refresh }; }
          return res.text().then(function (body) {
            var doc = new DOMParser().parseFromString(body, "text/html");
            return { res: res, doc: doc, refresh: refresh };
          });
        }).then(function (r) {
          // Only the gateway's 204 says it is the visitor's turn.
          if (r.turn) { return admitted(); }
          var page = r.doc && r.doc.getElementById("queue");
          if (page && page.dataset.waitroom === "queue") { return update(r.doc, r.refresh); }
          // Anything else (an event's own page, the reject page, a page the gateway passed
          // through, an error) is shown as a reload would show it.
          enter();
        }).catch(function () { schedule(interval); });
      }

      if (notify && window.Notification && Notification.permission !== "denied") {
        notify.hidden = false;
        if (askedForNotice() && Notification.permission === "granted") {
          notify.textContent = text.notifyOn;
          notify.disabled = true;
        }
        notify.addEventListener("click", function () {
          var answered = false;
          var done = function (permission) {
            if (answered) { return; }
            answered = true;
            if (permission !== "granted") {
              notify.textContent = text.notifyBlocked;
              notify.disabled = true;
              return;
            }
            try { sessionStorage.setItem(NOTIFY_KEY, "1"); } catch (e) { /* private mode */ }
            notify.textContent = text.notifyOn;
            notify.disabled = true;
          };
          var asking = Notification.requestPermission(done);
          if (asking && asking.then) { asking.then(done); }
        });
      }

      // From here the script asks for the page itself: stop the declarative refresh (the Refresh
      // header). Browsers that do not cancel it with stop() reload as without script.
      var start = function () { window.stop(); schedule(interval); };
      if (document.readyState === "complete") { start(); } else { window.addEventListener("load", start); }
    })();
