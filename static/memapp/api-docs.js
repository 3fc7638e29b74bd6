// Redoc on /api/docs/: the schema URL and options come from data attributes (no inline script).
(function () {
  var container = document.getElementById("redoc-container");
  Redoc.init(container.dataset.schemaUrl, JSON.parse(container.dataset.settings || "{}"), container);
})();
