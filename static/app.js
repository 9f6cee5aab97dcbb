// Progressive enhancement only: without this file every page still works (the job page
// reloads itself through <meta http-equiv="refresh">).
(function () {
  "use strict";
  // Job page: poll the JSON endpoint instead of reloading the whole page.
  var job = document.getElementById("job");
  if (job && !job.hasAttribute("data-terminal")) {
    var meta = document.querySelector('meta[http-equiv="refresh"]');
    if (meta) meta.remove();
    var id = job.getAttribute("data-job");
    var log = document.getElementById("job-log");
    // The log is polled by position: each poll asks only for what was appended since the
    // last one, and the page keeps at most MAX characters (the head, a marker, the tail).
    var MAX = 256 * 1024, HEAD = 16 * 1024;
    var end = log ? log.getAttribute("data-log-end") : "0";
    var attempt = log ? log.getAttribute("data-log-attempt") : "0";
    var show = function (text) {
      if (text.length > MAX) {
        var keep = MAX - HEAD;
        text = text.slice(0, HEAD) + "\n… " + (text.length - MAX) + " characters dropped …\n" + text.slice(text.length - keep);
      }
      log.textContent = text;
      log.scrollTop = log.scrollHeight;
      var human = document.getElementById("job-log-human");
      if (human) { human.textContent = humanLog(text); human.scrollTop = human.scrollHeight; }
    };
    // The same reading of protocol frames as the server's humanLog (portal/pages_jobs.go).
    var FRAME = /^([<>]) .*@\d+:([A-Z]+):(.*)\*[0-9a-f]{8}$/;
    var humanLog = function (raw) {
      var out = [], rep = "", n = 0;
      var flush = function () { if (n > 0) { out.push("\u2190 " + n + " " + rep + " frames"); rep = ""; n = 0; } };
      raw.split("\n").forEach(function (line) {
        var m = FRAME.exec(line);
        if (!m) {
          flush();
          if (line.indexOf("< ") === 0) line = "\u2190 " + line.slice(2);
          else if (line.indexOf("> ") === 0) line = "\u2192 " + line.slice(2);
          out.push(line);
          return;
        }
        if (m[1] === "<" && (m[2] === "SAMPLE" || m[2] === "HANDSHAKE")) {
          if (rep !== m[2]) flush();
          rep = m[2]; n++;
          return;
        }
        flush();
        out.push(((m[1] === ">" ? "\u2192 " : "\u2190 ") + m[2] + " " + m[3]).trim());
      });
      flush();
      return out.join("\n");
    };
    var tick = function () {
      var url = "/jobs/" + id + ".json?after=" + encodeURIComponent(end) + "&attempt=" + encodeURIComponent(attempt);
      fetch(url, { headers: { Accept: "application/json" } })
        .then(function (r) { return r.json(); })
        .then(function (j) {
          // Done: the page (reloaded with follow=1) shows the outcome and goes on to the run.
          if (j.terminal) { window.location.replace("/jobs/" + id + "?follow=1"); return; }
          var bar = document.getElementById("job-progress");
          if (bar) bar.value = j.percent;
          var d = document.getElementById("job-detail");
          if (d) d.textContent = j.detail;
          var st = document.getElementById("job-state");
          if (st) st.textContent = j.state;
          if (log) {
            if (typeof j.log === "string") show(j.log);
            else if (j.logAppend) show(log.textContent + j.logAppend);
          }
          if (j.logEnd !== undefined) end = String(j.logEnd);
          if (j.logAttempt !== undefined) attempt = String(j.logAttempt);
          setTimeout(tick, 1000);
        })
        .catch(function () { setTimeout(tick, 3000); });
    };
    setTimeout(tick, 1000);
  }
  // Experiment page: offer only the firmware builds whose target is the chosen board class.
  var form = document.querySelector("form.rerun");
  if (form) {
    var sel = form.querySelector('select[name="firmware"]');
    var filter = function () {
      var b = form.querySelector('input[name="board"]:checked');
      var cls = b ? b.value : "";
      Array.prototype.forEach.call(sel.options, function (o) {
        var t = o.getAttribute("data-board");
        o.hidden = t !== null && t !== cls;
        if (o.hidden && o.selected) sel.value = "";
      });
    };
    form.addEventListener("change", filter);
    filter();
  }
})();
