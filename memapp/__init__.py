"""memhub: the Django project (settings, URLs, WSGI) and its layers, bottom up: `memdir` (the
memory core, no Django), `client` (memhub-agent, no Django), `stores` (models, mirror, writes),
then `web` (pages) and `api`; `bench` holds the benchmarks. See docs/design.md §19."""
