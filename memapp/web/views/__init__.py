"""Pages of the review UI, one module per area. Views stay thin: access rules live in
`memapp.stores.access`, writes in `memapp.stores.actions`, queries on the models' managers."""
