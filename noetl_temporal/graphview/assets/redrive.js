// The execution page's redrive parts (graphview/redrive.py, docs/operations.md): the
// Redrive button of a FAILED or CANCELLED execution, and on a redrive's page the steps it
// reused and reran, kept up to date from the events live.js dispatches ("noetl:event").
(function () {
  "use strict";
  var config = JSON.parse(document.getElementById("noetl-redrive").textContent);
  var control = document.getElementById("redrive-control");
  var button = document.getElementById("redrive-button");
  var message = document.getElementById("redrive-message");
  // The token the page was opened with: sent as a header, carried to the pages it links.
  var token = new URLSearchParams(window.location.search).get("access_token");
  var order = {};
  config.steps.forEach(function (name, i) { order[name] = i; });
  var reused = config.reused.slice(), rerun = config.rerun.slice();

  function withToken(href) {
    return token ? href + (href.indexOf("?") < 0 ? "?" : "&") + "access_token=" + encodeURIComponent(token) : href;
  }
  document.querySelectorAll("a.execution-link").forEach(function (a) {
    a.setAttribute("href", withToken(a.getAttribute("href")));
  });

  function markReused(name) {
    var g = document.querySelector('g.step[data-step="' + CSS.escape(name) + '"]');
    if (!g) return;
    g.setAttribute("data-reused", "true");
    var text = g.querySelector("text.state");
    if (text) text.textContent = "reused";
  }
  reused.forEach(markReused);

  function show(list, id) {
    list.sort(function (a, b) { return (order[a] || 0) - (order[b] || 0); });
    var el = document.getElementById(id);
    if (el) el.textContent = list.length ? list.join(", ") : "none";
  }

  document.addEventListener("noetl:event", function (e) {
    var ev = e.detail, name = ev.entity_id || "";
    if (ev.event_type === "playbook.finished" || ev.event_type === "execution.cancelled") {
      control.hidden = config.redrivable.indexOf(document.getElementById("execution-state").textContent) < 0;
    }
    if (!config.redrive || (ev.event_type !== "step.done" && ev.event_type !== "step.failed")) return;
    if ((ev.payload || {}).reused) {
      if (reused.indexOf(name) < 0) reused.push(name);
      markReused(name);
      show(reused, "reused-steps");
    } else if (rerun.indexOf(name) < 0) {
      rerun.push(name);
      show(rerun, "rerun-steps");
    }
  });

  button.addEventListener("click", function () {
    var from = document.getElementById("redrive-from").value;
    var headers = {"Content-Type": "application/json"};
    if (token) headers.Authorization = "Bearer " + token;
    button.disabled = true;
    message.textContent = "starting the redrive…";
    fetch("redrive", {method: "POST", headers: headers, body: JSON.stringify(from ? {from_step: from} : {})})
      .then(function (response) {
        return response.json().catch(function () { return {}; }).then(function (body) {
          if (response.status !== 201) {
            var detail = typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail || response.statusText);
            throw new Error("the redrive was refused (HTTP " + response.status + "): " + detail);
          }
          message.textContent = "started " + body.execution_id;
          window.location.assign(withToken("../" + encodeURIComponent(body.execution_id) + "/view"));
        });
      })
      .catch(function (err) {
        button.disabled = false;
        message.textContent = err.message || String(err);
      });
  });
})();
