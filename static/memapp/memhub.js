// Behaviour every page may use, kept out of the HTML so the Content-Security-Policy can refuse
// inline script. Pages work without it: a select marked data-autosubmit has a submit button.
document.addEventListener("change", (event) => {
  const field = event.target;
  if (field instanceof HTMLSelectElement && field.hasAttribute("data-autosubmit") && field.form) {
    field.form.requestSubmit();
  }
});
// Escape closes an open "More" menu (or the phone's Menu) and puts focus back on its summary,
// as a menu button does; without script the summary still closes it.
document.addEventListener("keydown", (event) => {
  if (event.key !== "Escape") return;
  const open = [...document.querySelectorAll(".nav-more details[open], .site-menu[open]")];
  const menu = open.find((d) => d.contains(document.activeElement)) || open[0];
  if (!menu) return;
  menu.open = false;
  menu.querySelector("summary").focus();
});
