"""Team sync: push and pull team memory through a shared git repository."""
