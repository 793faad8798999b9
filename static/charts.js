// What every dashboard chart shares: a transparent background, a light modebar shown on hover, Plotly's options,
// and a titled card to draw in. Loaded after Plotly and before the page's own chart script.
window.MirrorlabCharts = (function () {
  "use strict";
  var CONFIG = { responsive: true, displaylogo: false, displayModeBar: "hover" };
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

  return { layout: layout, draw: draw, card: card, figure: figure };
})();
