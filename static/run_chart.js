// The run page's chart (accuracy and response length versus iteration) and its periodic refresh.
(function () {
  "use strict";
  var POLL_MILLISECONDS = 5000;
  var ACCURACY_COLOR = "#2563eb";
  var LENGTH_COLOR = "#d97706";

  function traces(series) {
    return [
      { x: series.iteration, y: series.train_accuracy, name: "training accuracy", mode: "lines+markers",
        line: { color: ACCURACY_COLOR, width: 2 }, marker: { size: 4 }, yaxis: "y" },
      { x: series.iteration, y: series.mean_response_length, name: "mean response length", mode: "lines",
        line: { color: LENGTH_COLOR, width: 2 }, yaxis: "y2" },
      { x: series.iteration, y: series.p95_response_length, name: "95th-percentile length (band)", mode: "lines",
        line: { color: LENGTH_COLOR, width: 0.5, dash: "dot" }, fill: "tonexty",
        fillcolor: "rgba(217, 119, 6, 0.15)", yaxis: "y2" },
    ];
  }

  var layout = {
    margin: { t: 10, r: 70, b: 50, l: 70 },
    hovermode: "x unified",
    legend: { orientation: "h", y: -0.2 },
    xaxis: { title: { text: "iteration" }, zeroline: false },
    yaxis: { title: { text: "training accuracy" }, range: [0, 1], tickformat: ".0%", color: ACCURACY_COLOR },
    yaxis2: { title: { text: "response length (tokens)" }, overlaying: "y", side: "right", rangemode: "tozero",
              color: LENGTH_COLOR, showgrid: false },
    paper_bgcolor: "rgba(0,0,0,0)",
    plot_bgcolor: "rgba(0,0,0,0)",
  };

  function draw(chart, series) {
    if (!series.iteration.length) { return; }
    var empty = chart.querySelector(".chart-empty");
    if (empty) { empty.remove(); }
    window.Plotly.react(chart, traces(series), layout, { responsive: true, displaylogo: false });
  }

  function setText(state, field, text) {
    var element = state.querySelector("[data-field='" + field + "']");
    if (element) { element.textContent = text; }
  }

  function showStatus(state, status) {
    var percent = Math.round(status.progress * 100);
    setText(state, "current_iteration", status.current_iteration);
    setText(state, "total_iterations", status.total_iterations);
    setText(state, "progress", percent + "%");
    var bar = state.querySelector("[data-field='progress-bar']");
    if (bar) { bar.style.width = percent + "%"; }
    document.querySelectorAll("[data-status-badge]").forEach(function (badge) {
      badge.textContent = status.status_label;
      badge.className = "status status-" + status.status;
    });
    var log = document.querySelector("[data-field='log']");
    if (log) { log.textContent = status.log_tail || "(empty)"; }
  }

  function poll(state, chart) {
    fetch(state.dataset.statusUrl, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (response) {
        if (!response.ok) { throw new Error("status request failed: " + response.status); }
        return response.json();
      })
      .then(function (status) {
        showStatus(state, status);
        draw(chart, status.metrics);
        if (status.is_terminal) {
          window.location.reload();  // the final state: error, traceback, metrics table, no cancel button
        } else {
          window.setTimeout(function () { poll(state, chart); }, POLL_MILLISECONDS);
        }
      })
      .catch(function (error) {
        console.warn(error);
        window.setTimeout(function () { poll(state, chart); }, POLL_MILLISECONDS * 3);
      });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var chart = document.getElementById("run-chart");
    var data = document.getElementById("run-chart-data");
    if (!chart || !data || !window.Plotly) { return; }
    draw(chart, JSON.parse(data.textContent));
    var state = document.getElementById("run-state");
    if (state && state.dataset.terminal === "false") {
      window.setTimeout(function () { poll(state, chart); }, POLL_MILLISECONDS);
    }
  });
})();
