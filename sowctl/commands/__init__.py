"""One module per command group: registration and thin functions only."""
