// The compare page: one chart per training metric and per benchmark, every chosen run or variant overlaid.
(function () {
  "use strict";
  var ACCURACY_METRICS = { train_accuracy: true };
  var FEW_INTEGERS = 10;  // an x span (iterations or tokens) up to this gets a tick at every integer

  // Iterations and tokens are counts: ticks on integers only (Plotly would put 1.5, 2.5 on a short span).
  function xAxis(xLabel, traces) {
    var axis = { title: { text: xLabel }, zeroline: false, tickformat: "d" };
    var xs = window.MirrorlabCharts.finite([].concat.apply([], traces.map(function (trace) { return trace.x; })));
    if (xs.length && Math.max.apply(null, xs) - Math.min.apply(null, xs) <= FEW_INTEGERS) {
      axis.tickmode = "linear";
      axis.tick0 = 0;
      axis.dtick = 1;
    }
    return axis;
  }

  function yAxis(yLabel, isFraction, traces) {
    var ys = [].concat.apply([], traces.map(function (trace) { return trace.y; }));
    return window.MirrorlabCharts.valueAxis(yLabel, ys, isFraction);
  }

  function baseLayout(xLabel, yLabel, isFraction, traces) {
    return {
      margin: { t: 36, r: 20, b: 50, l: 70 },
      hovermode: "closest",
      legend: { orientation: "h", y: -0.25 },
      xaxis: xAxis(xLabel, traces),
      yaxis: yAxis(yLabel, isFraction, traces),
    };
  }

  function addChart(container, title, traces, layout) {
    window.MirrorlabCharts.draw(window.MirrorlabCharts.card(container, title), traces, layout);
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

  // Each score's 95% bootstrap interval as asymmetric error bars (none where a result has no interval).
  function intervalBars(values, lows, highs) {
    if (!lows || lows.every(function (low) { return low === null; })) { return { visible: false }; }
    return { type: "data", symmetric: false, visible: true, thickness: 1.2,
             array: values.map(function (value, index) { return highs[index] === null ? 0 : highs[index] - value; }),
             arrayminus: values.map(function (value, index) { return lows[index] === null ? 0 : value - lows[index]; }) };
  }

  function benchmarkTraces(chart) {
    var range = xRange(chart);
    var traces = [];
    chart.series.forEach(function (series) {
      if (series.x.length) {
        traces.push({ x: series.x, y: series.y, name: series.label, mode: "lines+markers",
                      error_y: intervalBars(series.y, series.low, series.high) });
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
    if (!container || !source || !window.Plotly || !window.MirrorlabCharts) { return; }
    var data = JSON.parse(source.textContent);
    data.metrics.forEach(function (chart) {
      var title = chart.label + (data.smoothing > 0 ? " (smoothed " + data.smoothing + ")" : "");
      var traces = metricTraces(chart, data.smoothing);
      addChart(container, title, traces, baseLayout(data.x_label, chart.label, ACCURACY_METRICS[chart.metric], traces));
    });
    data.benchmarks.forEach(function (chart) {
      var traces = benchmarkTraces(chart);
      addChart(container, chart.benchmark + ": accuracy of evaluated checkpoints", traces,
               baseLayout(data.x_label, "accuracy", true, traces));
    });
  });
})();
