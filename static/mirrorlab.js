// Small page behaviours: auto-submitting selects (project switcher), confirmations, dismissible messages.
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll(".messages .message").forEach(function (message) {
    var close = document.createElement("button");
    close.type = "button";
    close.className = "message-close";
    close.setAttribute("aria-label", "Dismiss");
    close.textContent = "×";
    close.addEventListener("click", function () { message.remove(); });
    message.appendChild(close);
  });
  document.querySelectorAll("form[data-autosubmit]").forEach(function (form) {
    var button = form.querySelector("button[type=submit]");
    if (button) { button.hidden = true; }
    form.querySelectorAll("select").forEach(function (select) {
      select.addEventListener("change", function () { form.submit(); });
    });
  });
  document.querySelectorAll("form[data-confirm]").forEach(function (form) {
    form.addEventListener("submit", function (event) {
      if (!window.confirm(form.dataset.confirm)) { event.preventDefault(); }
    });
  });
});
