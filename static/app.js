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
    };
    var tick = function () {
      var url = "/jobs/" + id + ".json?after=" + encodeURIComponent(end) + "&attempt=" + encodeURIComponent(attempt);
      fetch(url, { headers: { Accept: "application/json" } })
        .then(function (r) { return r.json(); })
        .then(function (j) {
          if (j.terminal) { window.location.reload(); return; }
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
