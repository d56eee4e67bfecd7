// The per-step controls of the execution page (graphview/step_offers.py): post each control
// to steps/{step}/{control}, relative to the page, with the token the page was opened with
// (as a header, like redrive.js), and show what the API says: the workflow validator's
// refusal as written, or the step's new state. A step that ends (the events live.js
// dispatches, "noetl:event") offers nothing more.
//
// The controls stay true while the page is open: when the stream shows a step move (start,
// end, skip, pause, retry), and every few seconds while the execution runs (a task's attempt
// fails and its backoff begins without an event: the events come when the task ends), the
// page asks steps/controls again and shows what applies now, building the block of a step
// that started since from the section's <template>. Bounded: requests are coalesced (one
// in flight, at most one a second), so a 10,000-event run asks no more often than a quiet one.
(function () {
  "use strict";
  var section = document.getElementById("step-controls");
  if (!section) return;
  var token = new URLSearchParams(window.location.search).get("access_token");
  var template = document.getElementById("step-control-template");
  var MOVES = ["step.started", "step.done", "step.failed", "step.skipped", "step.paused", "step.resumed",
               "step.retry.now", "step.retry.policy", "loop.iteration.done", "loop.iteration.failed"];
  var DEBOUNCE_MS = 250, MIN_GAP_MS = 1000, POLL_MS = 5000;

  function headers(extra) {
    var out = extra || {};
    if (token) out.Authorization = "Bearer " + token;
    return out;
  }

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
      block.querySelector("[data-control=retry-now]").hidden = true;   // its task no longer waits out a backoff
      block.querySelector(".control-retrying").hidden = true;
      return "retrying now: the backoff was skipped (by " + data.by + ")";
    }
    return "retry policy changed (by " + data.by + "): at most " + data.attempts + " attempts, " +
      data.delay + " s apart";
  }

  // One listener for every block, those built later included.
  section.addEventListener("submit", function (e) {
    var form = e.target, block = form.closest(".step-control");
    if (!block || !form.classList.contains("control")) return;
    e.preventDefault();
    var status = block.querySelector(".control-status");
    var control = form.getAttribute("data-control"), payload;
    try { payload = body(block, form); } catch (err) {
      status.textContent = err.message;
      block.setAttribute("data-outcome", "refused");
      return;
    }
    var url = "steps/" + encodeURIComponent(block.getAttribute("data-step")) + "/" + control;
    status.textContent = "sending…";
    block.setAttribute("data-outcome", "sending");
    fetch(url, {method: "POST", headers: headers({"content-type": "application/json"}), body: JSON.stringify(payload)})
      .then(function (r) { return r.json().then(function (data) { return [r.status, data]; }); })
      .then(function (res) {
        if (res[0] === 200) {
          status.textContent = show(block, control, res[1]);
          block.setAttribute("data-outcome", control);
        } else {
          status.textContent = refusal(res[1].detail);
          block.setAttribute("data-outcome", "refused");
        }
        ask();   // what applies after it
      })
      .catch(function (err) { status.textContent = String(err); block.setAttribute("data-outcome", "refused"); });
  });

  // ---------------------------------------------------------------- keeping them true

  function keyOf(step, iteration) { return step + "#" + (iteration === null || iteration === undefined ? "" : iteration); }

  function blockKey(block) {
    var it = block.getAttribute("data-iteration");
    return keyOf(block.getAttribute("data-step"), it === null ? null : parseInt(it, 10));
  }

  function build(offer) {
    var block = template.content.firstElementChild.cloneNode(true);
    block.setAttribute("data-step", offer.step);
    block.querySelector(".control-step").textContent = offer.step;
    if (offer.iteration !== null && offer.iteration !== undefined) {
      block.setAttribute("data-iteration", String(offer.iteration));
      block.querySelector(".control-where").textContent = " (iteration " + offer.iteration + ")";
    }
    section.insertBefore(block, template);
    return block;
  }

  function retryingText(wait) {   // engine/progress.py retrying_text
    return "retrying: attempt " + wait.attempt + " waits until " + wait.until +
      (wait.last_error ? " (last error: " + wait.last_error + ")" : "");
  }

  function update(block, offer) {
    var controls = offer.controls || [];
    block.querySelectorAll("form.control").forEach(function (form) {
      form.hidden = controls.indexOf(form.getAttribute("data-control")) < 0;
    });
    var paused = !!offer.paused;
    block.setAttribute("data-state", paused ? "paused" : "running");
    block.querySelector(".control-state").textContent = paused ? "paused" : "running";
    var note = block.querySelector(".control-retrying");
    note.hidden = !offer.retrying;
    note.textContent = offer.retrying ? retryingText(offer.retrying) : "";
  }

  function settled(block) {   // an answer shown, or the step's end: left as it says
    return block.getAttribute("data-ended") || block.getAttribute("data-state") === "skipped" ||
      block.getAttribute("data-outcome") === "sending";
  }

  function apply(data) {
    if (data && data.state && data.state !== "RUNNING") running = false;   // closed (terminated too): ask no more
    if (!data || !data.answered) return;   // no worker answered: keep what is shown, ask again later
    var offers = {};
    (data.steps || []).forEach(function (offer) {
      if ((offer.controls || []).length) offers[keyOf(offer.step, offer.iteration)] = offer;
    });
    section.querySelectorAll(".step-control").forEach(function (block) {
      if (block.parentNode !== section) return;   // (the template's own)
      var key = blockKey(block), offer = offers[key];
      delete offers[key];
      if (offer && block.getAttribute("data-ended")) {   // the step runs again (a cycle): a fresh block
        update(build(offer), offer);
        block.remove();
      } else if (offer && block.getAttribute("data-outcome") !== "sending") {
        update(block, offer);
      } else if (!offer && !settled(block)) {
        block.remove();   // nothing applies now (it ended between two answers, or sits between tasks)
      }
    });
    Object.keys(offers).forEach(function (key) { update(build(offers[key]), offers[key]); });
  }

  var timer = null, inflight = false, again = false, last = 0, poll = null, running = true;

  function ask() {   // coalesced: at most one request in flight, and one a second
    if (!running) return;
    if (inflight) { again = true; return; }
    if (timer) return;
    timer = setTimeout(fetchOffers, Math.max(DEBOUNCE_MS, last + MIN_GAP_MS - Date.now()));
  }

  function fetchOffers() {
    timer = null;
    inflight = true;
    last = Date.now();
    fetch("steps/controls", {headers: headers()})
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(apply)
      .catch(function (err) { console.error(err); })
      .then(function () {
        inflight = false;
        section.setAttribute("data-asked", String((parseInt(section.getAttribute("data-asked") || "0", 10)) + 1));
        if (again) { again = false; ask(); }
        schedulePoll();
      });
  }

  function schedulePoll() {
    if (poll) clearTimeout(poll);
    poll = running ? setTimeout(function () { poll = null; ask(); }, POLL_MS) : null;
  }

  // A step that ended has nothing left to control: its block says how it ended.
  document.addEventListener("noetl:event", function (e) {
    var ev = e.detail, type = ev.event_type;
    if (type === "playbook.finished" || type === "execution.cancelled") {
      running = false;   // a finished execution takes no control: ask no more
      if (poll) clearTimeout(poll);
      return;
    }
    if (MOVES.indexOf(type) >= 0) ask();
    if (type !== "step.done" && type !== "step.failed") return;
    var ended = ((ev.payload || {}).meta || {}).step_status || (type === "step.done" ? "COMPLETED" : "FAILED");
    section.querySelectorAll(".step-control").forEach(function (block) {
      if (block.getAttribute("data-step") !== ev.entity_id || block.getAttribute("data-ended")) return;
      block.setAttribute("data-ended", ended);
      var state = block.querySelector(".control-state");
      if (block.getAttribute("data-state") !== "skipped") state.textContent = "ended " + ended;
      else state.textContent += " (ended " + ended + ")";
      block.querySelectorAll("button, input").forEach(function (el) { el.disabled = true; });
      block.querySelectorAll("form.control").forEach(function (form) { form.hidden = true; });
      block.querySelector(".control-retrying").hidden = true;
    });
  });
  schedulePoll();
})();
