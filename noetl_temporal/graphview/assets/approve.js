// The answer forms of the execution page (graphview/approval_form.py): post each form's
// answer to steps/{step}/answer, relative to the page, with the page's access token, and
// show what the API says (the workflow validator's refusal as written, or who answered).
(function () {
  "use strict";
  var config = JSON.parse(document.getElementById("noetl-config").textContent);
  function value(input) {
    var raw = input.value, type = input.getAttribute("data-type");
    if (raw === "") return undefined;   // not answered: a required field is the validator's to refuse
    if (type === "boolean") return raw === "true";
    if (type === "integer") return /^-?\d+$/.test(raw) ? parseInt(raw, 10) : raw;
    if (type === "number") return isNaN(Number(raw)) ? raw : Number(raw);
    return raw;
  }
  document.querySelectorAll("form.approval").forEach(function (form) {
    form.addEventListener("submit", function (e) {
      e.preventDefault();
      var status = form.querySelector(".answer-status");
      var body = {values: {}};
      form.querySelectorAll("[data-type]").forEach(function (input) {
        var v = value(input);
        if (v === undefined) return;
        if (input.getAttribute("data-type") === "reason") body.reason = v; else body.values[input.name] = v;
      });
      if (form.hasAttribute("data-iteration")) body.iteration = parseInt(form.getAttribute("data-iteration"), 10);
      var url = "steps/" + encodeURIComponent(form.getAttribute("data-step")) + "/answer";
      if (config.access_token) url += "?access_token=" + encodeURIComponent(config.access_token);
      status.textContent = "sending…";
      form.setAttribute("data-answer", "sending");
      fetch(url, {method: "POST", headers: {"content-type": "application/json"}, body: JSON.stringify(body)})
        .then(function (r) { return r.json().then(function (data) { return [r.status, data]; }); })
        .then(function (res) {
          if (res[0] === 200) {
            status.textContent = "answered by " + res[1].by;
            form.setAttribute("data-answer", "accepted");
            form.querySelectorAll("button, input, select").forEach(function (el) { el.disabled = true; });
          } else {
            var detail = res[1].detail;
            status.textContent = typeof detail === "string" ? detail : JSON.stringify(detail);
            form.setAttribute("data-answer", "refused");
          }
        })
        .catch(function (err) { status.textContent = String(err); form.setAttribute("data-answer", "refused"); });
    });
  });
})();
