// What every dashboard chart shares: a transparent background, a light modebar shown on hover, Plotly's options,
// and a titled card to draw in. Loaded after Plotly and before the page's own chart script.
window.MirrorlabCharts = (function () {
  "use strict";
  var CONFIG = { responsive: true, displaylogo: false, displayModeBar: "hover" };
  var HEADROOM = 0.05;  // of the y span, above the highest point, so it does not touch the top edge
  var SHARED_LAYOUT = {
    paper_bgcolor: "rgba(0,0,0,0)",
    plot_bgcolor: "rgba(0,0,0,0)",
    // The modebar's default background comes from the transparent paper: half-black, shown
    // even off hover. Light, it vanishes with its buttons.
    modebar: { bgcolor: "rgba(255, 255, 255, 0.8)", color: "#9ca3af", activecolor: "#1f2937" },
  };

  // A chart's own layout on top of the shared one.
  function layout(own) {
    return Object.assign({}, SHARED_LAYOUT, own);
  }

  function finite(values) {
    return values.filter(function (value) { return typeof value === "number" && isFinite(value); });
  }

  // A y axis from zero (or the lowest negative value) to the highest of `values` plus headroom; fractions are
  // percentages that stop at 105%, with a decimal when the axis tops below 10% (else ticks read 0%, 1%, 1%, 2%).
  // All zero: up to 100% (fractions) or 1, never Plotly's -1..1 around a flat line.
  function valueAxis(title, values, isFraction) {
    var axis = { title: { text: title }, rangemode: "tozero", automargin: true };
    var ys = finite(values);
    var low = ys.length ? Math.min(0, Math.min.apply(null, ys)) : 0;
    var high = ys.length ? Math.max.apply(null, ys) : 0;
    if (high <= low) { high = isFraction ? 1 : low + 1; }
    var pad = (high - low) * HEADROOM;
    axis.range = [low < 0 ? low - pad : 0, isFraction ? Math.min(high + pad, 1 + HEADROOM) : high + pad];
    if (isFraction) { axis.tickformat = axis.range[1] < 0.1 ? ".1%" : ".0%"; }
    return axis;
  }

  // Draws (or redraws in place) `traces` with the chart's own layout.
  function draw(plot, traces, ownLayout) {
    window.Plotly.react(plot, traces, layout(ownLayout), CONFIG);
  }

  // A new chart area under a heading, appended to `container`: `wrapper` and `heading` name their tags
  // (a card section with an h2, or a figure with a figcaption). Returns the area to draw in.
  function titledChart(container, title, wrapper, heading, wrapperClass) {
    var box = document.createElement(wrapper);
    if (wrapperClass) { box.className = wrapperClass; }
    var label = document.createElement(heading);
    label.textContent = title;
    var plot = document.createElement("div");
    plot.className = "chart";
    box.appendChild(label);
    box.appendChild(plot);
    container.appendChild(box);
    return plot;
  }

  // A card (section with an h2) holding one chart.
  function card(container, title) {
    return titledChart(container, title, "section", "h2", "card");
  }

  // A figure with its caption holding one chart.
  function figure(container, caption) {
    return titledChart(container, caption, "figure", "figcaption", "");
  }

  return { layout: layout, draw: draw, card: card, figure: figure, valueAxis: valueAxis, finite: finite };
})();
