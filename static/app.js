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
    var tick = function () {
      fetch("/jobs/" + id + ".json", { headers: { Accept: "application/json" } })
        .then(function (r) { return r.json(); })
        .then(function (j) {
          if (j.terminal) { window.location.reload(); return; }
          var bar = document.getElementById("job-progress");
          if (bar) bar.value = j.percent;
          var d = document.getElementById("job-detail");
          if (d) d.textContent = j.detail;
          var st = document.getElementById("job-state");
          if (st) st.textContent = j.state;
          var log = document.getElementById("job-log");
          if (log && log.textContent !== j.log) { log.textContent = j.log; log.scrollTop = log.scrollHeight; }
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
