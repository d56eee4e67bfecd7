// The execution page's live layer: follow the SSE event stream and mark the steps of
// the server-drawn SVG. Config comes from the JSON block #noetl-config (state table,
// words, stream URL), so the rules live in Python (graphview/states.py), not here.
(function () {
  "use strict";
  var config = JSON.parse(document.getElementById("noetl-config").textContent);
  var steps = {};
  document.querySelectorAll("g.step").forEach(function (g) { steps[g.getAttribute("data-step")] = g; });
  var loops = {};  // step -> {total, done}
  var banner = document.getElementById("execution-state");
  var counter = document.getElementById("event-count");
  var seen = 0;

  function stateOf(type, status) {
    for (var i = 0; i < config.states.length; i++) {
      var row = config.states[i];
      if (row[0] === type && (row[1] === "*" || row[1] === status)) return row[2];
    }
    return null;
  }

  function stepOf(ev) {
    var id = ev.entity_id || "";
    return ev.event_type === "next.evaluated" && id.indexOf("step:") === 0 ? id.slice(5) : id;
  }

  // The overview of a big playbook (no boxes): counts by state and who runs or failed.
  var overview = document.getElementById("overview");
  var known = {}, counts = {}, pending = false;
  if (overview) {
    config.steps.forEach(function (name) { known[name] = "idle"; });
    counts.idle = config.steps.length;
  }

  function count(name, state) {
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
    if (overview) count(name, state);
    var g = steps[name];
    if (!g) return;
    g.setAttribute("data-state", state);
    g.querySelector("text.state").textContent = config.words[state] || state;
  }

  function progress(name) {
    var g = steps[name], loop = loops[name];
    if (g && loop) g.querySelector("text.progress").textContent = loop.done + "/" + loop.total;
  }

  function apply(ev) {
    seen += 1;
    counter.textContent = String(seen);
    var type = ev.event_type, name = stepOf(ev);
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
    var state = stateOf(type, ev.status);
    if (state) mark(name, state);
  }

  function finish(state) {
    banner.textContent = state;
    banner.setAttribute("data-state", state);
  }

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
