// The run page's live parts: figure 5 (accuracy and response length versus iteration, with the accuracy of
// evaluated checkpoints per benchmark), figures 6/8 (run_trends.js), and the status refresh; the checkpoint and
// evaluation sections follow (run_sections.js, once more when the run ends). No page reloads.
(function () {
  "use strict";
  var POLL_MILLISECONDS = 5000;
  var ACCURACY_COLOR = "#2563eb";
  var LENGTH_COLOR = "#d97706";
  var BENCHMARK_COLORS = ["#059669", "#7c3aed", "#db2777", "#0891b2", "#65a30d", "#9333ea", "#ea580c"];

  function benchmarkTraces(benchmarks) {
    return Object.keys(benchmarks).map(function (name, index) {
      var points = benchmarks[name];
      return { x: points.iteration, y: points.score, name: name + " (evaluation)", mode: "lines+markers",
               line: { color: BENCHMARK_COLORS[index % BENCHMARK_COLORS.length], width: 1.5, dash: "dash" },
               marker: { size: 6, symbol: "diamond" }, yaxis: "y" };
    });
  }

  function traces(series, benchmarks) {
    return [
      { x: series.iteration, y: series.train_accuracy, name: "training accuracy", mode: "lines+markers",
        line: { color: ACCURACY_COLOR, width: 2 }, marker: { size: 4 }, yaxis: "y" },
      { x: series.iteration, y: series.mean_response_length, name: "mean response length", mode: "lines",
        line: { color: LENGTH_COLOR, width: 2 }, yaxis: "y2" },
      { x: series.iteration, y: series.p95_response_length, name: "95th-percentile length (band)", mode: "lines",
        line: { color: LENGTH_COLOR, width: 0.5, dash: "dot" }, fill: "tonexty",
        fillcolor: "rgba(217, 119, 6, 0.15)", yaxis: "y2" },
    ].concat(benchmarkTraces(benchmarks));
  }

  // The top margin holds the modebar (shown on hover) above the plot; the right axis picks its own round ticks
  // (an overlaying axis defaults to tickmode "sync", which copies the left axis's ticks: 53.9, 107.8, ...).
  var layout = {
    margin: { t: 36, r: 70, b: 50, l: 70 },
    hovermode: "x unified",
    legend: { orientation: "h", y: -0.2 },
    xaxis: { title: { text: "iteration" }, zeroline: false },
    yaxis: { title: { text: "accuracy" }, range: [0, 1.05], tickformat: ".0%", color: ACCURACY_COLOR },
    yaxis2: { title: { text: "response length (tokens)" }, overlaying: "y", side: "right", rangemode: "tozero",
              tickmode: "auto", nticks: 6, automargin: true, color: LENGTH_COLOR, showgrid: false },
  };

  function draw(chart, series, benchmarks) {
    if (!series.iteration.length && !Object.keys(benchmarks).length) { return; }
    var empty = chart.querySelector(".chart-empty");
    if (empty) { empty.remove(); }
    window.MirrorlabCharts.draw(chart, traces(series, benchmarks), layout);
  }

  function drawTrends(benchmarks) {
    var container = document.getElementById("run-trends");
    if (container && window.MirrorlabRunTrends) {
      window.MirrorlabRunTrends.draw(container, document.querySelector("[data-field='trend-rows']"), benchmarks);
    }
  }

  function field(name) {
    return document.querySelector("[data-field='" + name + "']");
  }

  function setText(name, text) {
    var element = field(name);
    if (element) { element.textContent = text; }
  }

  function setHidden(element, hidden) {
    if (element) { element.hidden = hidden; }
  }

  // Once the run's status differs from the one the page was loaded with, flash messages ("Run … is queued.")
  // are stale: fade them out, then remove them.
  function fadeMessages() {
    document.querySelectorAll(".messages .message").forEach(function (message) {
      message.classList.add("fading");
      window.setTimeout(function () { message.remove(); }, 600);
    });
  }

  function showFacts(status) {
    setText("started_at", status.started_at);
    setText("finished_at", status.finished_at);
    setText("worker", status.worker);
    setText("heartbeat_ago", status.heartbeat_ago);
    setHidden(field("heartbeat-box"), !status.heartbeat_ago);
    if (window.MirrorlabRunMetrics) {
      window.MirrorlabRunMetrics.show(field("metric-rows"), field("metrics-more"), status.metric_rows,
                                      status.metric_count);
    }
  }

  function showStatus(status) {
    var percent = Math.round(status.progress * 100);
    setText("current_iteration", status.current_iteration);
    setText("total_iterations", status.total_iterations);
    setText("progress", percent + "%");
    setText("eta", status.eta);
    setText("warmup", status.warmup || "");
    setHidden(field("warmup"), !status.warmup);
    var bar = field("progress-bar");
    if (bar) { bar.style.width = percent + "%"; }
    document.querySelectorAll("[data-status-badge]").forEach(function (badge) {
      badge.textContent = status.status_label;
      badge.className = "status status-" + status.status;
    });
    setText("log", status.log_tail || "(empty)");
    setText("error", status.error);
    setText("traceback", status.traceback);
    setHidden(field("error-box"), !status.error);
    setHidden(field("traceback-box"), !status.traceback);
    setText("queued-hint", status.queued_hint || "");
    setHidden(field("queued-hint"), !status.queued_hint);
    setHidden(field("cancel-notice"), !status.cancel_requested || status.is_terminal);
    setHidden(document.querySelector("form[data-action='cancel']"), status.is_terminal);
    setHidden(document.querySelector("form[data-action='resume']"), !status.is_resumable);
  }

  function poll(state, chart) {
    fetch(state.dataset.statusUrl, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (response) {
        if (!response.ok) { throw new Error("status request failed: " + response.status); }
        return response.json();
      })
      .then(function (status) {
        showStatus(status);
        showFacts(status);
        if (status.status !== state.dataset.loadedStatus) { fadeMessages(); }
        draw(chart, status.metrics, status.benchmarks);
        drawTrends(status.benchmarks);
        if (window.MirrorlabRunSections) { window.MirrorlabRunSections.refresh(state, status); }
        if (status.is_live) {  // running, or its checkpoints' evaluations still are
          window.setTimeout(function () { poll(state, chart); }, status.is_terminal ? POLL_MILLISECONDS * 3
                                                                                   : POLL_MILLISECONDS);
        }
      })
      .catch(function (error) {
        console.warn(error);
        window.setTimeout(function () { poll(state, chart); }, POLL_MILLISECONDS * 3);
      });
  }

  function embedded(id, fallback) {
    var element = document.getElementById(id);
    return element ? JSON.parse(element.textContent) : fallback;
  }

  document.addEventListener("DOMContentLoaded", function () {
    var chart = document.getElementById("run-chart");
    if (!chart || !window.Plotly) { return; }
    var benchmarks = embedded("run-benchmark-data", {});
    draw(chart, embedded("run-chart-data", { iteration: [] }), benchmarks);
    drawTrends(benchmarks);
    var state = document.getElementById("run-state");
    if (state && state.dataset.terminal === "false") {
      window.setTimeout(function () { poll(state, chart); }, POLL_MILLISECONDS);
    }
  });
})();
