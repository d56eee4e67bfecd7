// The per-step controls of the execution page (graphview/step_offers.py): post each control
// to steps/{step}/{control}, relative to the page, with the token the page was opened with
// (as a header, like redrive.js), and show what the API says: the workflow validator's
// refusal as written, or the step's new state. A step that ends (the events live.js
// dispatches, "noetl:event") offers nothing more.
(function () {
  "use strict";
  var token = new URLSearchParams(window.location.search).get("access_token");

  function refusal(detail) {
    if (typeof detail === "string") return detail;
    if (Array.isArray(detail)) {   // the request's own validation (422 from the API's models)
      return detail.map(function (d) { return (d.loc || []).slice(1).join(".") + ": " + d.msg; }).join("; ");
    }
    return JSON.stringify(detail);
  }

  function body(block, form) {
    var out = {}, reason = block.querySelector(".control-reason").value;
    if (reason !== "") out.reason = reason;
    if (block.hasAttribute("data-iteration")) out.iteration = parseInt(block.getAttribute("data-iteration"), 10);
    var control = form.getAttribute("data-control");
    if (control === "skip") {
      var raw = form.querySelector("[name=result]").value.trim();
      if (raw !== "") {
        try { out.result = JSON.parse(raw); } catch (e) { throw new Error("the result is not JSON: " + e.message); }
      }
    } else if (control === "retry-policy") {
      ["attempts", "delay"].forEach(function (name) {
        var raw = form.querySelector("[name=" + name + "]").value;
        if (raw !== "") out[name] = Number(raw);
      });
    } else if (control === "pause" || control === "resume") {
      delete out.iteration;   // a step-level hold
    }
    return out;
  }

  function show(block, control, data) {
    var state = block.querySelector(".control-state");
    if (control === "skip") {
      block.setAttribute("data-state", "skipped");
      state.textContent = "skipped by " + data.by + ": " + data.reason;
      block.querySelectorAll("button, input").forEach(function (el) { el.disabled = true; });
      return "skipped by " + data.by;
    }
    if (control === "pause" || control === "resume") {
      var paused = control === "pause";
      block.setAttribute("data-state", paused ? "paused" : "running");
      state.textContent = paused ? "paused" : "running";
      block.querySelector("[data-control=pause]").hidden = paused;
      block.querySelector("[data-control=resume]").hidden = !paused;
      return (paused ? "paused" : "resumed") + "; paused steps: " + (data.paused_steps.join(", ") || "none");
    }
    if (control === "retry-now") {
      var form = block.querySelector("[data-control=retry-now]");
      if (form) form.hidden = true;   // its task no longer waits out a backoff
      return "retrying now: the backoff was skipped (by " + data.by + ")";
    }
    return "retry policy changed (by " + data.by + "): at most " + data.attempts + " attempts, " +
      data.delay + " s apart";
  }

  document.querySelectorAll(".step-control").forEach(function (block) {
    var status = block.querySelector(".control-status");
    block.querySelectorAll("form.control").forEach(function (form) {
      form.addEventListener("submit", function (e) {
        e.preventDefault();
        var control = form.getAttribute("data-control"), payload;
        try { payload = body(block, form); } catch (err) {
          status.textContent = err.message;
          block.setAttribute("data-outcome", "refused");
          return;
        }
        var url = "steps/" + encodeURIComponent(block.getAttribute("data-step")) + "/" + control;
        var headers = {"content-type": "application/json"};
        if (token) headers.Authorization = "Bearer " + token;
        status.textContent = "sending…";
        block.setAttribute("data-outcome", "sending");
        fetch(url, {method: "POST", headers: headers, body: JSON.stringify(payload)})
          .then(function (r) { return r.json().then(function (data) { return [r.status, data]; }); })
          .then(function (res) {
            if (res[0] === 200) {
              status.textContent = show(block, control, res[1]);
              block.setAttribute("data-outcome", control);
            } else {
              status.textContent = refusal(res[1].detail);
              block.setAttribute("data-outcome", "refused");
            }
          })
          .catch(function (err) { status.textContent = String(err); block.setAttribute("data-outcome", "refused"); });
      });
    });
  });

  // A step that ended has nothing left to control: its block says how it ended.
  document.addEventListener("noetl:event", function (e) {
    var ev = e.detail, type = ev.event_type;
    if (type !== "step.done" && type !== "step.failed") return;
    var ended = ((ev.payload || {}).meta || {}).step_status || (type === "step.done" ? "COMPLETED" : "FAILED");
    document.querySelectorAll(".step-control").forEach(function (block) {
      if (block.getAttribute("data-step") !== ev.entity_id || block.getAttribute("data-ended")) return;
      block.setAttribute("data-ended", ended);
      var state = block.querySelector(".control-state");
      if (block.getAttribute("data-state") !== "skipped") state.textContent = "ended " + ended;
      else state.textContent += " (ended " + ended + ")";
      block.querySelectorAll("button, input").forEach(function (el) { el.disabled = true; });
    });
  });
})();
