// The run page's "Checkpoints" and "Evaluations of its checkpoints" sections, kept current while the run page
// polls its status (webapp/pages/run_data.py): when the status's `sections_key` (counts of checkpoints saved and
// removed, of evaluations queued, active and running) differs from the one the sections were drawn with, and once
// more when the run ends (its last poll), the two sections are fetched again as the server renders them (the
// page's own HTML) and swapped in; the rest of the page stays as it is (no reload).
(function () {
  "use strict";
  var SECTION_IDS = ["run-checkpoints", "run-evaluations"];
  var RETRY_MILLISECONDS = 15000;
  var newestRequest = 0;  // a slow response to an older request never replaces a newer one's sections

  function swapSections(html) {
    var fresh = new DOMParser().parseFromString(html, "text/html");
    SECTION_IDS.forEach(function (id) {
      var current = document.getElementById(id);
      var replacement = fresh.getElementById(id);
      if (current && replacement) { current.replaceWith(document.importNode(replacement, true)); }
    });
  }

  // state: the #run-state element (data-sections-key); status: the polled JSON.
  function refresh(state, status) {
    var changed = status.sections_key && status.sections_key !== state.dataset.sectionsKey;
    if (!changed && !status.is_terminal) { return; }
    var key = status.sections_key;
    var request = ++newestRequest;
    state.dataset.sectionsKey = key;
    fetch(window.location.href, { headers: { Accept: "text/html" }, credentials: "same-origin" })
      .then(function (response) {
        if (!response.ok) { throw new Error("run page request failed: " + response.status); }
        return response.text();
      })
      .then(function (html) { if (request === newestRequest) { swapSections(html); } })
      .catch(function (error) {
        console.warn(error);
        if (state.dataset.sectionsKey === key) { state.dataset.sectionsKey = ""; }  // again at the next poll
        if (!status.is_live) {  // no next poll: retry on its own
          window.setTimeout(function () { refresh(state, status); }, RETRY_MILLISECONDS);
        }
      });
  }

  window.MirrorlabRunSections = { refresh: refresh };
})();
