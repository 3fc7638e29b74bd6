// A "Copy" button after each element marked data-copy. Without JavaScript there is no button and
// the text stays selectable, so nothing is lost.
document.addEventListener("DOMContentLoaded", () => {
  for (const source of document.querySelectorAll("[data-copy]")) {
    const button = document.createElement("button");
    button.type = "button";
    button.className = "secondary copy";
    button.textContent = "Copy";
    button.setAttribute("aria-label", "Copy " + (source.dataset.copy || "this"));
    button.addEventListener("click", async () => {
      try {
        await navigator.clipboard.writeText(source.textContent.trim());
        button.textContent = "Copied";
      } catch {
        window.getSelection().selectAllChildren(source);
        button.textContent = "Selected: press Ctrl+C";
      }
    });
    source.after(button);
  }
});
