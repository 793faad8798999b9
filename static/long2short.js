// The long2short dashboard: per benchmark, accuracy versus mean response tokens of the parent and its variants.
(function () {
  "use strict";
  var PARENT_COLOR = "#6b7280";

  // Asymmetric error bars from a [low, high] interval around the value (none without one).
  function errorBars(value, interval) {
    if (!interval) { return { visible: false }; }
    return { type: "data", symmetric: false, visible: true, thickness: 1.2,
             array: [Math.max(0, interval[1] - value)], arrayminus: [Math.max(0, value - interval[0])] };
  }

  function pick(points, field) {
    return points.map(function (point) { return point[field]; });
  }

  function traces(chart, parentName) {
    var parent = {
      x: pick(chart.parent, "tokens"), y: pick(chart.parent, "score"), text: pick(chart.parent, "label"),
      name: parentName + " (long-CoT checkpoints)", mode: "lines+markers",
      line: { color: PARENT_COLOR, dash: "dot" }, marker: { color: PARENT_COLOR, size: 7 },
      hovertemplate: "%{text}<br>%{y:.1%} at %{x:.0f} tokens<extra></extra>",
    };
    var variants = chart.variants.map(function (point) {
      return { x: [point.tokens], y: [point.score], text: [point.label], name: point.label,
               mode: "markers+text", textposition: "top center", marker: { size: 11 },
               // 95% paired intervals of the change against the parent checkpoint, drawn around the point
               error_y: errorBars(point.score, point.score_interval),
               error_x: errorBars(point.tokens, point.tokens_interval),
               hovertemplate: "%{text}<br>%{y:.1%} at %{x:.0f} tokens<extra></extra>" };
    });
    return [parent].concat(variants);
  }

  var layout = {
    margin: { t: 36, r: 20, b: 50, l: 70 },  // room above the plot for the modebar (shown on hover)
    hovermode: "closest",
    showlegend: true,
    legend: { orientation: "h", y: -0.25 },
    xaxis: { title: { text: "mean response tokens" }, rangemode: "tozero" },
  };

  document.addEventListener("DOMContentLoaded", function () {
    var container = document.getElementById("long2short-charts");
    var source = document.getElementById("long2short-data");
    if (!container || !source || !window.Plotly || !window.MirrorlabCharts) { return; }
    var data = JSON.parse(source.textContent);
    data.charts.forEach(function (chart) {
      var scores = pick(chart.parent, "score").concat(pick(chart.variants, "score"));
      var own = Object.assign({}, layout, { yaxis: window.MirrorlabCharts.valueAxis("accuracy", scores, true) });
      window.MirrorlabCharts.draw(window.MirrorlabCharts.card(container, chart.benchmark),
                                  traces(chart, data.parent.name), own);
    });
  });
})();
