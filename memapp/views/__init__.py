"""Pages of the review UI, one module per area. Views stay thin: access rules live in
`memapp.access`, writes in `memapp.actions`, queries on the models' managers."""
