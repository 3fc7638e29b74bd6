// Behaviour every page may use, kept out of the HTML so the Content-Security-Policy can refuse
// inline script. Pages work without it: a select marked data-autosubmit has a submit button.
document.addEventListener("change", (event) => {
  const field = event.target;
  if (field instanceof HTMLSelectElement && field.hasAttribute("data-autosubmit") && field.form) {
    field.form.requestSubmit();
  }
});
