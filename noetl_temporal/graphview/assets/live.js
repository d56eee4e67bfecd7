// The execution page's live layer: follow the SSE event stream from the event after the
// last one the server drew, and mark the steps of the server-drawn SVG. Config comes from
// the JSON block #noetl-config (event rules, the API-state -> picture map, words, stream
// URL), so the rules live in Python (graphview/states.py, step_state), not here.
(function () {
  "use strict";
  var config = JSON.parse(document.getElementById("noetl-config").textContent);
  var steps = {};
  document.querySelectorAll("g.step").forEach(function (g) { steps[g.getAttribute("data-step")] = g; });
  // step -> {total, done}: the loops the server counted (started before the page opened),
  // then counted on from the stream, which starts after the last event the server read
  var loops = {};
  Object.keys(config.loops || {}).forEach(function (name) {
    loops[name] = {done: config.loops[name][0], total: config.loops[name][1]};
  });
  var applied = config.after_seq || 0;  // the newest event counted: never count one twice
  var banner = document.getElementById("execution-state");
  var counter = document.getElementById("event-count");
  var count = config.event_count || 0;  // the execution's event count: the last seq seen

  // The state (the API's words) an event puts its step in: graphview/states.py step_state.
  function stepState(ev, name) {
    var payload = ev.payload || {};
    for (var i = 0; i < config.events.length; i++) {
      var row = config.events[i];
      if (row[0] !== ev.event_type || (row[1] !== "*" && row[1] !== ev.status)) continue;
      if (row[0] === "step.failed" || row[0] === "step.done") return (payload.meta || {}).step_status || row[2];
      var g = steps[name];
      var discards = g && g.getAttribute("data-discards") === "true";
      if (row[2] === "DENIED" && (discards || String(payload.reason || "").indexOf(config.stopping) === 0)) {
        return "SKIPPED";
      }
      return row[2];
    }
    return null;
  }

  // The overview of a big playbook (no boxes): counts by state and who runs or failed.
  var overview = document.getElementById("overview");
  var known = {}, counts = {}, pending = false;
  if (overview) {
    config.steps.forEach(function (name) {   // as the server drew it (first paint)
      var state = config.painted[name] || "idle";
      known[name] = state;
      counts[state] = (counts[state] || 0) + 1;
    });
  }

  function tally(name, state) {
    var before = known[name];
    if (before === undefined || before === state) return;
    known[name] = state;
    counts[before] -= 1;
    counts[state] = (counts[state] || 0) + 1;
    if (!pending) { pending = true; setTimeout(redraw, 200); }  // at most 5 redraws a second
  }

  function listed(state) {
    var names = [];
    for (var name in known) if (known[name] === state) names.push(name);
    if (!names.length) return "none";
    var shown = names.slice(0, config.listed).join(", ");
    return names.length > config.listed ? shown + " and " + (names.length - config.listed) + " more" : shown;
  }

  function redraw() {
    pending = false;
    overview.querySelectorAll("td.count").forEach(function (td) {
      td.textContent = String(counts[td.getAttribute("data-state")] || 0);
    });
    document.getElementById("list-running").textContent = listed("running");
    document.getElementById("list-failed").textContent = listed("failed");
  }

  function mark(name, state) {
    var g = steps[name], picture = config.picture[state];
    if (!picture) return;
    if (overview) tally(name, picture);
    if (!g) return;
    g.setAttribute("data-state", picture);
    g.querySelector("text.state").textContent = config.words[picture] || picture;
  }

  function progress(name) {
    var g = steps[name], loop = loops[name];
    if (g && loop) g.querySelector("text.progress").textContent = loop.done + "/" + loop.total;
  }

  function apply(ev) {
    if (ev.seq) {
      if (ev.seq <= applied) return;  // already drawn by the server or seen on this stream
      applied = ev.seq;
    }
    count = Math.max(count, ev.seq || 0);
    counter.textContent = String(count);
    var type = ev.event_type, name = ev.entity_id || "";
    if (type === "loop.started") {
      var meta = (ev.payload && ev.payload.meta) || {};
      loops[name] = {total: meta.count || 0, done: 0};
      progress(name);
    } else if (type === "loop.iteration.done" || type === "loop.iteration.failed") {
      if (loops[name]) { loops[name].done += 1; progress(name); }
    } else if (type === "playbook.finished") {
      var status = ((ev.payload || {}).meta || {}).status;
      finish(status || (ev.status === "success" ? "COMPLETED" : "FAILED"));
    } else if (type === "execution.cancelled") {
      finish("CANCELLED");
    }
    var state = stepState(ev, name);
    if (state) mark(name, state);
    // for the page's other parts (redrive.js): one stream per page, drawn here first
    document.dispatchEvent(new CustomEvent("noetl:event", {detail: ev}));
  }

  function finish(state) {
    banner.textContent = state;
    banner.setAttribute("data-state", state);
  }

  if (!config.stream) return;  // a finished execution: the server's drawing is final
  var source = new EventSource(config.stream);
  function onEvent(msg) {
    try { apply(JSON.parse(msg.data)); } catch (err) { console.error(err); }
  }
  config.types.forEach(function (type) { source.addEventListener(type, onEvent); });
  source.addEventListener("end", function () {
    source.close();  // the server ends the stream after the terminal event: do not reconnect
    if (overview) redraw();  // the last counts now, not after the throttle's delay
    document.body.setAttribute("data-stream", "ended");
  });
  source.addEventListener("error", function (msg) {
    if (msg.data) {  // an error the server reported in the stream (not a dropped connection)
      source.close();
      document.body.setAttribute("data-stream", "error");
      document.getElementById("stream-error").textContent = JSON.parse(msg.data).detail || "stream error";
    }
  });
  source.addEventListener("open", function () { document.body.setAttribute("data-stream", "open"); });
})();
