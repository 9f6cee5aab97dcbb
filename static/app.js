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
    // last one. The server reads it (logtext.Human: frames condensed, the link's trouble
    // counted) and sends both texts; once the page holds more than MAX characters it asks for
    // the whole log afresh, which the server bounds to its head, every summary line and its
    // tail.
    var MAX = 256 * 1024;
    var end = log ? log.getAttribute("data-log-end") : "0";
    var attempt = log ? log.getAttribute("data-log-attempt") : "0";
    var afresh = false;
    // humanView returns the human log's element, made (with the raw log moved behind a
    // toggle, as the server renders a board's log) the first time the log holds frames.
    var humanView = function () {
      var human = document.getElementById("job-log-human");
      if (human || !log) return human;
      human = document.createElement("pre");
      human.id = "job-log-human";
      human.className = "log";
      var raw = document.createElement("details");
      raw.className = "raw-log";
      var label = document.createElement("summary");
      label.textContent = "Raw log with every protocol frame";
      raw.appendChild(label);
      log.parentNode.insertBefore(human, log);
      log.parentNode.insertBefore(raw, log);
      raw.appendChild(log);
      return human;
    };
    var show = function (raw, human, framed) {
      log.textContent = raw;
      log.scrollTop = log.scrollHeight;
      var h = framed ? humanView() : document.getElementById("job-log-human");
      if (h) { h.textContent = human; h.scrollTop = h.scrollHeight; }
      if (raw.length > MAX) afresh = true;
    };
    var tick = function () {
      var url = "/jobs/" + id + ".json";
      if (!afresh) url += "?after=" + encodeURIComponent(end) + "&attempt=" + encodeURIComponent(attempt);
      afresh = false;
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
            var human = document.getElementById("job-log-human");
            var shown = human ? human.textContent : log.textContent;
            if (typeof j.log === "string") show(j.log, j.logHuman, j.logFramed);
            else if (j.logAppend) show(log.textContent + j.logAppend, shown + j.humanAppend, j.logFramed || !!human);
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
