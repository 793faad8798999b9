// The evaluation page: per benchmark, accuracy of the samples in each response-length bin, with the bin's count.
(function () {
  "use strict";

  function traces(curve) {
    var width = curve.bin_tokens;
    var centers = curve.bins.map(function (bin) { return bin.bin_start + width / 2; });
    var ranges = curve.bins.map(function (bin) { return bin.bin_start + "–" + (bin.bin_start + width - 1); });
    return [
      { type: "bar", x: centers, y: curve.bins.map(function (bin) { return bin.accuracy; }), width: width * 0.9,
        name: "accuracy", marker: { color: "#2563eb" }, customdata: ranges,
        text: curve.bins.map(function (bin) { return bin.samples; }),
        hovertext: curve.bins.map(function (bin) {
          return bin.truncated ? "<br>" + bin.truncated + " cut off at max tokens" : "";
        }),
        hovertemplate: "%{customdata} tokens<br>accuracy %{y:.1%} of %{text} samples%{hovertext}<extra></extra>" },
      { type: "scatter", mode: "lines+markers", x: centers, y: curve.bins.map(function (bin) { return bin.samples; }),
        name: "samples", yaxis: "y2", line: { color: "#9ca3af", dash: "dot" }, marker: { size: 5 },
        hovertemplate: "%{y} samples<extra></extra>" },
    ];
  }

  var layout = {
    margin: { t: 36, r: 60, b: 50, l: 70 },
    hovermode: "closest",
    showlegend: true,
    legend: { orientation: "h", y: -0.25 },
    xaxis: { title: { text: "response tokens" }, rangemode: "tozero" },
    yaxis: { title: { text: "accuracy" }, tickformat: ".0%", range: [0, 1], automargin: true },
    // its own round ticks: an overlaying axis copies the left one's by default (2.13, 22.6, 113.1 samples)
    yaxis2: { title: { text: "samples" }, overlaying: "y", side: "right", rangemode: "tozero", showgrid: false,
              tickmode: "auto", nticks: 6, tickformat: "d" },
  };

  document.addEventListener("DOMContentLoaded", function () {
    var container = document.getElementById("length-curves");
    var source = document.getElementById("length-curve-data");
    if (!container || !source || !window.Plotly || !window.MirrorlabCharts) { return; }
    JSON.parse(source.textContent).forEach(function (curve) {
      var caption = curve.benchmark + " (bins of " + curve.bin_tokens + (curve.bin_tokens === 1 ? " token)" : " tokens)");
      var most = Math.max.apply(null, curve.bins.map(function (bin) { return bin.samples; }).concat([1]));
      // counts: whole ticks only (a span of up to 10 samples gets one at every count)
      var counts = Object.assign({}, layout.yaxis2, most <= 10 ? { tickmode: "linear", tick0: 0, dtick: 1 } : {});
      window.MirrorlabCharts.draw(window.MirrorlabCharts.figure(container, caption), traces(curve),
                                  Object.assign({}, layout, { yaxis2: counts }));
    });
  });
})();
