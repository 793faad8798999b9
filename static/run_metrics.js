// The run page's metrics table, redrawn from the status JSON's newest rows (webapp/pages/run_data.py) while the
// page shows the table's first page; cells are formatted like the server's template (percent, floatformat).
(function () {
  "use strict";

  function fixed(value, digits) {
    return value === null || value === undefined ? "" : Number(value).toFixed(digits);
  }

  function percent(fraction) {
    return fraction === null || fraction === undefined ? "" : (fraction * 100).toFixed(1) + "%";
  }

  function scientific(value) {  // like the template's `scientific` filter: 2.1e-07
    if (value === null || value === undefined) { return ""; }
    var text = Number(value).toExponential(1);  // "2.1e-7"
    return text.replace(/e([+-])(\d)$/, "e$10$2");
  }

  // [field, text of its value], in the table's column order.
  var COLUMNS = [
    ["iteration", String],
    ["train_accuracy", percent],
    ["mean_response_length", function (v) { return fixed(v, 1); }],
    ["p95_response_length", function (v) { return fixed(v, 1); }],
    ["loss", function (v) { return fixed(v, 4); }],
    ["kl", function (v) { return fixed(v, 4); }],
    ["sampler_kl", scientific],
    ["tokens_generated", String],
    ["tokens_reused", String],
    ["groups_parked", function (v) { return fixed(v, 0); }],
    ["policy_version_span", function (v) { return fixed(v, 0); }],
    ["old_policy_token_share", percent],
    ["seconds", function (v) { return fixed(v, 1); }],
  ];

  function row(metric) {
    var tr = document.createElement("tr");
    COLUMNS.forEach(function (column) {
      var td = document.createElement("td");
      td.className = "num";
      td.textContent = column[1](metric[column[0]]);
      tr.appendChild(td);
    });
    return tr;
  }

  function emptyRow() {
    var tr = document.createElement("tr");
    var td = document.createElement("td");
    td.colSpan = COLUMNS.length;
    td.className = "empty";
    td.textContent = "No metrics yet.";
    tr.appendChild(td);
    return tr;
  }

  // Replace the rows of a live tbody (data-live="true": the first page) and show the "older rows" link
  // once the run has more rows than the page holds.
  function show(tbody, more, rows, total) {
    if (!tbody || tbody.dataset.live !== "true") { return; }
    tbody.replaceChildren.apply(tbody, rows.length ? rows.map(row) : [emptyRow()]);
    if (more) {
      var count = more.querySelector("[data-field='metric_count']");
      if (count) { count.textContent = total; }
      more.hidden = total <= rows.length;
    }
  }

  window.MirrorlabRunMetrics = { show: show, percent: percent, fixed: fixed };
})();
