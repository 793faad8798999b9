// The compare page: one chart per training metric and per benchmark, every chosen run or variant overlaid.
(function () {
  "use strict";
  var ACCURACY_METRICS = { train_accuracy: true };

  function baseLayout(xLabel, yLabel, isFraction) {
    var yaxis = { title: { text: yLabel }, rangemode: "tozero" };
    if (isFraction) { yaxis.tickformat = ".0%"; }
    return {
      margin: { t: 10, r: 20, b: 50, l: 70 },
      hovermode: "closest",
      legend: { orientation: "h", y: -0.25 },
      xaxis: { title: { text: xLabel }, zeroline: false },
      yaxis: yaxis,
      paper_bgcolor: "rgba(0,0,0,0)",
      plot_bgcolor: "rgba(0,0,0,0)",
    };
  }

  function addChart(container, title, traces, layout) {
    var card = document.createElement("section");
    card.className = "card";
    var heading = document.createElement("h2");
    heading.textContent = title;
    var chart = document.createElement("div");
    chart.className = "chart";
    card.appendChild(heading);
    card.appendChild(chart);
    container.appendChild(card);
    window.Plotly.newPlot(chart, traces, layout, { responsive: true, displaylogo: false });
  }

  function metricTraces(chart, smoothing) {
    return chart.series.map(function (series) {
      return { x: series.x, y: series.y, customdata: series.raw, name: series.label, mode: "lines",
               hovertemplate: smoothing > 0 ? "%{y:.4g} (raw %{customdata:.4g})" : "%{y:.4g}" };
    });
  }

  function xRange(chart) {
    var all = [];
    chart.series.forEach(function (series) { all = all.concat(series.x); });
    return all.length ? [Math.min.apply(null, all), Math.max.apply(null, all)] : [0, 1];
  }

  function benchmarkTraces(chart) {
    var range = xRange(chart);
    var traces = [];
    chart.series.forEach(function (series) {
      if (series.x.length) {
        traces.push({ x: series.x, y: series.y, name: series.label, mode: "lines+markers" });
      }
      if (series.level !== null) {  // a score without an x position: a horizontal reference line
        traces.push({ x: range, y: [series.level, series.level], name: series.label, mode: "lines",
                      line: { dash: "dash" } });
      }
    });
    return traces;
  }

  document.addEventListener("DOMContentLoaded", function () {
    var container = document.getElementById("compare-charts");
    var source = document.getElementById("compare-data");
    if (!container || !source || !window.Plotly) { return; }
    var data = JSON.parse(source.textContent);
    data.metrics.forEach(function (chart) {
      var title = chart.label + (data.smoothing > 0 ? " (smoothed " + data.smoothing + ")" : "");
      addChart(container, title, metricTraces(chart, data.smoothing),
               baseLayout(data.x_label, chart.label, ACCURACY_METRICS[chart.metric]));
    });
    data.benchmarks.forEach(function (chart) {
      addChart(container, chart.benchmark + ": accuracy of evaluated checkpoints", benchmarkTraces(chart),
               baseLayout(data.x_label, "accuracy", true));
    });
  });
})();
