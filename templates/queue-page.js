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

      // Proof of work on joining (a room with `challenge`): the visitor joins the line with a
      // solution, a string whose SHA-256 after the visitor's seed begins with `difficulty` zero
      // bits. The page is the same for every visitor; the seed, the visitor's own, comes in the
      // cookie the page names (data-challenge), read once and then dropped so that it is not sent
      // on. Web Crypto hashes where the page is a secure context (https, localhost); elsewhere
      // the browser has no crypto.subtle, and sha256() below does the same work.
      function takeCookie(name) {
        if (!name) { return ""; }
        var found = "";
        document.cookie.split(";").forEach(function (pair) {
          var at = pair.indexOf("=");
          if (at > 0 && pair.slice(0, at).trim() === name) { found = pair.slice(at + 1).trim(); }
        });
        if (found) { document.cookie = name + "=; Max-Age=0; Path=/"; }
        return /^[A-Za-z0-9_-]{22}$/.test(found) ? found : "";
      }
      var seed = takeCookie(text.challenge);
      var difficulty = parseInt(text.difficulty || "", 10) || 0;

      function zeroBits(bytes) {
        var bits = 0;
        for (var i = 0; i < bytes.length; i++) {
          if (bytes[i] === 0) { bits += 8; continue; }
          return bits + Math.clz32(bytes[i]) - 24;
        }
        return bits;
      }

      // SHA-256 of an ASCII string (FIPS 180-4), for pages without Web Crypto.
      var K = [];
      (function () {
        var n = 2, found = 0;
        while (found < 64) {
          var prime = true;
          for (var d = 2; d * d <= n; d++) { if (n % d === 0) { prime = false; break; } }
          if (prime) { K[found++] = (Math.pow(n, 1 / 3) % 1) * 4294967296 | 0; }
          n++;
        }
      })();
      function sha256(ascii) {
        var H = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];
        var len = ascii.length, blocks = ((len + 8) >> 6) + 1, W = new Array(64), i, t;
        var M = new Array(blocks * 16).fill(0);
        for (i = 0; i < len; i++) { M[i >> 2] |= ascii.charCodeAt(i) << (24 - (i % 4) * 8); }
        M[len >> 2] |= 0x80 << (24 - (len % 4) * 8);
        M[blocks * 16 - 1] = len * 8;
        for (var b = 0; b < blocks; b++) {
          var a = H[0], c1 = H[1], c2 = H[2], c3 = H[3], e = H[4], f = H[5], g = H[6], h = H[7];
          for (t = 0; t < 64; t++) {
            if (t < 16) {
              W[t] = M[b * 16 + t] | 0;
            } else {
              var x = W[t - 15], y = W[t - 2];
              W[t] = (((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3)) +
                     (((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10)) +
                     W[t - 7] + W[t - 16] | 0;
            }
            var s1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
            var t1 = h + s1 + ((e & f) ^ (~e & g)) + K[t] + W[t] | 0;
            var s0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
            var t2 = s0 + ((a & c1) ^ (a & c2) ^ (c1 & c2)) | 0;
            h = g; g = f; f = e; e = c3 + t1 | 0; c3 = c2; c2 = c1; c1 = a; a = t1 + t2 | 0;
          }
          H[0] = H[0] + a | 0; H[1] = H[1] + c1 | 0; H[2] = H[2] + c2 | 0; H[3] = H[3] + c3 | 0;
          H[4] = H[4] + e | 0; H[5] = H[5] + f | 0; H[6] = H[6] + g | 0; H[7] = H[7] + h | 0;
        }
        var out = new Uint8Array(32);
        for (i = 0; i < 32; i++) { out[i] = (H[i >> 2] >>> (24 - (i % 4) * 8)) & 255; }
        return out;
      }

      // Runs `fn` as a task of its own: the page stays responsive (the notify button, a screen
      // reader, the tab's title) while it works. A message, not setTimeout, which browsers clamp
      // to 4 ms once nested.
      var soon = (function () {
        if (!window.MessageChannel) { return function (fn) { setTimeout(fn, 0); }; }
        var channel = new MessageChannel(), queue = [];
        channel.port1.onmessage = function () { queue.shift()(); };
        return function (fn) { queue.push(fn); channel.port2.postMessage(0); };
      })();

      // The first candidate, in base 36, that solves the challenge. Web Crypto answers each
      // digest through a promise, so candidates go in batches; the script's own hash in slices of
      // a few milliseconds.
      function solve() {
        var subtle = window.crypto && window.crypto.subtle;
        var encoder = window.TextEncoder ? new TextEncoder() : null;
        var BATCH = 256;
        var from = 0;
        return new Promise(function (resolve) {
          function plain() {
            for (var n = from; n < from + 4096; n++) {
              if (zeroBits(sha256(seed + n.toString(36))) >= difficulty) { return resolve(n.toString(36)); }
            }
            from += 4096;
            soon(plain);
          }
          function batch() {
            var tries = [];
            for (var n = from; n < from + BATCH; n++) {
              tries.push(subtle.digest("SHA-256", encoder.encode(seed + n.toString(36))));
            }
            Promise.all(tries).then(function (digests) {
              for (var i = 0; i < digests.length; i++) {
                if (zeroBits(new Uint8Array(digests[i])) >= difficulty) {
                  return resolve((from + i).toString(36));
                }
              }
              from += BATCH;
              soon(batch);
            }, function () { subtle = null; plain(); });
          }
          if (subtle && encoder) { batch(); } else { plain(); }
        });
      }

      // Solves the challenge and sends the solution: the answer is the visitor's place in the
      // line (the page, loaded next) or, when the room has room, its turn (204).
      // An answer that still asks a challenge (cookies refused, or the challenge went stale while
      // it was solved), an error, or no answer within a minute: the page is loaded again, no
      // sooner than it would reload without its script.
      function join() {
        var later = function () { setTimeout(enter, interval * 1000); };
        var guard = 0;
        solve().then(function (solution) {
          guard = setTimeout(enter, 60000);
          return fetch(window.location.href, {
            cache: "no-store", credentials: "same-origin",
            headers: { Accept: "text/html", "Waitroom-Check-In": "1", "Waitroom-Solution": solution }
          });
        }).then(function (res) {
          clearTimeout(guard);
          if (res.status === 204) { return admitted(); }
          return res.text().then(function (body) {
            var page = new DOMParser().parseFromString(body, "text/html").getElementById("queue");
            if (page && page.dataset.challenge) { later(); } else { enter(); }
          });
        }).catch(function () { clearTimeout(guard); later(); });
      }

      // From here the script asks for the page itself: stop the declarative refresh (the Refresh
      // header). Browsers that do not cancel it with stop() reload as without script.
      var start = function () { window.stop(); if (seed && difficulty > 0) { join(); } else { schedule(interval); } };
      if (document.readyState === "complete") { start(); } else { window.addEventListener("load", start); }
    })();
