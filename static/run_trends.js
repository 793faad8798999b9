// Figures 6 and 8 of the run page: per benchmark, accuracy versus mean response length across the run's
// evaluated checkpoints, with the least-squares trend line computed by the server (webapp/pages/run_charts.py).
(function () {
  "use strict";
  var POINT_COLOR = "#2563eb";
  var TREND_COLOR = "#dc2626";

  function slopeText(trend) {
    if (!trend) { return "—"; }
    var slope = trend.slope_per_1k_tokens;
    return (slope >= 0 ? "+" : "") + slope.toFixed(2);
  }

  function traces(points) {
    var result = [{
      x: points.mean_response_tokens, y: points.score, text: points.iteration.map(function (i) { return "iteration " + i; }),
      mode: "markers", name: "checkpoints",
      marker: { color: POINT_COLOR, size: 8 }, hovertemplate: "%{text}<br>%{x:.0f} tokens, %{y:.1%}<extra></extra>",
    }];
    var trend = points.trend;
    if (trend) {
      result.push({
        x: [trend.x_low, trend.x_high],
        y: [trend.intercept + trend.slope * trend.x_low, trend.intercept + trend.slope * trend.x_high],
        mode: "lines", name: "trend " + slopeText(trend) + " points / 1k tokens",
        line: { color: TREND_COLOR, dash: "dash", width: 2 }, hoverinfo: "skip",
      });
    }
    return result;
  }

  function layout(benchmark, points) {
    return {
      title: { text: benchmark + " · slope " + slopeText(points.trend) + " points / 1k tokens", font: { size: 13 } },
      margin: { t: 50, r: 20, b: 50, l: 60 }, showlegend: false,
      xaxis: { title: { text: "mean response length (tokens)" }, zeroline: false },
      yaxis: window.MirrorlabCharts.valueAxis("accuracy", points.score, true),
    };
  }

  function chartFor(container, benchmark) {
    var id = "run-trend-" + benchmark.replace(/[^A-Za-z0-9_-]/g, "_");
    var chart = document.getElementById(id);
    if (!chart) {
      chart = document.createElement("div");
      chart.id = id;
      chart.className = "chart trend-chart";
      container.appendChild(chart);
    }
    return chart;
  }

  function cell(text, className) {
    var td = document.createElement("td");
    if (className) { td.className = className; }
    td.textContent = text;
    return td;
  }

  function showRows(tbody, benchmarks) {
    var names = Object.keys(benchmarks);
    if (!tbody || !names.length) { return; }
    tbody.replaceChildren.apply(tbody, names.map(function (name) {
      var row = document.createElement("tr");
      var code = document.createElement("code");
      code.textContent = name;
      var first = document.createElement("td");
      first.appendChild(code);
      row.append(first, cell(benchmarks[name].score.length, "num"), cell(slopeText(benchmarks[name].trend), "num"));
      return row;
    }));
  }

  function draw(container, tbody, benchmarks) {
    showRows(tbody, benchmarks);
    Object.keys(benchmarks).forEach(function (name) {
      var points = benchmarks[name];
      window.MirrorlabCharts.draw(chartFor(container, name), traces(points), layout(name, points));
    });
  }

  window.MirrorlabRunTrends = { draw: draw, slopeText: slopeText };
})();
